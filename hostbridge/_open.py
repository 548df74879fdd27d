"""The Shell's deep link: `ui.open` → focus's `focus.ui.open` (seed 004 §4.3, the explicit
start target). A refusal is a Shell notice that names its code; what is in front stays."""

from __future__ import annotations

from typing import Final

from lineup.actors.focus.messages import InstanceReply, UiOpenRequest
from lineup.actors.kernel import Bus, LineUpError

from ._audit import user_record
from ._server import ShellHub
from .shell_protocol import ShellNotice, UiOpenFrame

__all__ = ["OPEN_TIMEOUT", "open_app"]

# Opening an app may start its process (focus's START_TIMEOUT is 20 s).
OPEN_TIMEOUT: Final = 30.0


async def open_app(bus: Bus, hub: ShellHub, frame: UiOpenFrame) -> None:
    """Ask focus to open `frame.app_scope`, the user's action audited (its kind and the app);
    a refusal is a notice to every Shell that says why it could not be done."""
    bus.audit(user_record("ui.open", None, code=None, subject_id=frame.app_scope))
    try:
        await bus.request(
            "focus",
            UiOpenRequest(app_scope=frame.app_scope),
            expect=InstanceReply,
            timeout=OPEN_TIMEOUT,
            retry=True,
        )
    except LineUpError as exc:
        hub.broadcast(
            ShellNotice(level="error", text="That app could not be opened.", code=exc.code.value)
        )
