"""Deadline operations (seed 004 §6.3): the runtime, not the app, ends a call at its `ends_at`
or at the user's interruption, and writes that call's one terminal result itself.

Theory of operation
-------------------
An app that runs a call asks to `start` an operation for it, with an `ends_at` and the result
to submit then (checked against the tool's output schema now, so the ending cannot fail on it).
The store writes the operation together with the call's one `started` progress, and refuses it
unless the call is the app's, taken, and its instance in front (`foreground_required`): the
Agent hears "started" only once the timer really runs in front of the user (seed 004 §7.3).

The router then arms `ends_at` (`_deadlines`); at that time it `fire`s: ONE store request moves
the operation to `completed` and submits the call's result with its terminal row. An
interruption (`interrupt`: the app passes on the user's word, from its view or from an
`activation_not_required` tool call) ends it `interrupted`, the call `cancelled
cancelled_by_user`. An interruption of a call that has no operation yet — one still on its way
to its instance, whose launch has not finished — ends the call at once, by the runtime, without
waiting for that launch. If the call ended another way first (its app closed, its own timeout),
the operation is `abandoned` and nothing more is written. The app is told of every ending
(`OperationEndedEvent`) to update what it shows; its display state is its own session data.

Nothing here is state of record: the store has every running operation, and `run` arms them all
at start, so a deadline that passed while the runtime was down fires as soon as it is up.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Final

import trio

from lineup import wire
from lineup.actors.kernel import AuditRecord, ErrorCode, Identity, LineUpError, app_scope_of
from lineup.actors.store.messages import (
    DeadlineOperationEndReply,
    DeadlineOperationEndRequest,
    DeadlineOperationListReply,
    DeadlineOperationListRequest,
    DeadlineOperationRow,
    DeadlineOperationStartReply,
    DeadlineOperationStartRequest,
    ToolCallGetReply,
    ToolCallGetRequest,
    ToolCallListReply,
    ToolCallListRequest,
    ToolCallProgressRequest,
    ToolCallRow,
)
from lineup.facts import deadline_operations as machine
from lineup.facts import tool_calls as calls_machine
from lineup.facts.scopes import INTERACTION
from lineup.sdk import protocol as sdk

from . import _ids as ids
from . import _outbox as outbox
from ._deadlines import Deadlines
from ._tools import ToolCalls, info_of

__all__ = ["DeadlineOperations"]

log = logging.getLogger("lineup.router.operations")

RETRY_S: Final = 1.0  # an ending the store did not take is tried again this much later
TELL_TIMEOUT: Final = 2.0  # the app not up by then lists its operations when it starts
MAX_ARMED_AT_START: Final = 1000  # running operations read at start (one page)
_STARTED_STAMP: Final = 0  # the `started` progress's outbox id: one per call


class DeadlineOperations:
    """The runtime's side of deadline operations (the module's docstring)."""

    def __init__(self, calls: ToolCalls) -> None:
        self.calls = calls
        self._deadlines = Deadlines()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._deadlines.run, self._fire)
            task_status.started()
            await self._arm_running()

    async def _arm_running(self) -> None:
        """At start: every running operation is armed again; one whose `ends_at` passed while
        the runtime was down fires at once."""
        reply = await self.calls.store(
            DeadlineOperationListRequest(running_only=True, limit=MAX_ARMED_AT_START),
            DeadlineOperationListReply,
        )
        for op in reply.operations:
            self._deadlines.arm(op.ends_at, op.call_id)

    # ------------------------------------------------------------------ the app's requests

    async def _own_call(self, sender: Identity, call_id: str, tag: str) -> ToolCallRow:
        scope = app_scope_of(sender)
        call = (await self.calls.store(ToolCallGetRequest(call_id=call_id), ToolCallGetReply)).call
        if call is None:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, call_id)
        if call.app_scope != scope or call.app_scope == INTERACTION:
            self.calls.bus.audit(
                AuditRecord.scope_denied(self.calls.me.name, sender.name, tag, call_id)
            )
            raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, call_id)
        return call

    async def start(self, sender: Identity, msg: sdk.OperationStartRequest) -> sdk.OperationReply:
        """Start the operation of one of the sender's calls (see `OperationStartRequest`)."""
        call = await self._own_call(sender, msg.call_id, msg.TYPE)
        if call.state in calls_machine.DECIDED:
            raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, msg.call_id)
        descriptor = (await self.calls.inventory.get()).tool(call.tool)
        if descriptor is None:
            raise LineUpError(ErrorCode.APP_DISABLED, call.tool)
        if descriptor.output_violations(msg.result):
            self.calls.bus.audit(
                AuditRecord(
                    event="router.tool_output_refused",
                    actor=self.calls.me.name,
                    peer=sender.name,
                    code=ErrorCode.TOOL_OUTPUT_INVALID.value,
                    subject_id=msg.call_id,
                )
            )
            raise LineUpError(ErrorCode.TOOL_OUTPUT_INVALID, call.tool)
        if call.instance_id is None:
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "the call is not taken by its app")
        operation_id = f"{ids.RUNTIME_PREFIX}op:{uuid.uuid4().hex}"
        started = {"stage": machine.STARTED, "operation_id": operation_id, "ends_at": msg.ends_at}
        outbox_id = ids.progress_id(msg.call_id, _STARTED_STAMP)
        body = outbox.envelope_of(
            await self.calls.session(),
            wire.PROGRESS,
            wire.ProgressPayload(call_id=msg.call_id, progress=started),
            outbox_id,
            call_id=msg.call_id,
        )
        reply = await self.calls.store(
            DeadlineOperationStartRequest(
                operation_id=operation_id,
                call_id=msg.call_id,
                app_scope=call.app_scope,
                instance_id=call.instance_id,
                ends_at=msg.ends_at,
                result=msg.result,
                progress=ToolCallProgressRequest(
                    call_id=msg.call_id,
                    progress=started,
                    outbox_id=outbox_id,
                    wire=body,
                    expected_app_scope=call.app_scope,
                    expected_instance_id=call.instance_id,
                ),
            ),
            DeadlineOperationStartReply,
        )
        if reply.created:
            self._deadlines.arm(reply.operation.ends_at, msg.call_id)
            await outbox.wake(self.calls.bus)
        return sdk.OperationReply(operation=info_of(reply.operation), created=reply.created)

    async def interrupt(
        self, sender: Identity, msg: sdk.OperationInterruptRequest
    ) -> sdk.OperationInterruptReply:
        """The user's interruption of one of the sender's calls, or of every open call of one of
        its tools: each ends `cancelled_by_user`, written by the runtime, whether its operation
        has started or its instance is still being launched."""
        scope = app_scope_of(sender)
        if (msg.call_id is None) == (msg.tool is None):
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "name a call or a tool")
        if msg.call_id is not None:
            targets = [await self._own_call(sender, msg.call_id, msg.TYPE)]
        else:
            assert msg.tool is not None
            if msg.tool.split(".", 1)[0] != scope:
                self.calls.bus.audit(
                    AuditRecord.scope_denied(self.calls.me.name, sender.name, msg.TYPE, msg.tool)
                )
                raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, msg.tool)
            listed = await self.calls.store(
                ToolCallListRequest(app_scope=scope, non_final_only=True, limit=500),
                ToolCallListReply,
            )
            targets = [c for c in listed.calls if c.tool == msg.tool]
        interrupted = []
        for call in targets:
            if call.state in calls_machine.DECIDED:
                continue
            if await self._interrupt_one(call):
                interrupted.append(call.call_id)
        return sdk.OperationInterruptReply(interrupted=tuple(interrupted))

    async def _interrupt_one(self, call: ToolCallRow) -> bool:
        op = await self._operation_of(call.call_id)
        if op is not None:
            reply = await self._end(op, "interrupt")
            return reply.changed and reply.event == "interrupt"
        # No operation yet: the call is ended now, wherever it stands (held for its launch,
        # handed over, taken); a start that comes later finds it decided.
        ended = await self.calls.end(call.call_id, "cancel", machine.INTERRUPTED_CODE)
        late = await self._operation_of(call.call_id)
        if late is not None and late.state == "running":  # its start raced this interruption
            await self._end(late, "interrupt")
        if ended and call.instance_id is not None:
            await self.calls.bus.tell(
                f"miniapp:{call.app_scope}",
                sdk.ToolCancelledEvent(call_id=call.call_id, code=machine.INTERRUPTED_CODE),
                timeout=TELL_TIMEOUT,
            )
        return ended

    async def serving(self, app_scope: str, instance_id: str) -> str | None:
        """The running operation the instance serves (seed 004 §6.1's `scope.operation_id`):
        the latest one started for a call of that instance, if any."""
        reply = await self.calls.store(
            DeadlineOperationListRequest(app_scope=app_scope, running_only=True),
            DeadlineOperationListReply,
        )
        mine = [op for op in reply.operations if op.instance_id == instance_id]
        return max(mine, key=lambda op: op.created_at).operation_id if mine else None

    async def list(self, sender: Identity, msg: sdk.OperationListRequest) -> sdk.OperationListReply:
        reply = await self.calls.store(
            DeadlineOperationListRequest(app_scope=app_scope_of(sender), running_only=not msg.all),
            DeadlineOperationListReply,
        )
        return sdk.OperationListReply(operations=tuple(info_of(op) for op in reply.operations))

    # ------------------------------------------------------------------ endings

    async def _operation_of(self, call_id: str) -> DeadlineOperationRow | None:
        reply = await self.calls.store(
            DeadlineOperationListRequest(call_id=call_id, limit=1), DeadlineOperationListReply
        )
        return reply.operations[0] if reply.operations else None

    async def _end(
        self, op: DeadlineOperationRow, event: machine.DeadlineOperationEvent
    ) -> DeadlineOperationEndReply:
        """End `op` by `event` (`fire`, `interrupt`) with its call's step, in one request."""
        session = await self.calls.session()
        if event == "fire":
            step = outbox.call_step(session, op.call_id, "submit", result=op.result)
        else:
            step = outbox.call_step(session, op.call_id, "cancel", code=machine.INTERRUPTED_CODE)
        reply = await self.calls.store(
            DeadlineOperationEndRequest(
                call_id=op.call_id, event="fire" if event == "fire" else "interrupt", step=step
            ),
            DeadlineOperationEndReply,
        )
        if reply.call is not None:
            self.calls.remember(reply.call)
            self.calls.progress.drop(op.call_id)  # its terminal supersedes any progress held
            await outbox.wake(self.calls.bus)
        if reply.changed:
            code = await self.calls.bus.tell(
                f"miniapp:{op.app_scope}",
                sdk.OperationEndedEvent(operation=info_of(reply.operation)),
                timeout=TELL_TIMEOUT,
            )
            if code is not None:
                log.info("router.operation_end_not_told code=%s", code.value)
        return reply

    async def _fire(self, call_id: str) -> None:
        """`ends_at` has come: the operation ends `completed` (unless it ended meanwhile)."""
        try:
            op = await self._operation_of(call_id)
            if op is None or op.state in machine.FINAL:
                return
            if op.ends_at > time.time():  # armed early (a clock step): wait for it
                self._deadlines.arm(op.ends_at, call_id)
                return
            await self._end(op, "fire")
        except LineUpError as exc:
            log.warning("router.operation_fire_failed code=%s", exc.code.value)
            if exc.code is not ErrorCode.INVALID_ARGUMENTS:  # the store did not answer: again
                self._deadlines.arm(time.time() + RETRY_S, call_id)
