"""The tool pipeline: an Agent's tool call from envelope to exactly one terminal message.

Theory of operation
-------------------
A call is a machine (`facts/tool_calls.py`): each step is one event, sent to the
store as ONE request whose transaction writes the call's new state, the outbox rows the event
writes (receipts, the one terminal row) and its audit row. This object only decides which event
comes next and carries out the step's effects once it has committed (`_step`): arm the call's
deadline, tell the app, tell it to stop, release held calls, wake the transport.

A `lineup.v1.tool.call` is checked, in the seed's order (seed 003 §4.4), against the inventory
revision, the advertised tools, the app's enabled state, the envelope's scope, the input schema
and the target instance; the first failed check is the call's stable code, and the call is born
`refuse`d (its `tool.error` in the same transaction) and never reaches a MiniApp. A call of a
standard interaction (`interaction.*`, the legacy `choice` / `confirm` / `input` mapped first)
is the runtime's own: once checked it goes to `_interactions`, which runs it with its
interaction (one step for both). Any other accepted call is born with its `accepted` receipt,
one of three ways: a `launch` call is `admit`ted and then activated (`activate`: `starting`;
focus starts the instance; `activated`: `activation_ready`, and the app is told); any other call
goes to a live instance, which focus finds (brought to the front for `foreground`), and is
either `hand_over`ed to it at once, or, while the instance is still starting and the tool needs
it ready, `hold`s (seed 004 §7.3) until the instance's `ready` event releases it. The MiniApp
`take`s the call, reports progress, and `submit`s its result (checked against the output
schema); the AppServer's acknowledgement of the result's row settles it `completed` in the
store. Progress is coalesced (`_progress`): per call, the latest report wins and at most
PROGRESS_RATE a second reach the outbox. Calls past their `timeout_ms` `expire` (an expiry the
store did not take is tried again); an instance that ends `close`s its calls
(`cancelled(app_closed)`; a held one is `reject`ed with `activation_cancelled` /
`activation_failed`); a submitted result is still delivered. The store gives a call only to an
instance whose end is not recorded, so none is left open on an instance that ended as the call
reached it: a launch closed as it became ready is `launch_cancelled`, any other call turned
away `app_instance_not_found`.

All state lives in the store; this object keeps only caches (the inventory, by revision; the
few immutable facts of calls it has seen) and the expiry timers, all rebuilt at start.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from typing import Any, Final, NamedTuple, TypeVar

import trio

from lineup import wire
from lineup.actors.focus.messages import (
    FindInstanceRequest,
    InstanceReply,
    InventoryReply,
    InventoryRequest,
    LaunchRequest,
)
from lineup.actors.kernel import (
    AuditRecord,
    Bus,
    ErrorCode,
    Identity,
    LineUpError,
    Message,
    app_scope_of,
)
from lineup.actors.store.messages import (
    InstanceListReply,
    InstanceListRequest,
    InstanceRow,
    OutboxAppendReply,
    OutboxAppendRequest,
    ToolCallFacts,
    ToolCallGetReply,
    ToolCallGetRequest,
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
from lineup.sdk import interactions as std
from lineup.sdk import protocol as sdk
from lineup.sdk.manifest import ToolDescriptor
from lineup.sdk.schema import InputInvalid, validate

from . import _ids as ids
from . import _outbox as outbox
from ._deadlines import Deadlines
from ._envelope import EnvelopeRejected, RuntimeEnvelope
from ._progress import SEND_NOW, ProgressCoalescer

__all__ = ["ToolPipeline"]

log = logging.getLogger("lineup.router.tools")
M = TypeVar("M", bound=Message)
# Who runs an interactive call (`_interactions.InteractionService.ask`): the runtime itself.
# It answers with the refusal the pipeline records for the call, if it refused it.
Interactive = Callable[[str, ToolCallFacts, RuntimeEnvelope, object], Awaitable[LineUpError | None]]

STORE_TIMEOUT: Final = 30.0
LAUNCH_TIMEOUT: Final = 30.0
# A call's expiry the store did not take (it was down, or paused) is tried again this much later:
# a deadline is never dropped while its call may still be open.
EXPIRY_RETRY_S: Final = 1.0
# What focus may answer an activation or a lookup with, meaning "no", not "broken".
_ACTIVATION_REFUSALS: Final = frozenset(
    {
        ErrorCode.APP_INSTANCE_NOT_FOUND,
        ErrorCode.LIFECYCLE_DENIED,
        ErrorCode.APP_DISABLED,
        ErrorCode.APP_NOT_INSTALLED,
        ErrorCode.ACTIVATION_FAILED,
        ErrorCode.ACTIVATION_CANCELLED,
    }
)

# What the app is told when the runtime ends a call it may be working on.
_STOP_CODES: Final[dict[ToolCallEvent, str]] = {"close": "app_closed", "expire": "expired"}

# Recorded but not yet with its app: a router that died there left it to its successor.
_UNROUTED: Final = frozenset({"received", "routing", "waiting_for_app"})
_KNOWN_CALLS: Final = 10_000  # how many calls' facts the router remembers


def _pointer_of(refused: LineUpError) -> str | None:
    """The offending field of a `tool_input_invalid` refusal, for the Agent's `tool.error`."""
    return refused.pointer if isinstance(refused, InputInvalid) else None


