"""The tool pipeline: an Agent's tool call from envelope to the app that runs it.

Theory of operation
-------------------
A `lineup.v1.tool.call` is checked, in the seed's order (seed 003 §4.4), against the inventory
revision, the advertised tools, the app's enabled state, the envelope's scope, the input schema
and the target instance; the first failed check is the call's stable code, and the call is born
`refuse`d (its `tool.error` in the same transaction) and never reaches a MiniApp. A call of a
standard interaction (`interaction.*`, the legacy `choice` / `confirm` / `input` mapped first)
is the runtime's own: once checked, `accept` hands it back (`Interactive`) for
`_interactions` to run with its interaction (one step for both). Any other accepted call is
born with its `accepted` receipt, one of three ways: a `launch` call is `admit`ted and then
activated (`activate`: `starting`; focus starts the instance; `activated`: `activation_ready`,
and the app is told); any other call goes to a live instance, which focus finds (brought to
the front for a `foreground` handling or an `interactive` call model, which waits for the
user), and is either `hand_over`ed to it at once, or, while the instance is still starting and
the tool needs it ready, `hold`s (seed 004 §7.3) until the instance's `ready` event releases
it. A call that names no instance, of an app with none live, is an app's to create (seed 003
§4.4): unless its tool's launch strategy is `never` (a `query`: it never launches an app nor
changes focus; refused `app_instance_not_found`), it is `admit`ted and activated as a launch
is, its instance started in the background (no change of focus) or, for the strategy
`foreground`, in front. Only a call naming an instance that is not live is refused
`app_instance_not_found` in any case.

A tool is found by its one id (`ToolDescriptor.id`): LineUp's `<scope>.<name>`, or the seeds'
`<scope>/<method>`; an envelope that names its `app_scope` may give the seeds' bare `method`.

From there the call is its app's (`_app_calls`), and each step and its effects are `_tools`'.
The store gives a call only to an instance whose end is not recorded, so none is left open on
an instance that ended as the call reached it: a launch closed as it became ready is
`launch_cancelled`, any other call turned away `app_instance_not_found`.

At start, every unfinished call gets its deadline again and one a previous router left
half-routed goes on (`_rearm_timers`); a sweep converges the calls of instances whose end
the router never heard of (`sweep_ended`).

All state lives in the store; this object keeps only the launches focus has not announced yet.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Final, NamedTuple

import trio

from lineup import wire
from lineup.actors.focus.messages import FindInstanceRequest, InstanceReply, LaunchRequest
from lineup.actors.kernel import AuditRecord, ErrorCode, LineUpError
from lineup.actors.store.messages import (
    InstanceListReply,
    InstanceListRequest,
    InstanceRow,
    ToolCallFacts,
    ToolCallListReply,
    ToolCallListRequest,
    ToolCallRow,
)
from lineup.facts.scopes import INTERACTION
from lineup.facts.tool_calls import ToolCallEvent
from lineup.sdk import interactions as std
from lineup.sdk.manifest import ToolDescriptor, split_tool_id, tool_id
from lineup.sdk.schema import InputInvalid

from ._envelope import RuntimeEnvelope
from ._instance_index import InstanceIndex
from ._inventory import Inventory
from ._tools import ToolCalls
from .messages import IndexedInstance

__all__ = ["Interactive", "ToolPipeline", "pointer_of"]

log = logging.getLogger("lineup.router.tools")

STORE_TIMEOUT: Final = 30.0
LAUNCH_TIMEOUT: Final = 30.0
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

# Recorded but not yet with its app: a router that died there left it to its successor.
_UNROUTED: Final = frozenset({"received", "routing", "waiting_for_app"})


def pointer_of(refused: LineUpError) -> str | None:
    """The offending field of a `tool_input_invalid` refusal, for the Agent's `tool.error`."""
    return refused.pointer if isinstance(refused, InputInvalid) else None


def _needs_ready(descriptor: ToolDescriptor) -> bool:
    """Whether a call of this tool waits for its instance to be ready (seed 004 §9)."""
    return descriptor.activation_requirement != "activation_not_required"


def _brings_forward(descriptor: ToolDescriptor) -> bool:
    """Whether a call of this tool puts its live instance in front: a `foreground` handling,
    or an `interactive` call model (it waits for the user, who must see it). Never a query."""
    return descriptor.model != "query" and (
        descriptor.handling == "foreground" or descriptor.model == "interactive"
    )


