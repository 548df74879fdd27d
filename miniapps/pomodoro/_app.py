"""Pomodoro: a focus period of N minutes, as a tool call whose end the runtime owns.

`pomodoro.focus` (handling `launch`, in front) opens an instance and starts a runtime deadline
operation for the call (`app.operations.start`): the runtime writes the call's `started`
progress once the instance is in front and the operation exists, and at `ends_at` it submits
the call's one result itself — also after a restart of the whole runtime in the middle of the
period. This app never completes a focus call (the runtime refuses it if it tried).
`pomodoro.interrupt` (handling `direct`, `activation_not_required`: never held for a launch)
is the Agent's word of the user's interruption, and the card's Interrupt button the user's own
(a `card.action`): each passed on to the runtime (`app.operations.interrupt`), which ends the
focus call `cancelled_by_user` — one whose instance is still starting, too.

What the view shows (the period's length, its end, its state) is the instance's session data,
the app's display state only: the deadline, the interruption and the result are the
runtime's. The view is the Shell's generic card with a countdown to the period's end: the Shell
redraws the time left and the share gone once a second itself, so a running period is one
render (and one session data write) at its start and one at its end, never one per second
through the store. A focus call interrupted before its operation existed (the user's word came
while its instance was still launching) shows so in its instance, as does one whose period
could not start in front, never an empty view.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lineup.sdk import (
    CARD_ACTION,
    AppContext,
    AppInfo,
    ErrorCode,
    LineUpError,
    MiniApp,
    ToolCall,
    card,
    tool,
)
from lineup.sdk import protocol as p

__all__ = ["FOCUS", "INTERRUPT", "Pomodoro"]

log = logging.getLogger("lineup.pomodoro")

FOCUS: Final = "pomodoro.focus"
INTERRUPT: Final = "pomodoro.interrupt"
MAX_MINUTES: Final = 180
# The focus call's own deadline: longer than any period, so the runtime's operation ends it.
FOCUS_TIMEOUT_MS: Final = (MAX_MINUTES + 10) * 60 * 1000
STOP: Final = "interrupt"  # the card's button while a period runs
NOT_STARTED: Final = "Interrupted before it started"
_SHOWN: Final = {"running": "Focusing", "completed": "Done", "interrupted": "Interrupted",
                 "abandoned": "Stopped"}  # fmt: skip


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FocusInput(_Model):
    minutes: float = Field(ge=0.01, le=MAX_MINUTES)
    label: str | None = Field(default=None, min_length=1, max_length=80)


class FocusOutput(_Model):
    status: Literal["completed"]
    minutes: float = Field(ge=0.01, le=MAX_MINUTES)


class InterruptInput(_Model):
    pass


class InterruptOutput(_Model):
    interrupted: int = Field(ge=0, le=500)


class Pomodoro(MiniApp):
    app_info = AppInfo(app_scope="pomodoro", title="Pomodoro", version="1.0.0",
                       kind="bundled-reference")  # fmt: skip

    def __init__(self) -> None:
        self.periods: dict[str, dict[str, Any]] = {}  # instance_id -> its period, as shown
        self.revisions: dict[str, int] = {}  # instance_id -> session data revision we wrote
        self.starting: dict[str, str] = {}  # call_id -> instance_id: its period not started yet

    async def start(self, app: AppContext) -> None:
        self.app = app

    @tool(
        FOCUS,
        handling="launch",
        input=FocusInput,
        output=FocusOutput,
        requires_foreground=True,
        timeout_ms=FOCUS_TIMEOUT_MS,
        description="Start a focus period of `minutes` in front of the user. The result "
        "comes when the period is over; an interruption ends it cancelled_by_user.",
    )
    async def focus(self, call: ToolCall[FocusInput]) -> FocusOutput | None:
        minutes = call.input.minutes
        result = FocusOutput(status="completed", minutes=minutes).model_dump(mode="json")
        # A repeat (this process restarted and was handed the call again) answers the
        # operation already running: its `ends_at` is the first one, not a new one.
        self.starting[call.call_id] = call.instance_id
        try:
            op = await self.app.operations.start(call.call_id, time.time() + minutes * 60, result)
        except LineUpError as exc:
            if exc.code is ErrorCode.CALL_ALREADY_FINAL:
                # Interrupted while it was still starting: the runtime ended it.
                if self.starting.pop(call.call_id, None) is not None:
                    await self._not_started(call.instance_id, NOT_STARTED)
                return None
            if exc.code is ErrorCode.FOREGROUND_REQUIRED:
                self.starting.pop(call.call_id, None)
                await call.fail(exc.code.value, "the period starts only in front")
                await self._not_started(call.instance_id, "Not started: it starts only in front")
                return None
            self.starting.pop(call.call_id, None)
            raise
        self.starting.pop(call.call_id, None)
        period = {
            "call_id": call.call_id, "minutes": minutes, "label": call.input.label or "Focus",
            "ends_at": op.ends_at, "started_at": op.ends_at - minutes * 60, "state": op.state,
        }  # fmt: skip
        await self._show(call.instance_id, period)
        return None  # the runtime ends it: at `ends_at`, or at the user's interruption

    @tool(
        INTERRUPT,
        handling="direct",
        activation="activation_not_required",
        input=InterruptInput,
        output=InterruptOutput,
        timeout_ms=30_000,
        description="The user interrupts the focus period (also one still starting).",
    )
    async def interrupt(self, call: ToolCall[InterruptInput]) -> InterruptOutput:
        ended = await self.app.operations.interrupt(tool=FOCUS)
        return InterruptOutput(interrupted=len(ended))

    async def on_ui_event(self, event: p.UiEvent) -> None:
        """The user pressed the card's Interrupt: the runtime ends that period's call."""
        if event.event.get("kind") != CARD_ACTION or event.event.get("action") != STOP:
            return
        period = await self._period(event.instance_id)
        if period is None:
            return
        if period.get("state") != "running":
            await self._render(event.instance_id)  # a stale press: redraw what is
            return
        await self.app.operations.interrupt(str(period["call_id"]))

    async def on_operation_ended(self, operation: p.OperationInfo) -> None:
        period = await self._period(operation.instance_id)
        if period is None or period["call_id"] != operation.call_id:
            return
        await self._show(operation.instance_id, {**period, "state": operation.state})

    async def on_tool_cancelled(self, call_id: str, code: str) -> None:
        starting = self.starting.pop(call_id, None)
        if starting is not None:
            # Ended before its period started (the user's interruption came right behind it,
            # and stopped this handler): nothing will run in its instance.
            await self._not_started(starting, NOT_STARTED)
            return
        for instance_id, period in list(self.periods.items()):
            if period["call_id"] == call_id and period["state"] == "running":
                state = "interrupted" if code == ErrorCode.CANCELLED_BY_USER.value else "abandoned"
                await self._show(instance_id, {**period, "state": state})

    async def on_view_refresh(self) -> None:
        for instance_id in list(self.periods):
            await self._render(instance_id)

    async def _not_started(self, instance_id: str, why: str) -> None:
        """No period will run in this instance (launched for one that never started): it says
        so, rather than stay empty in front of the user. Not closed here: the interruption's
        own call may still be running in it, and a close would cancel that one too."""
        try:
            await self.app.ui.render(instance_id, card(title="Focus", text=why))
        except LineUpError as exc:  # gone meanwhile: nothing to show it in
            log.info("pomodoro.not_shown code=%s", exc.code.value)

    async def _period(self, instance_id: str) -> dict[str, Any] | None:
        if instance_id not in self.periods:
            try:
                stored = await self.app.session_data.get(instance_id)
            except LineUpError as exc:
                if exc.code is ErrorCode.APP_INSTANCE_NOT_FOUND:
                    return None
                raise
            self.revisions[instance_id] = stored.revision
            if not isinstance(stored.data, dict) or "call_id" not in stored.data:
                return None
            self.periods[instance_id] = dict(stored.data)
        return self.periods[instance_id]

    async def _show(self, instance_id: str, period: dict[str, Any]) -> None:
        """Keep the period as the instance's display state, then draw it."""
        await self._period(instance_id)  # the stored revision, after a restart
        self.periods[instance_id] = period
        for attempt in range(2):
            try:
                self.revisions[instance_id] = await self.app.session_data.replace(
                    instance_id, dict(period), self.revisions.get(instance_id, 0)
                )
                break
            except LineUpError as exc:
                if exc.code is not ErrorCode.STALE_REVISION or attempt == 1:
                    raise
                self.revisions[instance_id] = (
                    await self.app.session_data.get(instance_id)
                ).revision
        await self._render(instance_id)

    async def _render(self, instance_id: str) -> None:
        period = self.periods[instance_id]
        try:
            ends_at, minutes = float(period["ends_at"]), float(period["minutes"])
            state = str(period["state"])
        except (KeyError, TypeError, ValueError, ValidationError):
            return
        running = state == "running"
        left = max(0.0, ends_at - time.time()) if running else 0.0
        gone = 1.0 if state == "completed" else min(1.0, max(0.0, 1 - left / (minutes * 60)))
        end = datetime.fromtimestamp(ends_at, UTC).strftime("%H:%M:%S UTC")
        started_at = float(period.get("started_at", ends_at - minutes * 60))
        await self.app.ui.render(
            instance_id,
            card(
                title=str(period.get("label", "Focus"))[:80],
                text=_SHOWN.get(state, state),
                fields={"Length": f"{minutes:g} min", "Ends at": end, "State": state},
                # Running, the Shell counts down to the end and fills the bar itself.
                progress=None if running else gone,
                countdown=(started_at, ends_at) if running and started_at < ends_at else None,
                actions={STOP: "Interrupt"} if running else None,
            ),
        )