class _Known(NamedTuple):
    """What does not change about a call once it is with an app (and whether it is decided,
    which, once true, stays true): enough to answer the app without reading the store."""

    app_scope: str
    tool: str
    instance_id: str | None
    decided: bool


def _needs_ready(descriptor: ToolDescriptor) -> bool:
    """Whether a call of this tool waits for its instance to be ready (seed 004 §9)."""
    return descriptor.activation_requirement != "activation_not_required"


class ToolPipeline:
    def __init__(
        self, bus: Bus, me: Identity, session: Any, *, interactive: Interactive | None = None
    ) -> None:
        self.bus = bus
        self.me = me
        self._session = session  # async () -> {"conversation_id", "user_id", ...}
        self._interactive = interactive  # who runs the runtime's own (interactive) calls
        self._inventory: InventoryReply | None = None
        # One release (or convergence) of an instance's held calls at a time: arrival order.
        self._instance_locks: dict[str, trio.Lock] = {}
        self._known: OrderedDict[str, _Known] = OrderedDict()
        self._deadlines = Deadlines()
        self._nursery: trio.Nursery | None = None
        # Progress not yet written, per call: the latest report wins (see `_progress`).
        self._progress: ProgressCoalescer[tuple[_Known, sdk.ToolProgressRequest]] = (
            ProgressCoalescer()
        )
        # Launches whose instance focus has not announced yet, by app, in admission order: a
        # call after one, for that app's instance, is for the instance it opens (the Agent's
        # order), so it waits for it rather than find none (`_find`).
        self._unannounced: dict[str, deque[str]] = {}
        self._announced = trio.Event()  # set, and replaced, whenever one of them moves on

    # ------------------------------------------------------------------ lifecycle

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._deadlines.run, self._expire)
            task_status.started()
            nursery.start_soon(self._rearm_timers)
            nursery.start_soon(self.publish_inventory)

    async def _store(self, request: Message, expect: type[M]) -> M:
        return await self.bus.request(
            "store", request, expect=expect, timeout=STORE_TIMEOUT, retry=True
        )

    # ------------------------------------------------------------------ inventory

    async def inventory(self, *, fresh: bool = False) -> InventoryReply:
        if self._inventory is None or fresh:
            self._inventory = await self.bus.request(
                "focus",
                InventoryRequest(),
                expect=InventoryReply,
                timeout=STORE_TIMEOUT,
                retry=True,
            )
        return self._inventory

    async def publish_inventory(self) -> None:
        """Send the current inventory to the Agent: a full snapshot (the Agent replaces, never
        merges), once per revision (the outbox id is the revision)."""
        try:
            inventory = await self.inventory(fresh=True)
            session = await self._session()
        except LineUpError as exc:
            log.info("router.inventory_not_published code=%s", exc.code.value)
            return
        outbox_id = ids.inventory_id(session["conversation_id"], inventory.revision)
        body = outbox.envelope_of(
            session,
            wire.INVENTORY,
            # The wire's edge: the Agent gets the descriptors' JSON, as the manifest has them.
            wire.InventoryPayload(
                revision=inventory.revision,
                tools=tuple(t.model_dump(mode="json") for t in inventory.tools),
            ),
            outbox_id,
        )
        await self._store(
            OutboxAppendRequest(
                outbox_id=outbox_id,
                conversation_id=session["conversation_id"],
                kind=wire.INVENTORY,
                body=body,
            ),
            OutboxAppendReply,
        )
        await outbox.wake(self.bus)

    async def _step(
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
            await self._session(),
            call_id,
            event,
            new=new,
            instance_id=instance_id,
            result=result,
            code=code,
            expected_scope=expected_scope,
            pointer=pointer,
        )
        reply = await self._store(step, ToolCallStepReply)
        call = reply.call
        self._remember(call)
        if call.state in machine.DECIDED:
            self._progress.drop(call_id)  # its outcome supersedes any progress still held
        if not reply.changed:
            return reply
        for effect in machine.move(reply.before, event).effects:
            if call.app_scope == INTERACTION and effect != "arm_deadline":
                continue  # the runtime's own call: no app to tell
            if effect == "arm_deadline":
                self._arm(call)
            elif effect == "tell_app":
                await self._deliver(call)
            elif effect == "tell_app_stop":
                await self._tell_stop(call, _STOP_CODES[event])
            elif effect == "release_held":
                assert self._nursery is not None
                assert call.instance_id is not None
                self._nursery.start_soon(self.release, call.instance_id, call.app_scope)
        if machine.ROWS[event]:
            await outbox.wake(self.bus)
        return reply

    async def _end(self, call_id: str, event: ToolCallEvent, code: str) -> bool:
        """The runtime ends a call (`event`, one of the machine's endings). False if the call was
        decided already (an app's outcome, or another ending, got there first): that is fine."""
        try:
            reply = await self._step(call_id, event, code=code)
        except LineUpError as exc:
            if exc.code is ErrorCode.CALL_ALREADY_FINAL:
                return False
            raise
        return reply.changed

    def _remember(self, call: ToolCallRow) -> None:
        known = self._known.pop(call.call_id, None)
        decided = call.state in machine.DECIDED or (known is not None and known.decided)
        self._known[call.call_id] = _Known(call.app_scope, call.tool, call.instance_id, decided)
        if len(self._known) > _KNOWN_CALLS:
            self._known.popitem(last=False)

    # ------------------------------------------------------------------ an Agent's call

    async def accept(self, envelope: RuntimeEnvelope, raw_scope: str | None) -> None:
        """Route one admitted `lineup.v1.tool.call`. Raises EnvelopeRejected only for a payload
        too broken to even record (no call id)."""
        payload = envelope.payload
        call_id = payload.get("call_id")
        if not isinstance(call_id, str) or not 0 < len(call_id) <= 200:
            raise EnvelopeRejected(ErrorCode.INVALID_ARGUMENTS, envelope.id)
        tool = str(payload.get("tool", ""))[:100]
        tool = std.LEGACY.get(tool, tool)  # `choice`, `confirm`, `input`: the standard ones
        revision = str(payload.get("inventory_revision", ""))[:100]
        raw_input = payload.get("input")
        call_input = raw_input if isinstance(raw_input, dict) else {}
        try:
            descriptor = await self._check(tool, revision, raw_input, raw_scope, envelope)
        except LineUpError as refused:
            facts = ToolCallFacts(
                tool=tool or "unknown",
                inventory_revision=revision or "none",
                app_scope=tool.split(".", 1)[0] or "unknown",
                conversation_id=envelope.scope.conversation_id,
                handling="direct",
                input=call_input,
                timeout_ms=1,
            )
            await self.refuse(call_id, facts, refused.code, pointer=_pointer_of(refused))
            return
        facts = ToolCallFacts(
            tool=tool,
            inventory_revision=revision,
            app_scope=descriptor.method.split(".", 1)[0],
            conversation_id=envelope.scope.conversation_id,
            handling=descriptor.handling,
            input=call_input,
            timeout_ms=descriptor.timeout_ms,
        )
        if descriptor.handling == "interactive" and facts.app_scope == INTERACTION:
            context = payload.get("app_session_context", call_input.get("app_session_context"))
            await self.interact(call_id, facts, envelope, context)
            return
        if descriptor.handling == "launch":
            reply = await self._step(call_id, "admit", new=facts)
            if reply.created:
                assert self._nursery is not None
                self._unannounced.setdefault(facts.app_scope, deque()).append(call_id)
                self._nursery.start_soon(self._launch, reply.call)
            return
        await self._route(call_id, facts, descriptor, envelope.scope.instance_id)

    async def interact(
        self, call_id: str, facts: ToolCallFacts, envelope: RuntimeEnvelope, context: object
    ) -> None:
        """Hand a checked interactive call to the runtime's interactions; record the call
        refused if they refuse it (a bad request, a sub-session that is not the Agent's, a
        quota), as any failed check is."""
        assert self._interactive is not None
        refused = await self._interactive(call_id, facts, envelope, context)
        if refused is not None:
            await self.refuse(call_id, facts, refused.code, pointer=_pointer_of(refused))

    async def _check(
        self,
        tool: str,
        revision: str,
        raw_input: object,
        raw_scope: str | None,
        envelope: RuntimeEnvelope,
    ) -> ToolDescriptor:
        inventory = await self.inventory()
        if revision != inventory.revision:
            inventory = await self.inventory(fresh=True)  # ours may be the stale one
            if revision != inventory.revision:
                raise LineUpError(ErrorCode.INVENTORY_REVISION_MISMATCH, revision)
        if tool in inventory.disabled_tools:
            raise LineUpError(ErrorCode.APP_DISABLED, tool)
        if tool in inventory.hidden_tools:
            raise LineUpError(ErrorCode.TOOL_NOT_VISIBLE, tool)
        descriptor = inventory.tool(tool)
        if descriptor is None:
            raise LineUpError(ErrorCode.TOOL_NOT_ADVERTISED, tool)
        scope = tool.split(".", 1)[0]
        if raw_scope is not None and raw_scope != scope:
            raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, raw_scope)
        if not isinstance(raw_input, dict):
            raise InputInvalid("", tool)
        violations = validate(descriptor.input_schema, raw_input)
        if violations:
            raise InputInvalid(violations[0], tool)
        return descriptor

    async def refuse(
        self, call_id: str, facts: ToolCallFacts, code: ErrorCode, *, pointer: str | None = None
    ) -> None:
        """Record a call refused at the checks, with its `tool.error`: it never reaches an app.
        `pointer` names the offending field of a `tool_input_invalid`, for the Agent only: the
        audit row keeps the code and the ids."""
        self.bus.audit(
            AuditRecord(
                event="router.tool_call_rejected",
                actor=self.me.name,
                code=code.value,
                message_type=facts.tool[:100] or None,
                subject_id=call_id,
            )
        )
        await self._step(call_id, "refuse", new=facts, code=code.value, pointer=pointer)

    async def _route(
        self,
        call_id: str,
        facts: ToolCallFacts | None,
        descriptor: ToolDescriptor,
        instance_id: str | None,
    ) -> None:
        """Give a call that is not a launch to its live instance: at once, or held while that
        instance is still starting and the tool needs it ready (seed 004 §7.3), or refused
        (no such instance, `foreground_required`). `facts` is given for a call not yet recorded
        (its birth); None for one recorded `received` by an earlier router."""
        scope = descriptor.method.split(".", 1)[0]
        request = FindInstanceRequest(
            app_scope=scope, instance_id=instance_id, foreground=descriptor.handling == "foreground"
        )
        try:
            instance = await self._find(request)
        except LineUpError as exc:
            code = exc.code if exc.code in _ACTIVATION_REFUSALS else ErrorCode.HANDLER_FAILED
            await self._turn_away(call_id, facts, code)
            return
        held = instance.state == "starting" and _needs_ready(descriptor)
        if not held and descriptor.requires_foreground and instance.state != "foreground":
            await self._turn_away(call_id, facts, ErrorCode.FOREGROUND_REQUIRED)
            return
        try:
            event: ToolCallEvent = "hold" if held else "hand_over"
            await self._step(call_id, event, new=facts, instance_id=instance.instance_id)
        except LineUpError as exc:
            if exc.code is not ErrorCode.APP_INSTANCE_NOT_FOUND:
                raise
            # Its instance ended after focus found it: the store refused to give it the call.
            await self._turn_away(call_id, facts, exc.code)
            return
        if held:  # it may have become ready while this was written: look again (under the lock)
            await self.release(instance.instance_id, instance.app_scope)

    async def _turn_away(self, call_id: str, facts: ToolCallFacts | None, code: ErrorCode) -> None:
        """End a call no instance can take: refused at its birth (`facts`), else rejected."""
        if facts is not None:
            await self.refuse(call_id, facts, code)
        else:
            await self._end(call_id, "reject", code.value)

    async def _find(self, request: FindInstanceRequest) -> InstanceReply:
        """Focus's instance for a call. None yet, while a launch of that app admitted before
        the call has not made its own: wait until it has (announced `started`) or failed, and
        look once more.

        Whether such a launch is pending is read *before* focus is asked: focus may make the
        instance right after answering "none", and its `started` then overtakes the answer
        (an event is handled as it is read, while the answer only wakes this task), so that
        by the time the answer is read the launch looks as if it had never been."""
        launching = bool(self._unannounced.get(request.app_scope))
        try:
            return await self._ask_focus(request)
        except LineUpError as exc:
            if exc.code is not ErrorCode.APP_INSTANCE_NOT_FOUND or request.instance_id:
                raise
            if not launching:
                raise
        with trio.move_on_after(STORE_TIMEOUT):
            while self._unannounced.get(request.app_scope):
                await self._announced.wait()
        return await self._ask_focus(request)

    async def _ask_focus(self, request: FindInstanceRequest) -> InstanceReply:
        return await self.bus.request(
            "focus", request, expect=InstanceReply, timeout=STORE_TIMEOUT, retry=True
        )

    def instance_started(self, app_scope: str) -> None:
        """Focus announced a new instance of `app_scope`: the oldest launch of it waiting to be
        announced has its instance (one instance per launch, announced in the order focus
        made them)."""
        waiting = self._unannounced.get(app_scope)
        if waiting:
            waiting.popleft()
            self._settle_announced(app_scope)

    def _launch_over(self, app_scope: str, call_id: str) -> None:
        waiting = self._unannounced.get(app_scope)
        if waiting and call_id in waiting:
            waiting.remove(call_id)  # it ended before focus made its instance
            self._settle_announced(app_scope)

    def _settle_announced(self, app_scope: str) -> None:
        if not self._unannounced.get(app_scope):
            self._unannounced.pop(app_scope, None)
        self._announced.set()
        self._announced = trio.Event()

    async def _launch(self, call: ToolCallRow) -> None:
        """Start the instance a `launch` call opens, then hand the call to it (`activated`,
        which also releases the calls held for that instance). A start that fails or is
        cancelled ends the call with the receipt of the same name."""
        try:
            await self._launch_and_hand_over(call)
        finally:
            self._launch_over(call.app_scope, call.call_id)

    async def _launch_and_hand_over(self, call: ToolCallRow) -> None:
        try:
            if call.state == "received":
                await self._step(call.call_id, "activate")
            instance = await self.bus.request(
                "focus",
                LaunchRequest(app_scope=call.app_scope, call_id=call.call_id),
                expect=InstanceReply,
                timeout=LAUNCH_TIMEOUT,
                retry=True,
            )
        except LineUpError as exc:
            # Focus's own refusals reach the Agent as they are; anything else went wrong inside.
            code = exc.code if exc.code in _ACTIVATION_REFUSALS else ErrorCode.HANDLER_FAILED
            cancelled = code is ErrorCode.ACTIVATION_CANCELLED
            await self._end(
                call.call_id, "launch_cancelled" if cancelled else "launch_failed", code.value
            )
            return
        try:
            await self._step(call.call_id, "activated", instance_id=instance.instance_id)
        except LineUpError as exc:
            if exc.code is not ErrorCode.APP_INSTANCE_NOT_FOUND:
                raise
            # Closed as soon as it was ready, before the call was its: the launch was cancelled.
            code = ErrorCode.ACTIVATION_CANCELLED
            await self._end(call.call_id, "launch_cancelled", code.value)

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
            inventory = await self.inventory()
            for call in held:
                descriptor = inventory.tool(call.tool)
                try:
                    if descriptor is None:  # disabled meanwhile
                        await self._end(call.call_id, "fail", ErrorCode.APP_DISABLED.value)
                    elif descriptor.requires_foreground and instance.state != "foreground":
                        await self._end(call.call_id, "reject", ErrorCode.FOREGROUND_REQUIRED.value)
                    else:
                        await self._step(call.call_id, "hand_over", instance_id=instance_id)
                except LineUpError as exc:  # e.g. it expired meanwhile
                    log.info("router.release_one_skipped code=%s", exc.code.value)

    async def _held(self, instance_id: str, app_scope: str) -> list[ToolCallRow]:
        reply = await self._store(
            ToolCallListRequest(
                app_scope=app_scope, instance_id=instance_id, non_final_only=True, limit=500
            ),
            ToolCallListReply,
        )
        return [c for c in reply.calls if c.state == "routing"]  # in `seq`: arrival order

    async def _deliver(self, call: ToolCallRow) -> None:
        """Tell the app (a push it answers by taking the call). An app that is not up lists
        the call when it starts; nothing moves the call until the app takes it."""
        assert call.instance_id is not None
        event = sdk.ToolCallEvent(
            call_id=call.call_id, tool=call.tool, instance_id=call.instance_id, input=call.input
        )
        code = await self.bus.tell(f"miniapp:{call.app_scope}", event, timeout=10.0)
        if code is not None:
            log.info("router.call_not_told code=%s", code.value)

    # ------------------------------------------------------------------ the MiniApp's side

    async def _own_call(self, sender: Identity, call_id: str, tag: str) -> _Known:
        """What the router knows of `call_id`, if it is the sender's and not decided. From
        memory when this router has seen the call, else from the store (once)."""
        scope = app_scope_of(sender)
        known = self._known.get(call_id)
        if known is None:
            reply = await self._store(ToolCallGetRequest(call_id=call_id), ToolCallGetReply)
            if reply.call is None:
                raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, call_id)
            self._remember(reply.call)
            known = self._known[call_id]
        if known.app_scope != scope or known.app_scope == INTERACTION:
            self.bus.audit(AuditRecord.scope_denied(self.me.name, sender.name, tag, call_id))
            raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, call_id)
        if known.decided:
            raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, call_id)
        return known

    async def progress(self, sender: Identity, msg: sdk.ToolProgressRequest) -> sdk.CommandReceipt:
        """Take a progress report: written at once if its call's window is open, else held
        (the latest wins) and written when the window ends. Its receipt means "taken"."""
        known = await self._own_call(sender, msg.call_id, msg.TYPE)
        due = self._progress.offer(msg.call_id, (known, msg), trio.current_time())
        if due == SEND_NOW:
            await self._write_progress(known, msg)
        elif due is not None and self._nursery is not None:
            self._nursery.start_soon(self._flush_progress, msg.call_id, due)
        return sdk.CommandReceipt(id=msg.call_id)

    async def _flush_progress(self, call_id: str, due: float) -> None:
        """At the end of the call's window, write the report it held (if it still holds one:
        an outcome drops it)."""
        await trio.sleep_until(due)
        held = self._progress.take(call_id, trio.current_time())
        if held is None:
            return
        try:
            await self._write_progress(*held)
        except LineUpError as exc:  # e.g. the call became final meanwhile
            log.info("router.progress_not_written code=%s", exc.code.value)

    async def _write_progress(self, known: _Known, msg: sdk.ToolProgressRequest) -> None:
        session = await self._session()
        outbox_id = ids.progress_id(msg.call_id, time.time_ns())
        body = outbox.envelope_of(
            session,
            wire.PROGRESS,
            wire.ProgressPayload(call_id=msg.call_id, progress=msg.progress),
            outbox_id,
            call_id=msg.call_id,
        )
        await self._store(
            ToolCallProgressRequest(
                call_id=msg.call_id,
                progress=msg.progress,
                outbox_id=outbox_id,
                wire=body,
                expected_app_scope=known.app_scope,
                expected_instance_id=known.instance_id or "",
            ),
            ToolCallProgressReply,
        )
        await outbox.wake(self.bus)

    async def complete(self, sender: Identity, msg: sdk.ToolCompleteRequest) -> sdk.CommandReceipt:
        known = await self._own_call(sender, msg.call_id, msg.TYPE)
        inventory = await self.inventory()
        descriptor = inventory.tool(known.tool)
        if descriptor is None:
            raise LineUpError(ErrorCode.APP_DISABLED, known.tool)
        if validate(descriptor.output_schema, msg.result):
            self.bus.audit(
                AuditRecord(
                    event="router.tool_output_refused",
                    actor=self.me.name,
                    peer=sender.name,
                    code=ErrorCode.TOOL_OUTPUT_INVALID.value,
                    subject_id=msg.call_id,
                )
            )
            raise LineUpError(ErrorCode.TOOL_OUTPUT_INVALID, known.tool)
        # `submitted`, not `completed`: the call is completed once the AppServer acknowledged
        # the result's outbox row (the store does that in the ack's transaction).
        await self._step(msg.call_id, "submit", result=msg.result, expected_scope=known.app_scope)
        return sdk.CommandReceipt(id=msg.call_id)

    async def fail(self, sender: Identity, msg: sdk.ToolFailRequest) -> sdk.CommandReceipt:
        known = await self._own_call(sender, msg.call_id, msg.TYPE)
        await self._step(msg.call_id, "fail", code=msg.code[:100], expected_scope=known.app_scope)
        return sdk.CommandReceipt(id=msg.call_id)

    async def cancel(self, sender: Identity, msg: sdk.ToolCancelRequest) -> sdk.CommandReceipt:
        known = await self._own_call(sender, msg.call_id, msg.TYPE)
        await self._step(msg.call_id, "cancel", code=msg.reason, expected_scope=known.app_scope)
        return sdk.CommandReceipt(id=msg.call_id)

    async def accept_call(self, sender: Identity, msg: sdk.ToolAcceptRequest) -> sdk.CommandReceipt:
        """The app takes a call handed to it: `running` from now on (a repeat changes nothing).
        Refused (and so not run) when decided, not the app's, or not handed over (held)."""
        known = await self._own_call(sender, msg.call_id, msg.TYPE)
        try:
            reply = await self._step(msg.call_id, "take", expected_scope=known.app_scope)
        except LineUpError as exc:
            if exc.code is ErrorCode.INVALID_ARGUMENTS:
                raise LineUpError(
                    ErrorCode.INVALID_ARGUMENTS, "the call was not handed over"
                ) from exc
            raise
        return sdk.CommandReceipt(id=msg.call_id, changed=reply.changed)

    async def pending(self, sender: Identity) -> sdk.ToolPendingReply:
        """The app's calls handed over and not decided, oldest first: read only."""
        scope = app_scope_of(sender)
        reply = await self._store(
            ToolCallListRequest(app_scope=scope, non_final_only=True, limit=500), ToolCallListReply
        )
        return sdk.ToolPendingReply(
            calls=tuple(
                sdk.ToolCallEvent(
                    call_id=c.call_id, tool=c.tool, instance_id=c.instance_id or "", input=c.input
                )
                for c in reply.calls
                if c.instance_id is not None and c.state in ("waiting_for_app", "running")
            )
        )

    # ------------------------------------------------------------------ endings

    async def converge(self, instance_id: str, app_scope: str, failed: bool) -> tuple[str, ...]:
        """The instance ended (closed, or `failed`): each of its calls not decided ends once —
        one held for its activation `rejected(activation_cancelled | activation_failed)`, any
        other `cancelled(app_closed)`. A submitted result is still delivered. Idempotent: an
        event told twice, or a sweep after it, finds nothing left to end."""
        async with self._instance_locks.setdefault(instance_id, trio.Lock()):
            reply = await self._store(
                ToolCallListRequest(
                    app_scope=app_scope, instance_id=instance_id, non_final_only=True, limit=500
                ),
                ToolCallListReply,
            )
            ended = []
            for call in reply.calls:
                if call.state == "submitted":
                    continue  # its result is already decided: it is still delivered
                if call.state == "routing":  # held for its instance's activation
                    refusal = (
                        ErrorCode.ACTIVATION_FAILED if failed else ErrorCode.ACTIVATION_CANCELLED
                    )
                    event: ToolCallEvent = "reject"
                    code = refusal.value
                else:
                    event, code = "close", "app_closed"
                try:
                    if await self._end(call.call_id, event, code):
                        ended.append(call.call_id)
                except LineUpError as exc:  # e.g. it became final meanwhile
                    log.info("router.converge_skipped code=%s", exc.code.value)
        self._instance_locks.pop(instance_id, None)
        return tuple(ended)

    async def _tell_stop(self, call: ToolCallRow, code: str) -> None:
        await self.bus.tell(
            f"miniapp:{call.app_scope}",
            sdk.ToolCancelledEvent(call_id=call.call_id, code=code),
            timeout=2.0,
        )

    # ------------------------------------------------------------------ expiry

    def _arm(self, call: ToolCallRow) -> None:
        self._deadlines.arm(call.deadline_at, call.call_id)

    async def _rearm_timers(self) -> None:
        """At start: every unfinished call gets its deadline again, and one the previous router
        left half-routed (it died between recording it and handing it to the app) goes on."""
        alive = {row.instance_id for row in await self.live()}
        after = 0
        while True:
            reply = await self._store(
                ToolCallListRequest(non_final_only=True, after_seq=after, limit=500),
                ToolCallListReply,
            )
            for call in reply.calls:
                if call.app_scope == INTERACTION:
                    continue  # its interaction's expiry ends it (`_interactions`), in one step
                self._arm(call)
                ended = call.instance_id is not None and call.instance_id not in alive
                if not ended and call.state in _UNROUTED and self._nursery is not None:
                    self._nursery.start_soon(self._resume, call)
            if len(reply.calls) < 500:
                break
            after = reply.calls[-1].seq
        await self.sweep_ended(alive)

    async def live(self) -> tuple[InstanceRow, ...]:
        """The instances not ended, as the store has them."""
        return (await self._store(InstanceListRequest(), InstanceListReply)).instances

    async def sweep_ended(
        self, alive: set[str] | None = None, *, confirmed: set[str] | None = None
    ) -> set[str]:
        """Converge the calls of every instance that has ended: its `ended` / `failed` event
        may have been lost (a router or a focus that died in between). Focus persists an end
        before it tells, so the store's live instances are the truth here. (Which of the two
        it was is not kept with the call: a held call of one is ended `activation_cancelled`.)
        With `confirmed`, only the instances in it are converged (those found missing by the
        last sweep). Returns the instances with open calls that are not live."""
        if alive is None:
            alive = {row.instance_id for row in await self.live()}
        gone: dict[str, str] = {}
        after = 0
        while True:
            reply = await self._store(
                ToolCallListRequest(non_final_only=True, after_seq=after, limit=500),
                ToolCallListReply,
            )
            for call in reply.calls:
                if call.instance_id is not None and call.instance_id not in alive:
                    gone[call.instance_id] = call.app_scope
            if len(reply.calls) < 500:
                break
            after = reply.calls[-1].seq
        for instance_id, app_scope in gone.items():
            if confirmed is not None and instance_id not in confirmed:
                continue
            try:
                await self.converge(instance_id, app_scope, failed=False)
            except LineUpError as exc:
                log.warning("router.sweep_failed code=%s", exc.code.value)
        return set(gone)

    async def _resume(self, call: ToolCallRow) -> None:
        """Route a recorded call again, from where it stood. Every step is idempotent (a step
        already taken is a repeat, the launch is keyed by the call id, the app takes a call
        once); a transport replaying the envelope finds the call recorded and leaves it."""
        try:
            if call.state == "waiting_for_app":
                await self._deliver(call)
                return
            if call.handling == "launch":
                await self._launch(call)
                return
            if call.state == "routing" and call.instance_id is not None:
                await self.release(call.instance_id, call.app_scope)  # held: released when ready
                return
            descriptor = (await self.inventory()).tool(call.tool)
            if descriptor is None:  # disabled or gone meanwhile: the checks would refuse it now
                await self._end(call.call_id, "fail", ErrorCode.APP_DISABLED.value)
                return
            await self._route(call.call_id, None, descriptor, call.instance_id)
        except LineUpError as exc:  # its deadline still ends it
            log.warning("router.resume_failed code=%s", exc.code.value)

    async def _expire(self, call_id: str) -> None:
        """A call past its deadline expires, unless decided: a submitted result is delivered
        whatever its deadline."""
        known = self._known.get(call_id)
        if known is not None and known.decided:
            return
        try:
            await self._end(call_id, "expire", ErrorCode.OPERATION_EXPIRED.value)
        except LineUpError as exc:
            log.warning("router.expire_failed code=%s", exc.code.value)
            if exc.code is not ErrorCode.INVALID_ARGUMENTS:  # the store did not answer: again
                self._deadlines.arm(time.time() + EXPIRY_RETRY_S, call_id)
