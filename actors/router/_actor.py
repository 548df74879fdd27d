"""The router: inbound envelopes through the filter chain into app inboxes; MiniApps' writes
through checks into the store and the outbox (DESIGN §4).

Theory of operation
-------------------
The actor holds the handlers; the work is its services'. The Agent's envelopes go through
`_inbound` (persist, then acknowledge, then deliver; poison quarantined), and the app is told
by `_deliveries` (the fast path: the inbox is the reliable one, which the SDK lists whenever the
app starts; `_redelivery` tells again what waited there too long). An app's inbox, texts and
history are `_conversation`'s. An Agent's tool call is checked and routed by the
`_pipeline`, each of its steps is `_tools`', and what the app does with it `_app_calls`'; the
inventory it is checked against is `_inventory`'s; a call whose end the runtime owns (a
deadline operation) is `_operations`'. Questions to the user are
`_interactions`' (a MiniApp's own, `_app_questions`'), app sub-sessions `_app_sessions`'; an
instance's ending, which touches all three, is `_lifecycle`'s. Everything they send the Agent
goes through one outbox writer (`_outbox`), in the session the transport logged in to
(`_session`).

Ids (`_ids`): the runtime mints every outbound id; an app's `message_id` is its client id, which
the app sees back (receipts, history, updates) and the Agent never does.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from lineup.actors.focus.messages import (
    FindInstanceRequest,
    InstanceContextReply,
    InstanceContextRequest,
    InstanceReply,
)
from lineup.actors.kernel import Actor, ActorKind, Envelope, LineUpError, app_scope_of, handles
from lineup.facts.modes import NO_MODE
from lineup.sdk import protocol as sdk

from ._app_calls import AppCalls
from ._app_context import AppContexts
from ._app_questions import AppQuestions
from ._app_sessions import AppSessions
from ._conversation import AppConversation
from ._deliveries import Deliveries
from ._inbound import Inbound
from ._interactions import InteractionService
from ._inventory import Inventory
from ._lifecycle import InstanceLifecycle
from ._operations import DeadlineOperations
from ._pipeline import ToolPipeline
from ._redelivery import Redelivery
from ._session import SessionCache
from ._surface_messages import SurfaceMessages
from ._tools import ToolCalls
from ._views import session_view_of
from .messages import (
    AppSessionContinueReply,
    AppSessionContinueRequest,
    InboundEnvelopesReply,
    InboundEnvelopesRequest,
    InstanceEvent,
    InstanceIndexEvent,
    InstancesRecoveredEvent,
    InteractionAnswerReply,
    InteractionAnswerRequest,
    InteractionsListReply,
    InteractionsListRequest,
    InventoryChangedEvent,
    OutboxSettledEvent,
    SessionStartedEvent,
    SurfaceAgentMessagesReply,
    SurfaceAgentMessagesRequest,
    SurfaceAskReply,
    SurfaceAskRequest,
    SurfaceContextReply,
    SurfaceContextRequest,
)

__all__ = ["RouterActor"]

log = logging.getLogger("lineup.router")
RECONCILE_S: Final = 5.0  # between two looks for an instance event that never arrived
NOTIFY_TIMEOUT: Final = 5.0  # an app that is not up by then finds the delivery in its inbox


class RouterActor(Actor):
    kind = ActorKind.ROUTER

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        me = self.ctx.identity
        self.session = SessionCache(self.bus)
        self.deliveries = Deliveries(self.bus, self._soon)
        self.conversation = AppConversation(self.bus, me, self.session, self.deliveries.tell_app)
        self.surface_messages = SurfaceMessages(self.bus, me.name, self.conversation, self._soon)
        self.deliveries.on_told = self.surface_messages.told
        self.inventory = Inventory(self.bus, self.session.get)
        self.calls = ToolCalls(self.bus, me, self.session.get, self.inventory)
        self.tools = ToolPipeline(self.calls, self.inventory)
        self.app_calls = AppCalls(self.calls)
        self.operations = DeadlineOperations(self.calls)
        self.interactions = InteractionService(self.bus, me, self.session.get)
        self.questions = AppQuestions(self.interactions)
        self.sessions = AppSessions(self.bus, self.session.get)
        self.contexts = AppContexts(self.bus, me, self.session.get)
        self.lifecycle = InstanceLifecycle(self.bus, self.calls, self.interactions, self.sessions)
        self.redelivery = Redelivery(
            self.bus, self.session.conversation_or_none, self.deliveries.tell
        )
        self.inbound = Inbound(
            self.bus,
            me,
            self.inventory,
            self.tools,
            self.interactions,
            self.sessions,
            self.deliveries.tell,
        )
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await nursery.start(self.tools.run)
            await nursery.start(self.interactions.run)
            await nursery.start(self.operations.run)
            nursery.start_soon(self.lifecycle.sweep)  # what a lost event left undone
            nursery.start_soon(self._reconcile)
            task_status.started()
            await trio.sleep_forever()

    def _soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        self._nursery.start_soon(fn, *args)

    async def _reconcile(self) -> None:
        """Events are a fast path; this makes up for one lost while both processes run (a tell
        that found no channel in time, a router killed before it told). Focus's instance
        events, within two rounds: a call's instance counts as ended only when it was missing
        from the live ones in two rounds in a row, since focus may bind a call to an instance
        a moment before that instance's row commits. And deliveries an app has not taken
        (`_redelivery`)."""
        missing: set[str] = set()
        while True:
            await trio.sleep(RECONCILE_S)
            await self.lifecycle.sweep()  # reads the sessions before the live instances
            try:
                live = await self.tools.live()
                await self.redelivery.round(live)
                alive = {row.instance_id for row in live}
                missing = await self.tools.sweep_ended(alive, confirmed=missing)
            except LineUpError as exc:
                log.warning("router.reconcile_failed code=%s", exc.code.value)

    # ------------------------------------------------------------------ inbound (from the Agent)

    @handles(InboundEnvelopesRequest)
    async def on_inbound(
        self, msg: InboundEnvelopesRequest, env: Envelope
    ) -> InboundEnvelopesReply:
        return await self.inbound.receive(msg, env)

    # ------------------------------------------------------------------ the MiniApp side

    @handles(sdk.InboxListRequest)
    async def on_inbox_list(self, msg: sdk.InboxListRequest, env: Envelope) -> sdk.InboxListReply:
        return await self.conversation.inbox_list(app_scope_of(env.sender), msg)

    @handles(sdk.InboxAckRequest)
    async def on_inbox_ack(self, msg: sdk.InboxAckRequest, env: Envelope) -> sdk.CommandReceipt:
        return await self.conversation.inbox_ack(app_scope_of(env.sender), env.sender.name, msg)

    @handles(sdk.InboxAckManyRequest)
    async def on_inbox_ack_many(
        self, msg: sdk.InboxAckManyRequest, env: Envelope
    ) -> sdk.InboxAckManyReply:
        scope = app_scope_of(env.sender)
        return await self.conversation.inbox_ack_many(scope, env.sender.name, msg)

    @handles(sdk.ConversationSendTextRequest)
    async def on_send_text(
        self, msg: sdk.ConversationSendTextRequest, env: Envelope
    ) -> sdk.CommandReceipt:
        return await self.conversation.send_text(app_scope_of(env.sender), msg)

    @handles(sdk.ConversationRetryRequest)
    async def on_retry(
        self, msg: sdk.ConversationRetryRequest, env: Envelope
    ) -> sdk.CommandReceipt:
        return await self.conversation.retry(app_scope_of(env.sender), msg)

    @handles(sdk.ConversationHistoryRequest)
    async def on_history(
        self, msg: sdk.ConversationHistoryRequest, env: Envelope
    ) -> sdk.ConversationHistoryReply:
        return await self.conversation.history(app_scope_of(env.sender), msg)

    # ------------------------------------------------------------------ tools

    @handles(sdk.ToolProgressRequest)
    async def on_tool_progress(
        self, msg: sdk.ToolProgressRequest, env: Envelope
    ) -> sdk.CommandReceipt:
        return await self.app_calls.progress(env.sender, msg)

    @handles(sdk.ToolCompleteRequest)
    async def on_tool_complete(
        self, msg: sdk.ToolCompleteRequest, env: Envelope
    ) -> sdk.CommandReceipt:
        return await self.app_calls.complete(env.sender, msg)

    @handles(sdk.ToolFailRequest)
    async def on_tool_fail(self, msg: sdk.ToolFailRequest, env: Envelope) -> sdk.CommandReceipt:
        return await self.app_calls.fail(env.sender, msg)

    @handles(sdk.ToolCancelRequest)
    async def on_tool_cancel(self, msg: sdk.ToolCancelRequest, env: Envelope) -> sdk.CommandReceipt:
        return await self.app_calls.cancel(env.sender, msg)

    @handles(InstancesRecoveredEvent)
    async def on_instances_recovered(self, msg: InstancesRecoveredEvent, env: Envelope) -> None:
        self._nursery.start_soon(self.tools.sweep_ended)
        self._nursery.start_soon(self.lifecycle.sweep)

    @handles(sdk.ToolAcceptRequest)
    async def on_tool_accept(self, msg: sdk.ToolAcceptRequest, env: Envelope) -> sdk.CommandReceipt:
        return await self.app_calls.accept_call(env.sender, msg)

    @handles(sdk.ToolPendingRequest)
    async def on_tool_pending(
        self, msg: sdk.ToolPendingRequest, env: Envelope
    ) -> sdk.ToolPendingReply:
        return await self.app_calls.pending(env.sender)

    @handles(sdk.OperationStartRequest)
    async def on_operation_start(
        self, msg: sdk.OperationStartRequest, env: Envelope
    ) -> sdk.OperationReply:
        return await self.operations.start(env.sender, msg)

    @handles(sdk.OperationInterruptRequest)
    async def on_operation_interrupt(
        self, msg: sdk.OperationInterruptRequest, env: Envelope
    ) -> sdk.OperationInterruptReply:
        return await self.operations.interrupt(env.sender, msg)

    @handles(sdk.OperationListRequest)
    async def on_operation_list(
        self, msg: sdk.OperationListRequest, env: Envelope
    ) -> sdk.OperationListReply:
        return await self.operations.list(env.sender, msg)

    @handles(SessionStartedEvent)
    async def on_session_started(self, msg: SessionStartedEvent, env: Envelope) -> None:
        self.session.forget()
        await self.inventory.publish()
        self._nursery.start_soon(self.conversation.refresh_stale_histories)
        # Instances started while never logged in have no sub-session yet.
        self._nursery.start_soon(self.lifecycle.sweep)

    @handles(InventoryChangedEvent)
    async def on_inventory_changed(self, msg: InventoryChangedEvent, env: Envelope) -> None:
        await self.inventory.publish()

    @handles(InstanceIndexEvent)
    def on_instance_index(self, msg: InstanceIndexEvent, env: Envelope) -> None:
        # Synchronous, as `on_instance_event`: taken in the order focus told it, so an index is
        # in place before the `started` focus told after it.
        self.tools.index.update(msg)

    @handles(InstanceEvent)
    def on_instance_event(self, msg: InstanceEvent, env: Envelope) -> None:
        # Focus tells, never asks: the reaction runs here, and focus has already moved on.
        # Not async: a synchronous handler runs as its event arrives, so an instance's events
        # are taken in the order focus told them (an async one would be a task each, run in
        # either order by trio).
        if msg.event == "started":
            self.tools.instance_started(msg.app_scope)
            self._nursery.start_soon(self._guarded_event, self.sessions.opened, msg)
        elif msg.event == "ready":
            self._nursery.start_soon(self.calls.release, msg.instance_id, msg.app_scope)
        elif msg.event in ("ended", "failed"):
            self.surface_messages.ended(msg.instance_id)
            # One task, in order: the calls converge, then the sub-session closes (seed 000
            # §7.3). A converge that fails takes the router down, as it always did: its start
            # sweeps both.
            self._nursery.start_soon(
                self.lifecycle.ended, msg.instance_id, msg.app_scope, msg.event == "failed"
            )

    async def _guarded_event(
        self, work: Callable[[str, str], Awaitable[None]], msg: InstanceEvent
    ) -> None:
        """A reaction to an instance event that failed (the store did not answer in time) is made
        up by a sweep, run at once: logged, never fatal. (A sweep also runs at start, on focus's
        recovery and after a login, for events that never arrived.)"""
        try:
            await work(msg.instance_id, msg.app_scope)
        except LineUpError as exc:
            log.warning("router.instance_event_failed event=%s code=%s", msg.event, exc.code.value)
            await self.lifecycle.sweep()

    # ------------------------------------------------------------------ interactions

    @handles(InteractionsListRequest)
    async def on_interactions_list(
        self, msg: InteractionsListRequest, env: Envelope
    ) -> InteractionsListReply:
        return await self.interactions.list(msg)

    @handles(InteractionAnswerRequest)
    async def on_interaction_answer(
        self, msg: InteractionAnswerRequest, env: Envelope
    ) -> InteractionAnswerReply:
        return await self.interactions.answer(msg)

    @handles(AppSessionContinueRequest)
    async def on_app_session_continue(
        self, msg: AppSessionContinueRequest, env: Envelope
    ) -> AppSessionContinueReply:
        row = await self.sessions.continue_(msg.app_session_id)
        return AppSessionContinueReply(session=session_view_of(row))

    @handles(SurfaceAgentMessagesRequest)
    async def on_surface_agent_messages(
        self, msg: SurfaceAgentMessagesRequest, env: Envelope
    ) -> SurfaceAgentMessagesReply:
        return await self.surface_messages.request(msg, env.sender.name)

    @handles(SurfaceAskRequest)
    async def on_surface_ask(self, msg: SurfaceAskRequest, env: Envelope) -> SurfaceAskReply:
        return await self.questions.surface_ask(msg, env.sender.name)

    @handles(SurfaceContextRequest)
    async def on_surface_context(
        self, msg: SurfaceContextRequest, env: Envelope
    ) -> SurfaceContextReply:
        return await self.contexts.update(msg, env.sender.name)

    @handles(sdk.InteractionAskRequest)
    async def on_ui_request(
        self, msg: sdk.InteractionAskRequest, env: Envelope
    ) -> sdk.InteractionReceipt:
        return await self.questions.request(env.sender, msg)

    @handles(sdk.InteractionGetRequest)
    async def on_ui_get(
        self, msg: sdk.InteractionGetRequest, env: Envelope
    ) -> sdk.InteractionReceipt:
        return await self.questions.get(env.sender, msg)

    @handles(sdk.InteractionCancelRequest)
    async def on_ui_cancel(
        self, msg: sdk.InteractionCancelRequest, env: Envelope
    ) -> sdk.InteractionReceipt:
        return await self.questions.cancel(env.sender, msg)

    @handles(sdk.ContextRequest)
    async def on_context(self, msg: sdk.ContextRequest, env: Envelope) -> sdk.ContextReply:
        """The runtime's facts about one of the sender's instances: its scope from the channel,
        the state from focus, the conversation from the session (none before a login), the
        deadline operation it serves from the store."""
        scope = app_scope_of(env.sender)
        instance = await self.bus.request(
            "focus",
            FindInstanceRequest(app_scope=scope, instance_id=msg.instance_id),
            expect=InstanceReply,
            timeout=NOTIFY_TIMEOUT,
            retry=True,
        )
        facts = await self.bus.request(
            "focus",
            InstanceContextRequest(app_scope=scope, instance_id=instance.instance_id),
            expect=InstanceContextReply,
            timeout=NOTIFY_TIMEOUT,
            retry=True,
        )
        conversation_id = await self.session.conversation_or_none()
        return sdk.ContextReply(
            app_scope=scope,
            kind=facts.kind,
            entrypoint=facts.entrypoint,
            scope=sdk.AppContextScope(
                conversation_id=conversation_id,
                operation_id=await self.operations.serving(scope, instance.instance_id),
                parent_instance_id=facts.parent_instance_id,
            ),
            granted_permissions=facts.granted_permissions,
            instance_id=instance.instance_id,
            conversation_id=conversation_id,
            state=instance.state,
            mode=instance.mode or NO_MODE,  # the chat's recorded mode (seed 003 §5.1)
            parent_instance_id=instance.parent_instance_id,
        )

    # ------------------------------------------------------------------ outbound results

    @handles(OutboxSettledEvent)
    async def on_outbox_settled(self, msg: OutboxSettledEvent, env: Envelope) -> None:
        if msg.call_id is not None:
            # A call's result: if it answered a question, the store settled it with the row.
            await self.interactions.settled(msg.call_id)
        elif msg.message_id is not None:
            await self.conversation.settled(msg.message_id, msg)
