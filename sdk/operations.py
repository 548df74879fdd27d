"""`app.operations`: runtime-owned deadline operations (seed 004 §6.3, the Pomodoro example).

An app that runs a long, timed tool call (a focus period, a countdown) does not complete that
call itself. It asks the runtime to `start` an operation for it, with an `ends_at` and the
result the call is to have then; the runtime persists it, writes the call's `started` progress
(only once the instance is in front), and at `ends_at` submits that result itself — across a
restart of the whole runtime, too. The user's interruption (`interrupt`) ends the call
`cancelled_by_user`, also written by the runtime, even while the call's instance is still being
launched. The app keeps only what it shows in its session data, and hears of each ending by its
`on_operation_ended` hook (or `list`s its operations when it starts).

Every method is a request the runtime may refuse with a stable `ErrorCode`; none does I/O but
that request, and none ever completes, fails or cancels a call on the app's behalf locally.
"""

from __future__ import annotations

import math
from typing import Any

from lineup.actors.kernel import ErrorCode, LineUpError

from . import protocol as p
from ._channel import RuntimeChannel

__all__ = ["Operations"]


class Operations:
    """The app's deadline operations (the module's docstring)."""

    def __init__(self, host: RuntimeChannel) -> None:
        self._host = host

    async def start(self, call_id: str, ends_at: float, result: dict[str, Any]) -> p.OperationInfo:
        """Hand the end of call `call_id` to the runtime: at `ends_at` (wall-clock seconds) it
        submits `result`. A repeat answers the operation already started. Raises `LineUpError`:
        `tool_output_invalid` (`result` breaks the tool's output schema), `foreground_required`
        (the instance is not in front), `call_already_final`, `app_scope_mismatch`,
        `invalid_arguments` (`ends_at` not after now or past the call's own deadline)."""
        if not math.isfinite(ends_at):
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "ends_at must be a finite time")
        reply = await self._host.call(
            "router",
            p.OperationStartRequest(call_id=call_id, ends_at=ends_at, result=result),
            p.OperationReply,
        )
        return reply.operation

    async def interrupt(
        self, call_id: str | None = None, *, tool: str | None = None
    ) -> tuple[str, ...]:
        """The user interrupts call `call_id`, or every open call of this app's tool `tool`:
        the runtime ends each `cancelled_by_user`, with its operation or before one started.
        Returns the calls it ended (none: they had ended already)."""
        reply = await self._host.call(
            "router",
            p.OperationInterruptRequest(call_id=call_id, tool=tool),
            p.OperationInterruptReply,
        )
        return reply.interrupted

    async def list(self, *, all: bool = False) -> tuple[p.OperationInfo, ...]:
        """This app's running operations (every one it has, with `all`), soonest end first."""
        reply = await self._host.call(
            "router", p.OperationListRequest(all=all), p.OperationListReply
        )
        return reply.operations
