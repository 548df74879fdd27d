"""The start target (seed 004 §4.3): which app is in front when the runtime starts, and when the
user names one.

Theory of operation
-------------------
The order, the first that opens wins:

    1. explicit   the app the user named: the Shell's deep link `#open=<app_scope>`, which
                  comes as `focus.ui.open` (`StartTargets.open`, at any time)
    2. restore    the instance that was in front, if it can be restored safely
    3. default    the user's default app (the `default_app` setting)
    4. recovery   `chat`, which is always there and never fails to be

Rules 2–4 are applied once, when focus starts (`StartTargets.at_start`, after it recovered the
instances and the stack). "Safely" means without starting anything: after focus alone
restarted, the MiniApp processes kept running and the instance in front is still up, so it stays
in front, whatever it is (the user sees no change). After the runtime restarted no MiniApp
process runs: the instance that was in front is suspended and keeps its tab, and only the user
(its tab) or a call resumes it, since starting it unasked could replay what it was doing when
the runtime stopped (seed 004 §4.4). Then the default app is opened; one that cannot be (not
installed, disabled, incompatible, its process does not start) leaves `chat` in front, as does
no default. An explicit target that arrives while the default is still to be opened wins: the
default is not opened then.

Opening an app, for an explicit target or the default, brings its topmost live instance
forward (resuming it if it is suspended), or with none launches a new instance in front; then
its app is told (`miniapp.ui.event` of kind `app.opened`), since no tool call may come to show
it (an app's handling of it must be idempotent: the same instance may be opened again).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, Literal

import trio

from lineup.actors.kernel import LineUpError, Message
from lineup.facts.scopes import CHAT
from lineup.sdk import protocol as sdk

from .messages import InstanceReply

__all__ = ["StartTarget", "StartTargets", "start_targets"]

log = logging.getLogger("lineup.focus")

START_TARGET_TIMEOUT: Final = 60.0  # opening the default app at start: its process starts

TargetKind = Literal["explicit", "restore", "default", "recovery"]


@dataclass(frozen=True)
class StartTarget:
    kind: TargetKind
    app_scope: str
    instance_id: str | None = None  # for `restore`: the instance that stays in front


def start_targets(
    *,
    explicit: str | None,
    focus_restarted: bool,
    front: tuple[str, str] | None,
    default: str | None,
    recovery: str,
) -> tuple[StartTarget, ...]:
    """The targets to try, in the order of the module docstring; the last is always the
    recovery app. `front` is the (instance, app) in front after focus recovered, if it is up;
    only a focus restarted alone (`focus_restarted`) restores it, and the recovery app in front
    after a runtime restart is not a restored instance (the default comes first)."""
    targets: list[StartTarget] = []
    if explicit is not None:
        targets.append(StartTarget("explicit", explicit))
    if focus_restarted and front is not None:
        targets.append(StartTarget("restore", front[1], front[0]))
    if default is not None and default != recovery:
        targets.append(StartTarget("default", default))
    targets.append(StartTarget("recovery", recovery))
    return tuple(targets)


class StartTargets:
    """Opens apps for the user and applies the start target. Focus's state stays focus's: this
    reaches it only through the callables it is given."""

    def __init__(
        self,
        *,
        topmost: Callable[[str], str | None],
        require_enabled: Callable[[str], None],
        foreground: Callable[[str], Awaitable[InstanceReply]],
        launch: Callable[[str, str], Awaitable[InstanceReply]],
        tell_app: Callable[[str, Message], None],
    ) -> None:
        # The recovery app: the chat, whose one instance is named after it.
        self._recovery_scope = CHAT
        self._recovery_instance = CHAT
        self._topmost = topmost  # an app's topmost live instance, if any
        self._require_enabled = require_enabled  # raises the registry's refusal
        self._foreground = foreground  # bring (or resume) an instance to the front
        self._launch = launch  # (app_scope, call_id): a new instance in front, started
        self._tell_app = tell_app
        self._explicit = False  # the user named an app since focus started

    async def open(self, app_scope: str, *, explicit: bool = True) -> InstanceReply:
        """Bring `app_scope` to the front: its topmost live instance, else a new one. Raises
        the registry's refusal (`app_not_installed`, `app_disabled`, …) or
        `activation_failed`; what is in front then stays as it was."""
        if explicit:
            self._explicit = True
        if app_scope == self._recovery_scope:
            return await self._foreground(self._recovery_instance)
        self._require_enabled(app_scope)
        instance_id = self._topmost(app_scope)
        if instance_id is not None:
            reply = await self._foreground(instance_id)
        else:
            reply = await self._launch(app_scope, f"open-{secrets.token_hex(8)}")
        # Told every time: a new instance has no call that would show it, and one resumed in
        # a new process may have none either (the app shows what its session data holds).
        self._tell_app(
            app_scope,
            sdk.UiEvent(instance_id=reply.instance_id, event={"kind": sdk.UI_APP_OPENED}),
        )
        return reply

    async def at_start(
        self,
        *,
        focus_restarted: bool,
        front: tuple[str, str] | None,
        default: Callable[[], Awaitable[str | None]],
    ) -> StartTarget:
        """Apply rules 2–4 (an explicit target comes through `open`); returns the target in
        front. Never raises for a target that fails: the next one is tried, and the recovery
        app needs nothing (focus put it in front when it recovered; a default that fails to
        start leaves the stack as it was, with it in front)."""
        chosen: str | None = None
        if not (focus_restarted and front is not None):
            try:
                chosen = await default()
            except LineUpError as exc:
                log.warning("focus.default_app_unread code=%s", exc.code.value)
        targets = start_targets(
            explicit=None,
            focus_restarted=focus_restarted,
            front=front,
            default=chosen,
            recovery=self._recovery_scope,
        )
        for target in targets:
            if target.kind in ("restore", "recovery"):
                return target  # in front already
            if self._explicit:
                return StartTarget("explicit", "")  # the user's choice came first
            try:
                with trio.fail_after(START_TARGET_TIMEOUT):
                    reply = await self.open(target.app_scope, explicit=False)
            except (LineUpError, trio.TooSlowError) as exc:
                code = exc.code.value if isinstance(exc, LineUpError) else "deadline_exceeded"
                log.warning(
                    "focus.start_target_failed kind=%s app=%s code=%s",
                    target.kind,
                    target.app_scope,
                    code,
                )
                continue
            log.info("focus.start_target kind=%s app=%s", target.kind, target.app_scope)
            return StartTarget(target.kind, target.app_scope, reply.instance_id)
        raise AssertionError("start_targets always ends with the recovery app")