class Interactive(NamedTuple):
    """A checked call of a standard interaction: the runtime's own, which the interactions run
    (`InteractionService.ask`); if they refuse it, it is recorded refused (`refuse`) as any
    failed check is. `context` is the `app_session_context` it names, if any."""

    call_id: str
    facts: ToolCallFacts
    context: object


class ToolPipeline:
    """An Agent's calls on their way to an app (the module's docstring)."""

    def __init__(self, calls: ToolCalls, inventory: Inventory) -> None:
        self.calls = calls
        self.inventory = inventory
        self._nursery: trio.Nursery | None = None
        # Launches whose instance focus has not announced yet, by app, in admission order: a
        # call after one, for that app's instance, is for the instance it opens (the Agent's
        # order), so it waits for it rather than find none (`_find`).
        self._unannounced: dict[str, deque[str]] = {}
        self._announced = trio.Event()  # set, and replaced, whenever one of them moves on
        # Focus's instances as it last told them: a call's instance without asking focus.
        self.index = InstanceIndex(lambda: calls.bus.connection("focus"))

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await nursery.start(self.calls.run)
            task_status.started()
            nursery.start_soon(self._rearm_timers)
            nursery.start_soon(self.inventory.publish)

    # ------------------------------------------------------------------ an Agent's call

    async def accept(
        self, envelope: RuntimeEnvelope, call: wire.ToolCallEnvelope
    ) -> Interactive | None:
        """Route one admitted `lineup.v1.tool.call` (`call`, as the wire parsed it; `envelope`,
        as the filter chain admitted it). A call of a standard interaction is returned, for the
        interactions to run; every other is recorded here, accepted or refused."""
        payload = call.payload
        call_id = payload.call_id
        tool = payload.tool[:100]
        tool = std.LEGACY.get(tool, tool)  # `choice`, `confirm`, `input`: the standard ones
        revision = payload.inventory_revision[:100]
        raw_input = payload.input
        call_input = raw_input if isinstance(raw_input, dict) else {}
        try:
            descriptor = await self._check(tool, revision, raw_input, call.app_scope)
        except LineUpError as refused:
            facts = ToolCallFacts(
                tool=tool or "unknown",
                inventory_revision=revision or "none",
                app_scope=split_tool_id(tool)[0] or "unknown",
                conversation_id=envelope.scope.conversation_id,
                handling="direct",
                input=call_input,
                timeout_ms=1,
            )
            await self.refuse(call_id, facts, refused.code, pointer=pointer_of(refused))
            return None
        facts = ToolCallFacts(
            tool=descriptor.id,  # the one id, however the envelope named it
            inventory_revision=revision,
            app_scope=descriptor.scope,
            conversation_id=envelope.scope.conversation_id,
            handling=descriptor.handling,
            input=call_input,
            timeout_ms=descriptor.timeout_ms,
        )
        if descriptor.handling == "interactive" and facts.app_scope == INTERACTION:
            extra = payload.model_extra or {}
            context = extra.get("app_session_context", call_input.get("app_session_context"))
            return Interactive(call_id, facts, context)
        if descriptor.handling == "launch":
            await self._admit(call_id, facts)
            return None
        await self._route(call_id, facts, descriptor, envelope.scope.instance_id)
        return None

    async def _admit(self, call_id: str, facts: ToolCallFacts) -> None:
        """Record a call whose instance is still to be made, and make it (`_launch`)."""
        reply = await self.calls.step(call_id, "admit", new=facts)
        if reply.created:
            assert self._nursery is not None
            self._unannounced.setdefault(facts.app_scope, deque()).append(call_id)
            self._nursery.start_soon(self._launch, reply.call)

    async def _check(
        self,
        tool: str,
        revision: str,
        raw_input: object,
        raw_scope: str | None,
    ) -> ToolDescriptor:
        inventory = await self.inventory.get()
        if revision != inventory.revision:
            inventory = await self.inventory.get(fresh=True)  # ours may be the stale one
            if revision != inventory.revision:
                raise LineUpError(ErrorCode.INVENTORY_REVISION_MISMATCH, revision)
        # The id itself, or (the seeds' way) the envelope's scope and the bare method.
        names = [tool] if raw_scope is None else [tool, tool_id(raw_scope, tool)]
        if any(name in inventory.disabled_tools for name in names):
            raise LineUpError(ErrorCode.APP_DISABLED, tool)
        if any(name in inventory.hidden_tools for name in names):
            raise LineUpError(ErrorCode.TOOL_NOT_VISIBLE, tool)
        descriptor = next(
            (found for found in map(inventory.tool, names) if found is not None), None
        )
        if descriptor is None:
            raise LineUpError(ErrorCode.TOOL_NOT_ADVERTISED, tool)
        if raw_scope is not None and raw_scope != descriptor.scope:
            raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, raw_scope)
        if not isinstance(raw_input, dict):
            raise InputInvalid("", tool)
        violations = descriptor.input_violations(raw_input)
        if violations:
            raise InputInvalid(violations[0], tool)
        return descriptor

    async def refuse(
        self, call_id: str, facts: ToolCallFacts, code: ErrorCode, *, pointer: str | None = None
    ) -> None:
        """Record a call refused at the checks, with its `tool.error`: it never reaches an app.
        `pointer` names the offending field of a `tool_input_invalid`, for the Agent only: the
        audit row keeps the code and the ids."""
        self.calls.bus.audit(
            AuditRecord(
                event="router.tool_call_rejected",
                actor=self.calls.me.name,
                code=code.value,
                message_type=facts.tool[:100] or None,
                subject_id=call_id,
            )
        )
        await self.calls.step(call_id, "refuse", new=facts, code=code.value, pointer=pointer)

    async def _route(
        self,
        call_id: str,
        facts: ToolCallFacts | None,
        descriptor: ToolDescriptor,
        instance_id: str | None,
    ) -> None:
        """Give a call that is not a launch to its live instance: at once, or held while that
        instance is still starting and the tool needs it ready (seed 004 §7.3); to a new one
        when it names none and its app has none live (the module's docstring); or refuse it
        (no such instance, `foreground_required`). `facts` is given for a call not yet recorded
        (its birth); None for one recorded by an earlier router."""
        foreground = _brings_forward(descriptor)
        instance: IndexedInstance | InstanceReply | None = None
        if not foreground and not self._unannounced.get(descriptor.scope):
            # Focus's index answers as focus would (`_instance_index`); a call that brings its
            # instance forward, or comes after a launch not yet announced, asks focus.
            instance = self.index.find(descriptor.scope, instance_id)
        try:
            if instance is None:
                instance = await self._find(
                    FindInstanceRequest(
                        app_scope=descriptor.scope, instance_id=instance_id, foreground=foreground
                    )
                )
        except LineUpError as exc:
            none_live = exc.code is ErrorCode.APP_INSTANCE_NOT_FOUND and instance_id is None
            if none_live and facts is not None and descriptor.launch_strategy != "never":
                await self._admit(call_id, facts)
                return
            code = exc.code if exc.code in _ACTIVATION_REFUSALS else ErrorCode.HANDLER_FAILED
            await self._turn_away(call_id, facts, code)
            return
        held = instance.state == "starting" and _needs_ready(descriptor)
        if not held and descriptor.requires_foreground and instance.state != "foreground":
            await self._turn_away(call_id, facts, ErrorCode.FOREGROUND_REQUIRED)
            return
        try:
            event: ToolCallEvent = "hold" if held else "hand_over"
            await self.calls.step(call_id, event, new=facts, instance_id=instance.instance_id)
        except LineUpError as exc:
            if exc.code is not ErrorCode.APP_INSTANCE_NOT_FOUND:
                raise
            # Its instance ended after focus found it: the store refused to give it the call.
            await self._turn_away(call_id, facts, exc.code)
            return
        if held:  # it may have become ready while this was written: look again (under the lock)
            await self.calls.release(instance.instance_id, instance.app_scope)

    async def _turn_away(self, call_id: str, facts: ToolCallFacts | None, code: ErrorCode) -> None:
        """End a call no instance can take: refused at its birth (`facts`), else rejected."""
        if facts is not None:
            await self.refuse(call_id, facts, code)
        else:
            await self.calls.end(call_id, "reject", code.value)

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
        return await self.calls.bus.request(
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
        """Start the instance an admitted call opens (in front for the launch strategy
        `foreground`, else in the background), then hand the call to it (`activated`, which
        also releases the calls held for that instance). A start that fails or is cancelled
        ends the call with the receipt of the same name."""
        try:
            await self._launch_and_hand_over(call)
        finally:
            self._launch_over(call.app_scope, call.call_id)

    async def _launch_and_hand_over(self, call: ToolCallRow) -> None:
        # Gone from the inventory meanwhile: focus refuses the launch (the app is disabled).
        descriptor = (await self.inventory.get()).tool(call.tool)
        launch = LaunchRequest(
            app_scope=call.app_scope,
            call_id=call.call_id,
            foreground=descriptor is None or descriptor.launch_strategy == "foreground",
            restore_previous_focus=descriptor is None or descriptor.restore_previous_focus,
            conversation_id=call.conversation_id or None,
        )
        try:
            if call.state == "received":
                await self.calls.step(call.call_id, "activate")
            instance = await self.calls.bus.request(
                "focus",
                launch,
                expect=InstanceReply,
                timeout=LAUNCH_TIMEOUT,
                retry=True,
            )
        except LineUpError as exc:
            # Focus's own refusals reach the Agent as they are; anything else went wrong inside.
            code = exc.code if exc.code in _ACTIVATION_REFUSALS else ErrorCode.HANDLER_FAILED
            cancelled = code is ErrorCode.ACTIVATION_CANCELLED
            await self.calls.end(
                call.call_id, "launch_cancelled" if cancelled else "launch_failed", code.value
            )
            return
        try:
            await self.calls.step(call.call_id, "activated", instance_id=instance.instance_id)
        except LineUpError as exc:
            if exc.code is ErrorCode.CALL_ALREADY_FINAL:
                return  # ended while its instance started (interrupted, expired): it stays so
            if exc.code is not ErrorCode.APP_INSTANCE_NOT_FOUND:
                raise
            # Closed as soon as it was ready, before the call was its: the launch was cancelled.
            code = ErrorCode.ACTIVATION_CANCELLED
            await self.calls.end(call.call_id, "launch_cancelled", code.value)

    # ------------------------------------------------------------------ at start, and sweeps

    async def _rearm_timers(self) -> None:
        """At start: every unfinished call gets its deadline again, and one the previous router
        left half-routed (it died between recording it and handing it to the app) goes on."""
        alive = {row.instance_id for row in await self.live()}
        after = 0
        while True:
            reply = await self.calls.store(
                ToolCallListRequest(non_final_only=True, after_seq=after, limit=500),
                ToolCallListReply,
            )
            for call in reply.calls:
                if call.app_scope == INTERACTION:
                    continue  # its interaction's expiry ends it (`_interactions`), in one step
                self.calls.arm(call)
                ended = call.instance_id is not None and call.instance_id not in alive
                if not ended and call.state in _UNROUTED and self._nursery is not None:
                    self._nursery.start_soon(self._resume, call)
            if len(reply.calls) < 500:
                break
            after = reply.calls[-1].seq
        await self.sweep_ended(alive)

    async def live(self) -> tuple[InstanceRow, ...]:
        """The instances not ended, as the store has them."""
        return (await self.calls.store(InstanceListRequest(), InstanceListReply)).instances

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
            # Undecided only: a submitted call stays as it is when its instance ends (its
            # result is still delivered), and an AppServer that is away may leave thousands.
            reply = await self.calls.store(
                ToolCallListRequest(undecided_only=True, after_seq=after, limit=500),
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
                await self.calls.converge(instance_id, app_scope, failed=False)
            except LineUpError as exc:
                log.warning("router.sweep_failed code=%s", exc.code.value)
        return set(gone)

    async def _resume(self, call: ToolCallRow) -> None:
        """Route a recorded call again, from where it stood. Every step is idempotent (a step
        already taken is a repeat, the launch is keyed by the call id, the app takes a call
        once); a transport replaying the envelope finds the call recorded and leaves it."""
        try:
            if call.state == "waiting_for_app":
                await self.calls.deliver(call)
                return
            if call.handling == "launch" or call.instance_id is None:
                # Admitted (a launch, or a call whose instance was still to be made): only
                # `admit` records a call without its instance.
                await self._launch(call)
                return
            if call.state == "routing":
                # Held: released when ready.
                await self.calls.release(call.instance_id, call.app_scope)
                return
            descriptor = (await self.inventory.get()).tool(call.tool)
            if descriptor is None:  # disabled or gone meanwhile: the checks would refuse it now
                await self.calls.end(call.call_id, "fail", ErrorCode.APP_DISABLED.value)
                return
            await self._route(call.call_id, None, descriptor, call.instance_id)
        except LineUpError as exc:  # its deadline still ends it
            log.warning("router.resume_failed code=%s", exc.code.value)
