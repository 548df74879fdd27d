"""The tool pipeline: an Agent's tool call from envelope to exactly one terminal message.

Theory of operation
-------------------
A `lineup.v1.tool.call` is checked, in the seed's order (seed 003 §4.4), against the inventory
revision, the advertised tools, the app's enabled state, the envelope's scope, the input
schema and the target instance; the first failed check is the call's stable code. A refused
call is recorded `rejected` together with its `tool.error` in one transaction and never
reaches a MiniApp. An accepted one is recorded, acknowledged (`accepted`), activated as its
handling says (`launch` starts an instance: `starting`, then `activation_ready`), bound to an
instance and delivered. The MiniApp reports progress and its result through the SDK; the
result is checked against the output schema, and the terminal state, the result or error and
its outbox row are written in one transaction — so one terminal message per call, whatever is
retried or crashes in between. Calls past their `timeout_ms` expire; an instance that closes
cancels its calls (`app_closed`); either way the MiniApp is told to stop working on them.

All state lives in the store; this object keeps only caches (the inventory, by revision) and
the expiry timers, both rebuilt at start.
"""

from __future__ import annotations

import heapq
import logging
import math
import time
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

import trio
from pydantic import BaseModel

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
    FINAL_TOOL_CALL_STATES,
    InstanceListReply,
    InstanceListRequest,
    OutboxAppendReply,
    OutboxAppendRequest,
    ToolCallFinishReply,
    ToolCallFinishRequest,
    ToolCallGetReply,
    ToolCallGetRequest,
    ToolCallListReply,
    ToolCallListRequest,
    ToolCallProgressReply,
    ToolCallProgressRequest,
    ToolCallReceiptReply,
    ToolCallReceiptRequest,
    ToolCallRecordReply,
    ToolCallRecordRequest,
    ToolCallRow,
    ToolCallTransitionReply,
    ToolCallTransitionRequest,
)
from lineup.actors.transport.messages import OutboxWakeEvent
from lineup.sdk import protocol as sdk
from lineup.sdk.manifest import ToolDescriptor
from lineup.sdk.schema import validate

from ._envelope import EnvelopeRejected, RuntimeEnvelope

__all__ = ["ToolPipeline"]

log = logging.getLogger("lineup.router.tools")
M = TypeVar("M", bound=Message)

STORE_TIMEOUT: Final = 30.0
LAUNCH_TIMEOUT: Final = 30.0
# The standard interactions are tools of the runtime itself (the interactions issue).
INTERACTIONS: Final = frozenset(
    {
        "interaction.notice",
        "interaction.choice",
        "interaction.confirm",
        "interaction.input",
        "choice",
        "confirm",
        "input",
    }
)


# What focus may answer an activation with, meaning "no", not "broken".
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


# A call whose outcome is decided: final, or submitted (its result waits only for the AppServer's
# acknowledgement). Nothing the app, a close or a deadline does changes it any more.
_DECIDED: Final = FINAL_TOOL_CALL_STATES | {"submitted"}

# Recorded but not yet with its app: a router that died there left it to its successor.
_UNROUTED: Final = frozenset({"received", "routing", "waiting_for_app"})


def _needs_ready(descriptor: ToolDescriptor) -> bool:
    """Whether a call of this tool waits for its instance to be ready (seed 004 §9)."""
    return descriptor.activation_requirement != "activation_not_required"


def _now() -> str:
    return datetime.now(UTC).isoformat()


