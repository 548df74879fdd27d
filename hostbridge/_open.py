"""The Shell's deep link: `ui.open` → focus's `focus.ui.open` (seed 004 §4.3, the explicit
start target). A refusal is a Shell notice that names its code; what is in front stays."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from lineup.actors.focus.messages import InstanceReply, UiOpenRequest
from lineup.actors.kernel import Bus, LineUpError

from .shell_protocol import UiOpenFrame

__all__ = ["OPEN_TIMEOUT", "open_app"]

# Opening an app may start its process (focus's START_TIMEOUT is 20 s).
OPEN_TIMEOUT: Final = 30.0


async def open_app(
    bus: Bus,
    frame: UiOpenFrame,
    *,
    audit: Callable[..., None],
    notice: Callable[[str], None],
) -> None:
    """Ask focus to open `frame.app_scope`; `audit` records the user's action (its kind and
    the app, as the hostbridge's `_audit_user`), `notice(text)` tells every Shell why it
    could not be done."""
    audit("ui.open", None, subject_id=frame.app_scope)
    try:
        await bus.request(
            "focus",
            UiOpenRequest(app_scope=frame.app_scope),
            expect=InstanceReply,
            timeout=OPEN_TIMEOUT,
            retry=True,
        )
    except LineUpError as exc:
        notice(f"That app could not be opened ({exc.code.value}).")
