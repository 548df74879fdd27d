"""The process that hosts one MiniApp: `MiniAppHost`, an actor of kind `miniapp`.

Theory of operation
-------------------
Its only channels go to the router, focus and gateway (the ACL table). It loads the app's
class, gives it an `AppContext`, and queues every event the runtime sends in arrival order,
handing each to the app's hooks one at a time, so app code never races with itself. A tool
call runs beside the queue (`tools.dispatch_tool`), cancelled when the runtime says so.

Deliveries are at-least-once: the inbox is the reliable path (listed at start and whenever the
runtime asks for a refresh, and read again for a delivery whose hook was refused, which is
offered again after a pause) and events are the fast one, so hooks must be idempotent by id.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable
from types import ModuleType
from typing import Any, Final, TypeVar

import trio

from lineup.actors.kernel import (
    Actor,
    ActorKind,
    Envelope,
    ErrorCode,
    LineUpError,
    Message,
    handles,
)
from lineup.facts.modes import MODES

from . import protocol as p
from ._app import AppContext, MiniApp
from .mcp_apps import UI_TOOL_CALL_TIMEOUT_S
from .tools import apps_in, dispatch_tool, tools_of

__all__ = ["MiniAppHost"]

log = logging.getLogger("lineup.sdk")

M = TypeVar("M", bound=Message)
EVENT_QUEUE: Final = 1024
DELIVERY_BURST: Final = 200  # deliveries handed to one `on_deliveries`
CALL_TIMEOUT: Final = 15.0
# A capability request may wait for the user (the permission prompt, then a file picker): the
# gateway answers within the caller's deadline, so it may be longer than the default prompt
# and provider timeouts together.
CAPABILITY_TIMEOUT: Final = 300.0
# A `rate_limited` refusal asks the app to slow down: it waits this long, doubling up to a
# second, and asks again (within CALL_TIMEOUT), instead of dropping what it was doing.
RATE_PAUSE: Final = 0.01
# A delivery whose hook was refused (the app raised, or its acknowledgement did not reach
# the store) is still in the inbox: it is offered again after each of these pauses, read from
# the inbox (what was acknowledged meanwhile is not), about a minute in all; after that it
# waits for the app's next start or refresh.
REOFFER_PAUSES: Final = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
INBOX_PAGE: Final = 100


class MiniAppHost(Actor):
    """The process of one MiniApp. Config: `{"app": "module:Class", "instance_id": str}`."""

    kind = ActorKind.MINIAPP

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._events_in, self._events_out = trio.open_memory_channel[Message](EVENT_QUEUE)
        self._offers: dict[str, int] = {}  # refused deliveries: times offered again

    async def call(self, peer: str, request: Message, expect: type[M]) -> M:
        wait = CAPABILITY_TIMEOUT if isinstance(request, p.CapabilityRequest) else CALL_TIMEOUT
        deadline = trio.current_time() + wait
        pause = RATE_PAUSE
        while True:
            try:
                return await self.bus.request(
                    peer, request, expect=expect, timeout=deadline - trio.current_time(), retry=True
                )
            except LineUpError as exc:
                if (
                    exc.code is not ErrorCode.RATE_LIMITED
                    or trio.current_time() + pause >= deadline
                ):
                    raise
            await trio.sleep(pause)
            pause = min(2 * pause, 1.0)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        module_name, _, class_name = str(self.ctx.config["app"]).partition(":")
        module = importlib.import_module(module_name)
        app_class = getattr(module, class_name) if class_name else _the_app_in(module)
        app: MiniApp = app_class()
        self._app = app
        self._tools = tools_of(app_class)
        self._running: dict[str, trio.CancelScope] = {}
        self._cancelled: dict[str, p.ToolCancelledEvent] = {}
        scope = self.ctx.identity.name.removeprefix("miniapp:")
        self._context = AppContext(
            self,
            scope,
            str(self.ctx.config.get("instance_id", scope)),
            app_version=str(self.ctx.config.get("app_version", "")),
        )
        await app.start(self._context)
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            nursery.start_soon(self._refresh_context)
            if self._tools:  # calls handed over while the app was down, or before a crash
                pending = await self.call("router", p.ToolPendingRequest(), p.ToolPendingReply)
                for call in pending.calls:
                    self._start_tool(call)
            held: Message | None = None
            while True:
                if held is None:
                    try:
                        event = await self._events_out.receive()
                    except trio.EndOfChannel:
                        return
                else:
                    event, held = held, None
                if isinstance(event, p.DeliveriesEvent | p.DeliveryEvent):
                    if _takes_bursts(app):
                        deliveries, held = self._waiting_deliveries(event)
                        hook = self._both(app.on_deliveries(deliveries), deliveries)
                        await self._hand(hook, deliveries, event.TYPE)
                        continue
                    for delivery in _deliveries_in(event):  # each refused alone
                        hook = self._both(app.on_delivery(delivery), (delivery,))
                        await self._hand(hook, (delivery,), event.TYPE)
                    continue
                try:
                    await _dispatch(app, event, self._context)
                except LineUpError as exc:
                    log.warning("sdk.hook_refused type=%s code=%s", event.TYPE, exc.code.value)

    async def _both(self, hook: Awaitable[None], deliveries: tuple[p.Delivery, ...]) -> None:
        """The app's delivery hook, then its `agent_messages` subscriptions (seed 004 §5.4)."""
        await hook
        await self._context.agent_messages.dispatch(deliveries)

    async def _hand(
        self, hook: Awaitable[None], deliveries: tuple[p.Delivery, ...], kind: str
    ) -> None:
        """Run a delivery hook; if it is refused, its deliveries are offered again later."""
        try:
            await hook
        except LineUpError as exc:
            log.warning("sdk.hook_refused type=%s code=%s", kind, exc.code.value)
            self._offer_again(deliveries)
            return
        for delivery in deliveries:
            self._offers.pop(delivery.delivery_id, None)

    def _offer_again(self, deliveries: tuple[p.Delivery, ...]) -> None:
        offered = max(self._offers.get(d.delivery_id, 0) for d in deliveries)
        if offered == len(REOFFER_PAUSES):
            for delivery in deliveries:
                self._offers.pop(delivery.delivery_id, None)
            log.warning("sdk.deliveries_left_in_inbox count=%d", len(deliveries))
            return
        self._offers.update((d.delivery_id, offered + 1) for d in deliveries)
        self._nursery.start_soon(self._reoffer, deliveries, REOFFER_PAUSES[offered])

    async def _reoffer(self, deliveries: tuple[p.Delivery, ...], pause: float) -> None:
        await trio.sleep(pause)
        try:
            waiting = await self._still_in_inbox(deliveries)
            if waiting:
                self._enqueue(p.DeliveriesEvent(deliveries=waiting))
        except LineUpError as exc:  # not read, or not queued: again after the next pause
            log.info("sdk.deliveries_not_reoffered code=%s", exc.code.value)
            self._offer_again(deliveries)
            return
        taken = {d.delivery_id for d in waiting}
        for delivery in deliveries:
            if delivery.delivery_id not in taken:  # acknowledged meanwhile
                self._offers.pop(delivery.delivery_id, None)

    async def _still_in_inbox(self, deliveries: tuple[p.Delivery, ...]) -> tuple[p.Delivery, ...]:
        """Those of `deliveries` their inboxes still hold, as the inboxes hold them."""
        wanted = {d.delivery_id for d in deliveries}
        found: list[p.Delivery] = []
        for instance_id in dict.fromkeys(d.instance_id for d in deliveries):
            seqs = [d.seq for d in deliveries if d.instance_id == instance_id]
            after, last = max(0, min(seqs) - 1), max(seqs)
            while after < last:
                page = await self._context.inbox.list(
                    after_seq=after, limit=INBOX_PAGE, instance_id=instance_id
                )
                if not page:
                    break
                found.extend(d for d in page if d.delivery_id in wanted)
                after = page[-1].seq
        return tuple(found)

    def _waiting_deliveries(
        self, first: p.DeliveryEvent | p.DeliveriesEvent
    ) -> tuple[tuple[p.Delivery, ...], Message | None]:
        """`first`'s deliveries and those queued right behind it, at most `DELIVERY_BURST`,
        and the next event not taken (what is left of a cut event, or another kind), held
        back so the queue's order holds."""
        deliveries: list[p.Delivery] = []
        batch = first
        while True:
            more = _deliveries_in(batch)
            room = DELIVERY_BURST - len(deliveries)
            deliveries.extend(more[:room])
            if len(more) > room:
                return tuple(deliveries), p.DeliveriesEvent(deliveries=more[room:])
            if len(deliveries) == DELIVERY_BURST:
                return tuple(deliveries), None
            try:
                event = self._events_out.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                return tuple(deliveries), None
            if not isinstance(event, p.DeliveryEvent | p.DeliveriesEvent):
                return tuple(deliveries), event
            batch = event

    async def _refresh_context(self) -> None:
        """The facts focus could not give at the spawn (the conversation, the state): asked
        once the process is up, so the start never waits on the router."""
        mode = self._context.mode
        try:
            reply = await self._context.refresh()
        except LineUpError as exc:
            log.info("sdk.context_not_refreshed code=%s", exc.code.value)
            return
        if reply.mode != mode and reply.mode in MODES:
            # The runtime's record says another mode than the one the app started in (it was
            # switched before a restart): the app is told, as of a restoration.
            self._enqueue(
                p.ModeChangedEvent(instance_id=reply.instance_id, mode=reply.mode, restored=True)
            )

    # ------------------------------------------------------------------ tools

    def _start_tool(self, event: p.ToolCallEvent) -> None:
        if event.call_id not in self._running:  # told twice (pushed and listed): taken once
            self._running[event.call_id] = trio.CancelScope()
            self._nursery.start_soon(self._run_tool, event)

    async def _run_tool(self, event: p.ToolCallEvent) -> None:
        spec = self._tools.get(event.tool)
        try:
            with self._running[event.call_id]:
                # Taken first: a call the runtime refuses (decided meanwhile, not ours) is not
                # run, and the refusal's code is logged, not lost.
                await self.call(
                    "router", p.ToolAcceptRequest(call_id=event.call_id), p.CommandReceipt
                )
                if spec is None:
                    await self.fail(event.call_id, ErrorCode.TOOL_NOT_ADVERTISED.value)
                    return
                await dispatch_tool(
                    self._app, spec, event.call_id, event.tool, event.instance_id, event.input, self
                )
        except LineUpError as exc:
            log.warning("sdk.tool_refused call=%s code=%s", event.call_id, exc.code.value)
        finally:
            self._running.pop(event.call_id, None)
            cancelled = self._cancelled.pop(event.call_id, None)
            if cancelled is not None:
                self._enqueue(cancelled)

    async def progress(self, call_id: str, progress: dict[str, Any]) -> None:
        await self.call(
            "router", p.ToolProgressRequest(call_id=call_id, progress=progress), p.CommandReceipt
        )

    async def complete(self, call_id: str, result: dict[str, Any]) -> None:
        await self.call(
            "router", p.ToolCompleteRequest(call_id=call_id, result=result), p.CommandReceipt
        )

    async def fail(self, call_id: str, code: str, message: str = "") -> None:
        await self.call(
            "router",
            p.ToolFailRequest(call_id=call_id, code=code, message=message[:1000]),
            p.CommandReceipt,
        )

    async def cancel(self, call_id: str, reason: str) -> None:
        await self.call(
            "router", p.ToolCancelRequest(call_id=call_id, reason=reason), p.CommandReceipt
        )

    @handles(p.UiToolCallEvent)
    def on_ui_tool_call(self, msg: p.UiToolCallEvent, env: Envelope) -> None:
        self._nursery.start_soon(self._run_ui_tool, msg)

    async def _run_ui_tool(self, msg: p.UiToolCallEvent) -> None:
        """Run a tool for the app's own Surface and tell focus its outcome (the module's
        docstring). A handler that completes later (through its `ToolCall`) is waited for,
        within UI_TOOL_CALL_TIMEOUT_S."""
        spec = self._tools.get(msg.tool)
        sink = _UiSink(self, msg.call_id)
        if spec is None:
            await sink.fail(msg.call_id, ErrorCode.TOOL_NOT_ADVERTISED.value)
        else:
            with trio.move_on_after(UI_TOOL_CALL_TIMEOUT_S):
                await dispatch_tool(
                    self._app, spec, msg.call_id, msg.tool, msg.instance_id, msg.input, sink
                )
                await sink.done.wait()
        done = sink.outcome or p.UiToolCallDoneRequest(
            call_id=msg.call_id, code=ErrorCode.DEADLINE_EXCEEDED.value
        )
        try:
            await self.call("focus", done, p.CommandReceipt)
        except LineUpError as exc:  # focus gave up on it, or restarted: the page was answered
            log.info("sdk.ui_tool_outcome_not_told code=%s", exc.code.value)

    @handles(p.SessionDataEvent)
    def on_session_data(self, msg: p.SessionDataEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.AppStateChangedEvent)
    def on_state_changed(self, msg: p.AppStateChangedEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.OperationEndedEvent)
    def on_operation_ended(self, msg: p.OperationEndedEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.ToolCallEvent)
    def on_tool_call(self, msg: p.ToolCallEvent, env: Envelope) -> None:
        self._start_tool(msg)

    @handles(p.ToolCancelledEvent)
    def on_tool_cancelled(self, msg: p.ToolCancelledEvent, env: Envelope) -> None:
        running = self._running.get(msg.call_id)
        if running is None:
            self._enqueue(msg)
            return
        # Stop the handler; the app's hook runs once it has really stopped (`_run_tool`).
        self._cancelled[msg.call_id] = msg
        running.cancel()

    def _enqueue(self, event: Message) -> None:
        try:
            self._events_in.send_nowait(event)
        except trio.WouldBlock:
            # Deliveries stay in the inbox; a refresh re-reads it.
            raise LineUpError(ErrorCode.MAILBOX_FULL, event.TYPE) from None

    @handles(p.DeliveryEvent)
    def on_delivery(self, msg: p.DeliveryEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.DeliveriesEvent)
    def on_delivery_batch(self, msg: p.DeliveriesEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.UiEvent)
    def on_ui_event(self, msg: p.UiEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.ConversationUpdatedEvent)
    def on_conversation_updated(self, msg: p.ConversationUpdatedEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.ViewRefreshEvent)
    def on_view_refresh(self, msg: p.ViewRefreshEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.SurfaceEvent)
    def on_surface_event(self, msg: p.SurfaceEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.SurfaceClosedEvent)
    def on_surface_closed(self, msg: p.SurfaceClosedEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.ModeChangedEvent)
    def on_mode_changed(self, msg: p.ModeChangedEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.InteractionUpdatedEvent)
    def on_interaction_updated(self, msg: p.InteractionUpdatedEvent, env: Envelope) -> None:
        self._context.ui._updated(msg.interaction)  # a `wait` (maybe in a hook) goes on now
        self._enqueue(msg)