class ToolPipeline:
    def __init__(self, bus: Bus, me: Identity, session: Any) -> None:
        self.bus = bus
        self.me = me
        self._session = session  # async () -> {"conversation_id", "user_id", ...}
        self._inventory: InventoryReply | None = None
        # One release (or convergence) of an instance's held calls at a time: arrival order.
        self._instance_locks: dict[str, trio.Lock] = {}
        self._timers: list[tuple[float, str]] = []
        self._timer_wakeup = trio.Event()
        self._nursery: trio.Nursery | None = None

    # ------------------------------------------------------------------ lifecycle

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._expire_loop)
            task_status.started()
            nursery.start_soon(self._rearm_timers)
            nursery.start_soon(self.publish_inventory)

    async def _store(self, request: Message, expect: type[M]) -> M:
        return await self.bus.request(
            "store", request, expect=expect, timeout=STORE_TIMEOUT, retry=True
        )

    async def wake_transport(self) -> None:
        """Tell the transport the outbox has something new (best effort: it also polls)."""
        await self.bus.tell("transport", OutboxWakeEvent(), timeout=1.0)  # it also polls

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
        outbox_id = f"inventory:{session['conversation_id']}:{inventory.revision}"
        body = self._wire(
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
        await self.wake_transport()

    def _wire(
        self,
        session: dict[str, str],
        kind: str,
        payload: BaseModel,
        message_id: str,
        call_id: str | None = None,
    ) -> dict[str, Any]:
        """The wire envelope of one outbox row: from the user's client, in its conversation."""
        return wire.dump(
            wire.envelope(
                kind,
                payload,
                conversation_id=session["conversation_id"],
                sender_kind="user",
                sender_id=session["user_id"],
                message_id=message_id,
                call_id=call_id,
            )
        )

    # ------------------------------------------------------------------ an Agent's call

    async def accept(self, envelope: RuntimeEnvelope, raw_scope: str | None) -> None:
        """Route one admitted `lineup.v1.tool.call`. Raises EnvelopeRejected only for a payload
        too broken to even record (no call id)."""
        payload = envelope.payload
        call_id = payload.get("call_id")
        if not isinstance(call_id, str) or not 0 < len(call_id) <= 200:
            raise EnvelopeRejected(ErrorCode.INVALID_ARGUMENTS, envelope.id)
        session = await self._session()
        tool = str(payload.get("tool", ""))[:100]
        revision = str(payload.get("inventory_revision", ""))[:100]
        raw_input = payload.get("input")
        call_input = raw_input if isinstance(raw_input, dict) else {}
        try:
            descriptor = await self._check(tool, revision, raw_input, raw_scope, envelope)
        except LineUpError as refused:
            await self._reject(session, call_id, tool, revision, call_input, envelope, refused.code)
            return
        scope = descriptor.method.split(".", 1)[0]
        recorded = await self._store(
            ToolCallRecordRequest(
                call_id=call_id,
                tool=tool,
                inventory_revision=revision,
                app_scope=scope,
                instance_id=envelope.scope.instance_id,
                conversation_id=envelope.scope.conversation_id,
                handling=descriptor.handling,
                input=call_input,
                timeout_ms=descriptor.timeout_ms,
            ),
            ToolCallRecordReply,
        )
        if not recorded.created:
            return  # the same call again (another envelope id): it is already under way
        self._arm(recorded.call)
        await self._receipt(session, call_id, "accepted")
        assert self._nursery is not None
        self._nursery.start_soon(
            self._activate, session, recorded.call, descriptor, envelope.scope.instance_id
        )

    async def _check(
        self,
        tool: str,
        revision: str,
        raw_input: object,
        raw_scope: str | None,
        envelope: RuntimeEnvelope,
    ) -> ToolDescriptor:
        if tool in INTERACTIONS:
            raise LineUpError(ErrorCode.TOOL_NOT_ADVERTISED, tool)
        inventory = await self.inventory()
        if revision != inventory.revision:
            inventory = await self.inventory(fresh=True)  # ours may be the stale one
            if revision != inventory.revision:
                raise LineUpError(ErrorCode.INVENTORY_REVISION_MISMATCH, revision)
        if tool in inventory.disabled_tools:
            raise LineUpError(ErrorCode.APP_DISABLED, tool)
        descriptor = inventory.tool(tool)
        if descriptor is None:
            raise LineUpError(ErrorCode.TOOL_NOT_ADVERTISED, tool)
        scope = tool.split(".", 1)[0]
        if raw_scope is not None and raw_scope != scope:
            raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, raw_scope)
        if not isinstance(raw_input, dict) or validate(descriptor.input_schema, raw_input):
            raise LineUpError(ErrorCode.TOOL_INPUT_INVALID, tool)
        if envelope.scope.instance_id is not None:
            await self.bus.request(
                "focus",
                FindInstanceRequest(app_scope=scope, instance_id=envelope.scope.instance_id),
                expect=InstanceReply,
                timeout=STORE_TIMEOUT,
                retry=True,
            )
        return descriptor

    async def _reject(
        self,
        session: dict[str, str],
        call_id: str,
        tool: str,
        revision: str,
        call_input: dict[str, Any],
        envelope: RuntimeEnvelope,
        code: ErrorCode,
    ) -> None:
        self.bus.audit(
            AuditRecord(
                event="router.tool_call_rejected",
                actor=self.me.name,
                code=code.value,
                message_type=tool[:100] or None,
                subject_id=call_id,
            )
        )
        outbox_id = f"error:{call_id}"
        body = self._wire(
            session,
            wire.TOOL_ERROR,
            wire.ToolErrorPayload(call_id=call_id, code=code.value),
            outbox_id,
            call_id,
        )
        await self._store(
            ToolCallRecordRequest(
                call_id=call_id,
                tool=tool or "unknown",
                inventory_revision=revision or "none",
                app_scope=tool.split(".", 1)[0] or "unknown",
                instance_id=None,
                conversation_id=envelope.scope.conversation_id,
                handling="direct",
                input=call_input,
                timeout_ms=1,
                state="rejected",
                code=code.value,
                outbox_id=outbox_id,
                wire=body,
            ),
            ToolCallRecordReply,
        )
        await self.wake_transport()

    async def _receipt(
        self,
        session: dict[str, str],
        call_id: str,
        status: wire.ReceiptStatus,
        code: str | None = None,
    ) -> None:
        outbox_id = f"receipt:{call_id}:{status}"
        payload = wire.ReceiptPayload(call_id=call_id, status=status, code=code)
        body = self._wire(session, wire.RECEIPT, payload, outbox_id, call_id)
        await self._store(
            ToolCallReceiptRequest(
                call_id=call_id, status=status, code=code, outbox_id=outbox_id, wire=body
            ),
            ToolCallReceiptReply,
        )
        await self.wake_transport()

    async def _activate(
        self,
        session: dict[str, str],
        call: ToolCallRow,
        descriptor: ToolDescriptor,
        instance_id: str | None,
    ) -> None:
        """Bring up (or find) the instance the call goes to, then hand it over — or hold it
        (persisted, `routing` and bound to the instance) while that instance is still starting
        and the tool needs the app ready (seed 004 §7.3)."""
        try:
            if call.state == "received":
                await self._store(
                    ToolCallTransitionRequest(call_id=call.call_id, to_state="routing"),
                    ToolCallTransitionReply,
                )
            if call.handling == "launch":
                await self._receipt(session, call.call_id, "starting")
                instance = await self.bus.request(
                    "focus",
                    LaunchRequest(app_scope=call.app_scope, call_id=call.call_id),
                    expect=InstanceReply,
                    timeout=LAUNCH_TIMEOUT,
                    retry=True,
                )
                await self._receipt(session, call.call_id, "activation_ready")
            else:
                instance = await self.bus.request(
                    "focus",
                    FindInstanceRequest(
                        app_scope=call.app_scope,
                        instance_id=instance_id,
                        foreground=call.handling == "foreground",
                    ),
                    expect=InstanceReply,
                    timeout=STORE_TIMEOUT,
                    retry=True,
                )
        except LineUpError as exc:
            # Focus's own refusals reach the Agent as they are; anything else went wrong inside.
            code = exc.code if exc.code in _ACTIVATION_REFUSALS else ErrorCode.HANDLER_FAILED
            ending = "cancelled" if code is ErrorCode.ACTIVATION_CANCELLED else "failed"
            if call.handling == "launch":
                status: wire.ReceiptStatus = (
                    "activation_cancelled" if ending == "cancelled" else "activation_failed"
                )
                await self._receipt(session, call.call_id, status, code.value)
            await self._finish(call.call_id, ending, code=code.value)
            return
        if call.handling == "launch":
            await self._hand_over(call, instance, descriptor)
            await self.release(instance.instance_id, instance.app_scope)  # it is ready now
            return
        if instance.state == "starting" and _needs_ready(descriptor):
            await self._store(
                ToolCallTransitionRequest(
                    call_id=call.call_id, to_state="routing", instance_id=instance.instance_id
                ),
                ToolCallTransitionReply,
            )
            # It may have become ready while this was written: look again (under the lock).
            await self.release(instance.instance_id, instance.app_scope)
            return
        await self._hand_over(call, instance, descriptor)

    async def _hand_over(
        self, call: ToolCallRow, instance: InstanceReply, descriptor: ToolDescriptor
    ) -> None:
        """Bind the call to its instance and tell the app, unless the tool needs its instance
        in front and it is not (`foreground_required`, refused before the app took it)."""
        if (
            descriptor.requires_foreground
            and call.handling != "launch"
            and instance.state != "foreground"
        ):
            await self._finish(call.call_id, "rejected", code=ErrorCode.FOREGROUND_REQUIRED.value)
            return
        row = await self._store(
            ToolCallTransitionRequest(
                call_id=call.call_id, to_state="waiting_for_app", instance_id=instance.instance_id
            ),
            ToolCallTransitionReply,
        )
        await self._deliver(row.call)

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
                        await self._finish(
                            call.call_id, "failed", code=ErrorCode.APP_DISABLED.value
                        )
                    else:
                        await self._hand_over(call, instance, descriptor)
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
        """Tell the app (a push it answers by accepting the call). An app that is not up lists
        the call when it starts; nothing moves the call until the app accepts it."""
        assert call.instance_id is not None
        event = sdk.ToolCallEvent(
            call_id=call.call_id, tool=call.tool, instance_id=call.instance_id, input=call.input
        )
        code = await self.bus.tell(f"miniapp:{call.app_scope}", event, timeout=10.0)
        if code is not None:
            log.info("router.call_not_told code=%s", code.value)

    # ------------------------------------------------------------------ the MiniApp's side

    async def _own_call(self, sender: Identity, call_id: str, tag: str) -> ToolCallRow:
        scope = app_scope_of(sender)
        reply = await self._store(ToolCallGetRequest(call_id=call_id), ToolCallGetReply)
        if reply.call is None:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, call_id)
        if reply.call.app_scope != scope:
            self.bus.audit(AuditRecord.scope_denied(self.me.name, sender.name, tag, call_id))
            raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, call_id)
        if reply.call.state in _DECIDED:
            raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, call_id)
        return reply.call

    async def progress(self, sender: Identity, msg: sdk.ToolProgressRequest) -> sdk.CommandReceipt:
        call = await self._own_call(sender, msg.call_id, msg.TYPE)
        session = await self._session()
        outbox_id = f"progress:{call.call_id}:{time.time_ns()}"
        body = self._wire(
            session,
            wire.PROGRESS,
            wire.ProgressPayload(call_id=call.call_id, progress=msg.progress),
            outbox_id,
            call.call_id,
        )
        await self._store(
            ToolCallProgressRequest(
                call_id=call.call_id,
                progress=msg.progress,
                outbox_id=outbox_id,
                wire=body,
                expected_app_scope=call.app_scope,
                expected_instance_id=call.instance_id or "",
            ),
            ToolCallProgressReply,
        )
        await self.wake_transport()
        return sdk.CommandReceipt(id=call.call_id)

    async def complete(self, sender: Identity, msg: sdk.ToolCompleteRequest) -> sdk.CommandReceipt:
        call = await self._own_call(sender, msg.call_id, msg.TYPE)
        inventory = await self.inventory()
        descriptor = inventory.tool(call.tool)
        if descriptor is None:
            raise LineUpError(ErrorCode.APP_DISABLED, call.tool)
        if validate(descriptor.output_schema, msg.result):
            self.bus.audit(
                AuditRecord(
                    event="router.tool_output_refused",
                    actor=self.me.name,
                    peer=sender.name,
                    code=ErrorCode.TOOL_OUTPUT_INVALID.value,
                    subject_id=call.call_id,
                )
            )
            raise LineUpError(ErrorCode.TOOL_OUTPUT_INVALID, call.tool)
        # `submitted`, not `completed`: the call is completed once the AppServer acknowledged
        # the result's outbox row (the store does that in the ack's transaction).
        await self._finish(
            call.call_id, "submitted", result=msg.result, expected_scope=call.app_scope
        )
        return sdk.CommandReceipt(id=call.call_id)

    async def fail(self, sender: Identity, msg: sdk.ToolFailRequest) -> sdk.CommandReceipt:
        call = await self._own_call(sender, msg.call_id, msg.TYPE)
        await self._finish(
            call.call_id, "failed", code=msg.code[:100], expected_scope=call.app_scope
        )
        return sdk.CommandReceipt(id=call.call_id)

    async def cancel(self, sender: Identity, msg: sdk.ToolCancelRequest) -> sdk.CommandReceipt:
        call = await self._own_call(sender, msg.call_id, msg.TYPE)
        await self._finish(
            call.call_id, "cancelled", code=msg.reason, expected_scope=call.app_scope
        )
        return sdk.CommandReceipt(id=call.call_id)

    async def accept_call(self, sender: Identity, msg: sdk.ToolAcceptRequest) -> sdk.CommandReceipt:
        """The app takes a call handed to it: `running` from now on (a repeat changes nothing).
        Refused (and so not run) when decided, not the app's, or not handed over (held)."""
        call = await self._own_call(sender, msg.call_id, msg.TYPE)
        if call.instance_id is None or call.state not in ("waiting_for_app", "running"):
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "the call was not handed over")
        reply = await self._store(
            ToolCallTransitionRequest(
                call_id=call.call_id, to_state="running", expected_app_scope=call.app_scope
            ),
            ToolCallTransitionReply,
        )
        return sdk.CommandReceipt(id=call.call_id, changed=reply.changed)

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

    async def _finish(
        self,
        call_id: str,
        state: str,
        *,
        result: dict[str, Any] | None = None,
        code: str | None = None,
        expected_scope: str | None = None,
    ) -> bool:
        """Make the call final with its one terminal message. False if it already was."""
        session = await self._session()
        payload: BaseModel
        if state in ("submitted", "completed"):
            kind, payload = wire.RESULT, wire.ResultPayload(call_id=call_id, result=result or {})
        else:
            kind = wire.TOOL_ERROR
            payload = wire.ToolErrorPayload(call_id=call_id, code=code or state)
        outbox_id = f"final:{call_id}"
        body = self._wire(session, kind, payload, outbox_id, call_id)
        try:
            await self._store(
                ToolCallFinishRequest(
                    call_id=call_id,
                    to_state=state,
                    result=result,
                    code=code,
                    expected_app_scope=expected_scope,
                    wire=body,
                    outbox_id=outbox_id,
                ),
                ToolCallFinishReply,
            )
        except LineUpError as exc:
            if exc.code is ErrorCode.CALL_ALREADY_FINAL and expected_scope is None:
                return False  # the runtime's own ending lost to the app's: that is fine
            raise
        await self.wake_transport()
        return True

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
                held = call.state == "routing"
                if held:
                    state = "rejected"
                    code = (
                        ErrorCode.ACTIVATION_FAILED if failed else ErrorCode.ACTIVATION_CANCELLED
                    ).value
                else:
                    state, code = "cancelled", "app_closed"
                try:
                    done = await self._finish(call.call_id, state, code=code)
                except LineUpError as exc:  # e.g. it became final meanwhile
                    log.info("router.converge_skipped code=%s", exc.code.value)
                    continue
                if done:
                    ended.append(call.call_id)
                    if not held:
                        await self._tell_cancelled(call, code)
        self._instance_locks.pop(instance_id, None)
        return tuple(ended)

    async def _tell_cancelled(self, call: ToolCallRow, code: str) -> None:
        # Not told: it is not running, so there is nothing to stop.
        await self.bus.tell(
            f"miniapp:{call.app_scope}",
            sdk.ToolCancelledEvent(call_id=call.call_id, code=code),
            timeout=2.0,
        )

    # ------------------------------------------------------------------ expiry

    def _arm(self, call: ToolCallRow) -> None:
        earliest = self._timers[0][0] if self._timers else math.inf
        heapq.heappush(self._timers, (call.deadline_at, call.call_id))
        if call.deadline_at < earliest:
            self._timer_wakeup.set()

    async def _rearm_timers(self) -> None:
        """At start: every unfinished call gets its deadline again, and one the previous router
        left half-routed (it died between recording it and handing it to the app) goes on."""
        alive = await self._alive()
        after = 0
        while True:
            reply = await self._store(
                ToolCallListRequest(non_final_only=True, after_seq=after, limit=500),
                ToolCallListReply,
            )
            for call in reply.calls:
                self._arm(call)
                ended = call.instance_id is not None and call.instance_id not in alive
                if not ended and call.state in _UNROUTED and self._nursery is not None:
                    self._nursery.start_soon(self._resume, call)
            if len(reply.calls) < 500:
                break
            after = reply.calls[-1].seq
        await self.sweep_ended(alive)

    async def _alive(self) -> set[str]:
        live = await self._store(InstanceListRequest(), InstanceListReply)
        return {row.instance_id for row in live.instances}

    async def sweep_ended(self, alive: set[str] | None = None) -> None:
        """Converge the calls of every instance that has ended: its `ended` / `failed` event
        may have been lost (a router or a focus that died in between). Focus persists an end
        before it tells, so the store's live instances are the truth here. (Which of the two
        it was is not kept with the call: a held call of one is ended `activation_cancelled`.)"""
        if alive is None:
            alive = await self._alive()
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
            try:
                await self.converge(instance_id, app_scope, failed=False)
            except LineUpError as exc:
                log.warning("router.sweep_failed code=%s", exc.code.value)

    async def _resume(self, call: ToolCallRow) -> None:
        """Route a recorded call again, from where it stood. Every step is idempotent: the
        receipt by its outbox id, the launch by the call id, the app runs a call once; a
        transport replaying the envelope finds it recorded and leaves it to this."""
        try:
            session = await self._session()
            if call.state == "waiting_for_app":
                await self._deliver(call)
                return
            inventory = await self.inventory()
            descriptor = inventory.tool(call.tool)
            if descriptor is None:  # disabled or gone meanwhile: the checks would refuse it now
                await self._finish(call.call_id, "failed", code=ErrorCode.APP_DISABLED.value)
                return
            await self._receipt(session, call.call_id, "accepted")
            await self._activate(session, call, descriptor, call.instance_id)
        except LineUpError as exc:  # its deadline still ends it
            log.warning("router.resume_failed code=%s", exc.code.value)

    async def _expire_loop(self) -> None:
        while True:
            now = time.time()
            while self._timers and self._timers[0][0] <= now:
                _, call_id = heapq.heappop(self._timers)
                await self._expire(call_id)
            self._timer_wakeup = trio.Event()
            wait = self._timers[0][0] - time.time() if self._timers else math.inf
            with trio.move_on_after(max(0.0, wait)):
                await self._timer_wakeup.wait()

    async def _expire(self, call_id: str) -> None:
        try:
            reply = await self._store(ToolCallGetRequest(call_id=call_id), ToolCallGetReply)
            call = reply.call
            if call is None or call.state in _DECIDED:
                return  # a submitted result is delivered whatever its deadline
            if await self._finish(call_id, "expired", code=ErrorCode.OPERATION_EXPIRED.value):
                await self._tell_cancelled(call, "expired")
        except LineUpError as exc:
            log.warning("router.expire_failed code=%s", exc.code.value)
