"""The Agent's tool calls, one step at a time: the core the tool pipeline (`_pipeline`) and the
MiniApp's side of a call (`_app_calls`) share.

Theory of operation
-------------------
A call is a machine (`facts/tool_calls.py`): each step is one event, sent to the store as ONE
request whose transaction writes the call's new state, the outbox rows the event writes
(receipts, the one terminal row) and its audit row. `ToolCalls.step` sends it and, once it has
committed, carries out the step's effects: arm the call's deadline, tell the app, tell it to
stop, release the calls held for an instance that became ready, wake the transport. An ending
the runtime decides (`end`: an expiry, an instance's end, a refusal after birth) is a step like
any other, and a call already decided simply stays as it is.

A call of an `operation` (seed 004 §7.1: long, with progress) reports its progress from the
moment its app takes it: the runtime writes its first report, `{"state": "running"}`, in the
take's wake (`RUNNING`, once per call: its outbox id is fixed), so the Agent hears that the
work has begun before the app says more. An app learns of a call by the tool's `method`, the
name it declared, whichever form the Agent's id has (`lineup.sdk.manifest.split_tool_id`).

A call of a tool linked to its app's Surface (`ToolDescriptor.ui`) is shown there by the
runtime, not relayed by the app (issue 30): the steps whose effects say `tell_surface` ask focus
to show it (`focus.surface.tool_step`), once committed and before the app is told: given to its
instance, the Surface opens with the call's arguments; submitted, it gets the result as a
CallToolResult; failed, a CallToolResult with `isError` and the code; cancelled, expired or
closed, the code it was cancelled with. A Surface focus cannot show it on never holds the call
back.

An instance that ends `converge`s its calls (`cancelled(app_closed)`; a held one `reject`ed with
`activation_cancelled` / `activation_failed`); a submitted result is still delivered. Calls past
their `timeout_ms` `expire` (an expiry the store did not take is tried again).

All state lives in the store; this object keeps only caches (the few immutable facts of calls
it has seen), the progress not yet written, and the expiry timers, all rebuilt at start.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Final, NamedTuple, TypeVar

import trio

from lineup import wire
from lineup.actors.focus.messages import (
    FindInstanceRequest,
    InstanceReply,
    SurfaceToolStepReply,
    SurfaceToolStepRequest,
)
from lineup.actors.kernel import Bus, ErrorCode, Identity, LineUpError, Message
from lineup.actors.store.messages import (
    DeadlineOperationListReply,
    DeadlineOperationListRequest,
    DeadlineOperationRow,
    ToolCallFacts,
    ToolCallListReply,
    ToolCallListRequest,
    ToolCallProgressReply,
    ToolCallProgressRequest,
    ToolCallRow,
    ToolCallStepReply,
)
from lineup.facts import tool_calls as machine
from lineup.facts.scopes import INTERACTION
from lineup.facts.tool_calls import ToolCallEvent
from lineup.sdk import protocol as sdk
from lineup.sdk.manifest import split_tool_id
from lineup.sdk.mcp_apps import call_tool_error, call_tool_result, tool_info

from . import _ids as ids
from . import _outbox as outbox
from ._deadlines import Deadlines
from ._inventory import Inventory
from ._progress import ProgressCoalescer
from ._session import SessionSource

__all__ = ["ANSWERS_PER_CALL", "Known", "ToolCalls"]

log = logging.getLogger("lineup.router.tools")
M = TypeVar("M", bound=Message)

STORE_TIMEOUT: Final = 30.0
SURFACE_TIMEOUT: Final = 5.0  # focus shows a call's step on its Surface (`_tell_surface`)
# A call's expiry the store did not take (it was down, or paused) is tried again this much later:
# a deadline is never dropped while its call may still be open.
EXPIRY_RETRY_S: Final = 1.0
# What the app is told when the runtime ends a call it may be working on.
_STOP_CODES: Final[dict[ToolCallEvent, str]] = {"close": "app_closed", "expire": "expired"}
_KNOWN_CALLS: Final = 10_000  # how many calls' facts the router remembers
# What an app sends for a call it is given (its take, then its outcome): granted with the call,
# beside its own rate budget (`Bus.grant`), so a busy app's calls are not capped by it.
ANSWERS_PER_CALL: Final = 2
# The runtime's own first progress report of an operation, once its app has taken it.
RUNNING: Final = {"state": "running"}
_RUNNING_STAMP: Final = 0  # its outbox id's stamp: one such report per call


def info_of(op: DeadlineOperationRow) -> sdk.OperationInfo:
    """A deadline operation as its app is told of it."""
    return sdk.OperationInfo(
        operation_id=op.operation_id,
        call_id=op.call_id,
        instance_id=op.instance_id,
        state=op.state,
        ends_at=op.ends_at,
    )


class Known(NamedTuple):
    """What does not change about a call once it is with an app (and whether it is decided,
    which, once true, stays true): enough to answer the app without reading the store."""

    app_scope: str
    tool: str
    instance_id: str | None
    decided: bool


class ToolCalls:
    """The calls' steps and their effects (the module's docstring)."""

    def __init__(
        self, bus: Bus, me: Identity, session: SessionSource, inventory: Inventory
    ) -> None:
        self.bus = bus
        self.me = me
        self.session = session
        self.inventory = inventory
        # One release (or convergence) of an instance's held calls at a time: arrival order.
        self._instance_locks: dict[str, trio.Lock] = {}
        self.known: OrderedDict[str, Known] = OrderedDict()
        self._deadlines = Deadlines()
        self._nursery: trio.Nursery | None = None
        # Progress not yet written, per call: the latest report wins (see `_progress`).
        self.progress: ProgressCoalescer[tuple[Known, sdk.ToolProgressRequest]] = (
            ProgressCoalescer()
        )

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._deadlines.run, self._expire)
            task_status.started()

    def soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run `fn(*args)` as a task of its own, once `run` has started (else not at all)."""
        if self._nursery is not None:
            self._nursery.start_soon(fn, *args)

    async def store(self, request: Message, expect: type[M]) -> M:
        return await self.bus.request(
            "store", request, expect=expect, timeout=STORE_TIMEOUT, retry=True
        )

    # ------------------------------------------------------------------ one step

    async def step(
        self,
        call_id: str,
        event: ToolCallEvent,
        *,
        new: ToolCallFacts | None = None,
        instance_id: str | None = None,
        result: dict[str, Any] | None = None,
        code: str | None = None,
        expected_scope: str | None = None,
        pointer: str | None = None,
    ) -> ToolCallStepReply:
        """Move the call by `event` (one store request), then carry out the step's effects."""
        step = outbox.call_step(
            await self.session(),
            call_id,
            event,
            new=new,
            instance_id=instance_id,
            result=result,
            code=code,
            expected_scope=expected_scope,
            pointer=pointer,
        )
        reply = await self.store(step, ToolCallStepReply)
        call = reply.call
        self.remember(call)
        if call.state in machine.DECIDED:
            self.progress.drop(call_id)  # its outcome supersedes any progress still held
        if not reply.changed:
            return reply
        for effect in machine.move(reply.before, event).effects:
            if call.app_scope == INTERACTION and effect != "arm_deadline":
                continue  # the runtime's own call: no app to tell
            if effect == "arm_deadline":
                self.arm(call)
            elif effect == "tell_app":
                await self.deliver(call)
            elif effect == "tell_surface":
                await self._tell_surface(call, event)
            elif effect == "tell_app_stop":
                await self._tell_stop(call, _STOP_CODES[event])
            elif effect == "release_held":
                assert self._nursery is not None
                assert call.instance_id is not None
                self._nursery.start_soon(self.release, call.instance_id, call.app_scope)
        if machine.ROWS[event]:
            await outbox.wake(self.bus)
        if reply.operation_ended:
            await self._tell_operation_ended(call)
        if event == "take" and await self._is_operation(call):
            try:
                await self.write_progress(call, RUNNING, stamp_ns=_RUNNING_STAMP)
            except LineUpError as exc:  # e.g. decided meanwhile: the take itself stands
                log.info("router.running_not_written code=%s", exc.code.value)
        return reply

    async def _tell_operation_ended(self, call: ToolCallRow) -> None:
        """The step ended the call's deadline operation (the store did, with it): the app hears
        of it now, as of every ending (`_operations`), not at the operation's `ends_at`."""
        listed = await self.store(
            DeadlineOperationListRequest(call_id=call.call_id, limit=1), DeadlineOperationListReply
        )
        for op in listed.operations:
            code = await self.bus.tell(
                f"miniapp:{op.app_scope}",
                sdk.OperationEndedEvent(operation=info_of(op)),
                timeout=2.0,
            )
            if code is not None:
                log.info("router.operation_end_not_told code=%s", code.value)

    async def _is_operation(self, call: ToolCallRow) -> bool:
        descriptor = (await self.inventory.get()).tool(call.tool)
        return descriptor is not None and descriptor.model == "operation"

    async def write_progress(
        self, call: ToolCallRow, progress: dict[str, Any], *, stamp_ns: int
    ) -> None:
        """Write one progress report of `call` (its outbox row) and wake the transport."""
        session = await self.session()
        outbox_id = ids.progress_id(call.call_id, stamp_ns)
        body = outbox.envelope_of(
            session,
            wire.PROGRESS,
            wire.ProgressPayload(call_id=call.call_id, progress=progress),
            outbox_id,
            call_id=call.call_id,
        )
        await self.store(
            ToolCallProgressRequest(
                call_id=call.call_id,
                progress=progress,
                outbox_id=outbox_id,
                wire=body,
                expected_app_scope=call.app_scope,
                expected_instance_id=call.instance_id or "",
            ),
            ToolCallProgressReply,
        )
        await outbox.wake(self.bus)

    async def end(self, call_id: str, event: ToolCallEvent, code: str) -> bool:
        """The runtime ends a call (`event`, one of the machine's endings). False if the call was
        decided already (an app's outcome, or another ending, got there first): that is fine."""
        try:
            reply = await self.step(call_id, event, code=code)
        except LineUpError as exc:
            if exc.code is ErrorCode.CALL_ALREADY_FINAL:
                return False
            raise
        return reply.changed

    def remember(self, call: ToolCallRow) -> None:
        known = self.known.pop(call.call_id, None)
        decided = call.state in machine.DECIDED or (known is not None and known.decided)
        self.known[call.call_id] = Known(call.app_scope, call.tool, call.instance_id, decided)
        if len(self.known) > _KNOWN_CALLS:
            self.known.popitem(last=False)

    # ------------------------------------------------------------------ telling the app

    async def deliver(self, call: ToolCallRow) -> None:
        """Tell the app (a push it answers by taking the call). An app that is not up lists
        the call when it starts; nothing moves the call until the app takes it."""
        assert call.instance_id is not None
        event = sdk.ToolCallEvent(
            call_id=call.call_id,
            tool=split_tool_id(call.tool)[1],  # the method: the name the app declared
            instance_id=call.instance_id,
            input=call.input,
        )
        app = f"miniapp:{call.app_scope}"
        code = await self.bus.tell(app, event, timeout=10.0)
        if code is not None:
            log.info("router.call_not_told code=%s", code.value)
            return  # the app lists it when it starts, from its own budget
        self.bus.grant(app, ANSWERS_PER_CALL)  # once told: it now owes its take and outcome

    async def _tell_surface(self, call: ToolCallRow, event: ToolCallEvent) -> None:
        """Show the step on the Surface its tool is linked to, if it is (the module's
        docstring). Focus's refusal or silence is logged: the call goes on without it."""
        descriptor = (await self.inventory.get()).tool(call.tool)
        if descriptor is None or descriptor.ui is None or call.instance_id is None:
            return
        step = SurfaceToolStepRequest(
            app_scope=call.app_scope,
            instance_id=call.instance_id,
            call_id=call.call_id,
            entrypoint=descriptor.ui.entrypoint,
            step="input",
        )
        if event == "submit":
            step = step.model_copy(
                update={"step": "result", "result": call_tool_result(call.result or {}, descriptor)}
            )
        elif event == "fail":
            code = call.error_code or ErrorCode.HANDLER_FAILED.value
            step = step.model_copy(update={"step": "result", "result": call_tool_error(code)})
        elif event in machine.ENDINGS:
            step = step.model_copy(update={"step": "cancelled", "reason": call.error_code})
        else:
            step = step.model_copy(
                update={"tool_input": call.input, "tool_info": tool_info(call.call_id, descriptor)}
            )
        try:
            await self.bus.request(
                "focus", step, expect=SurfaceToolStepReply, timeout=SURFACE_TIMEOUT
            )
        except LineUpError as exc:
            log.info("router.surface_not_told code=%s", exc.code.value)

    async def _tell_stop(self, call: ToolCallRow, code: str) -> None:
        await self.bus.tell(
            f"miniapp:{call.app_scope}",
            sdk.ToolCancelledEvent(call_id=call.call_id, code=code),
            timeout=2.0,
        )

    # ------------------------------------------------------------------ an instance's calls

    async def release(self, instance_id: str, app_scope: str) -> None:
        """Hand over the calls held for `instance_id`, in arrival order, if it is up now."""
        async with self._instance_locks.setdefault(instance_id, trio.Lock()):
            held = await self._held(instance_id, app_scope)
            if not held:
                return
            try:
                instance = await self.bus.request(
                    "focus",
                    FindInstanceRequest(app_scope=app_scope, instance_id=instance_id),
                    expect=InstanceReply,
                    timeout=STORE_TIMEOUT,
                    retry=True,
                )
            except LineUpError as exc:
                log.info("router.release_skipped code=%s", exc.code.value)
                return  # it ended: its `ended` / `failed` event (or the start-up sweep) ends them
            if instance.state == "starting":
                return  # still starting: its `ready` event comes
            inventory = await self.inventory.get()
            for call in held:
                descriptor = inventory.tool(call.tool)
                try:
                    if descriptor is None:  # disabled meanwhile
                        await self.end(call.call_id, "fail", ErrorCode.APP_DISABLED.value)
                    elif descriptor.requires_foreground and instance.state != "foreground":
                        await self.end(call.call_id, "reject", ErrorCode.FOREGROUND_REQUIRED.value)
                    else:
                        await self.step(call.call_id, "hand_over", instance_id=instance_id)
                except LineUpError as exc:  # e.g. it expired meanwhile
                    log.info("router.release_one_skipped code=%s", exc.code.value)

    async def _held(self, instance_id: str, app_scope: str) -> list[ToolCallRow]:
        reply = await self.store(
            ToolCallListRequest(
                app_scope=app_scope, instance_id=instance_id, undecided_only=True, limit=500
            ),
            ToolCallListReply,
        )
        return [c for c in reply.calls if c.state == "routing"]  # in `seq`: arrival order

    async def converge(self, instance_id: str, app_scope: str, failed: bool) -> tuple[str, ...]:
        """The instance ended (closed, or `failed`): each of its calls not decided ends once —
        one held for its activation `rejected(activation_cancelled | activation_failed)`, any
        other `cancelled(app_closed)`. A submitted result is still delivered. Idempotent: an
        event told twice, or a sweep after it, finds nothing left to end."""
        async with self._instance_locks.setdefault(instance_id, trio.Lock()):
            # Undecided only: a submitted call's result is still delivered.
            reply = await self.store(
                ToolCallListRequest(
                    app_scope=app_scope, instance_id=instance_id, undecided_only=True, limit=500
                ),
                ToolCallListReply,
            )
            ended = []
            for call in reply.calls:
                if call.state == "routing":  # held for its instance's activation
                    refusal = (
                        ErrorCode.ACTIVATION_FAILED if failed else ErrorCode.ACTIVATION_CANCELLED
                    )
                    event: ToolCallEvent = "reject"
                    code = refusal.value
                else:
                    event, code = "close", "app_closed"
                try:
                    if await self.end(call.call_id, event, code):
                        ended.append(call.call_id)
                except LineUpError as exc:  # e.g. it became final meanwhile
                    log.info("router.converge_skipped code=%s", exc.code.value)
        self._instance_locks.pop(instance_id, None)
        return tuple(ended)

    # ------------------------------------------------------------------ expiry

    def arm(self, call: ToolCallRow) -> None:
        self._deadlines.arm(call.deadline_at, call.call_id)

    async def _expire(self, call_id: str) -> None:
        """A call past its deadline expires, unless decided: a submitted result is delivered
        whatever its deadline."""
        known = self.known.get(call_id)
        if known is not None and known.decided:
            return
        try:
            await self.end(call_id, "expire", ErrorCode.OPERATION_EXPIRED.value)
        except LineUpError as exc:
            log.warning("router.expire_failed code=%s", exc.code.value)
            if exc.code is not ErrorCode.INVALID_ARGUMENTS:  # the store did not answer: again
                self._deadlines.arm(time.time() + EXPIRY_RETRY_S, call_id)