class _UiSink:
    """Where a Surface's own call of a tool ends (`ToolSink`): held, then told to focus."""

    def __init__(self, host: MiniAppHost, call_id: str) -> None:
        self._host = host
        self._call_id = call_id
        self.done = trio.Event()
        self.outcome: p.UiToolCallDoneRequest | None = None

    async def progress(self, call_id: str, progress: dict[str, Any]) -> None:
        """To the page that asked (`notifications/progress`), through focus."""
        if self.outcome is not None:
            return
        try:
            await self._host.call(
                "focus",
                p.UiToolProgressRequest(call_id=call_id, progress=progress),
                p.CommandReceipt,
            )
        except LineUpError as exc:  # the page gets the result all the same
            log.info("sdk.ui_progress_not_sent code=%s", exc.code.value)

    async def complete(self, call_id: str, result: dict[str, Any]) -> None:
        self._end(p.UiToolCallDoneRequest(call_id=self._call_id, result=result))

    async def fail(self, call_id: str, code: str, message: str = "") -> None:
        self._end(p.UiToolCallDoneRequest(call_id=self._call_id, code=code[:100]))

    async def cancel(self, call_id: str, reason: str) -> None:
        self._end(p.UiToolCallDoneRequest(call_id=self._call_id, code=reason[:100]))

    def _end(self, outcome: p.UiToolCallDoneRequest) -> None:
        if self.outcome is None:
            self.outcome = outcome
            self.done.set()


def _deliveries_in(event: p.DeliveryEvent | p.DeliveriesEvent) -> tuple[p.Delivery, ...]:
    return (event.delivery,) if isinstance(event, p.DeliveryEvent) else event.deliveries


def _takes_bursts(app: MiniApp) -> bool:
    # An app that keeps the default gets one `on_delivery` per event, each refused alone.
    return type(app).on_deliveries is not MiniApp.on_deliveries


def _the_app_in(module: ModuleType) -> type[MiniApp]:
    """The one MiniApp class a package exports with an `app_info` (a development app)."""
    found = apps_in(module)
    if len(found) != 1:
        raise LineUpError(ErrorCode.APP_NOT_INSTALLED, f"{module.__name__}: no single MiniApp")
    return found.pop()


async def _dispatch(app: MiniApp, event: Message, context: AppContext) -> None:
    if isinstance(event, p.SessionDataEvent):
        await context.session_data._updated(event)
    elif isinstance(event, p.UiEvent):
        await app.on_ui_event(event)
    elif isinstance(event, p.ConversationUpdatedEvent):
        await app.on_conversation_updated(event)
    elif isinstance(event, p.ViewRefreshEvent):
        await app.on_view_refresh()
        await context.state._resubscribe()  # a restarted focus forgot its subscribers
    elif isinstance(event, p.ToolCancelledEvent):
        await app.on_tool_cancelled(event.call_id, event.code)
    elif isinstance(event, p.OperationEndedEvent):
        await app.on_operation_ended(event.operation)
    elif isinstance(event, p.InteractionUpdatedEvent):
        await app.on_interaction_updated(event.interaction)
    elif isinstance(event, p.SurfaceEvent):
        await app.on_surface_event(event)
    elif isinstance(event, p.SurfaceClosedEvent):
        await app.on_surface_closed(event)
    elif isinstance(event, p.ModeChangedEvent):
        context._mode_changed(event)
        await app.on_mode_changed(event)
    elif isinstance(event, p.AppStateChangedEvent):
        await context.state._changed(event.view)
