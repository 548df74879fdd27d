"""The router: inbound envelopes through the filter chain into app inboxes; MiniApps' writes
through checks into the store and the outbox (DESIGN §4).

Theory of operation
-------------------
The actor holds the handlers; the work is its services'. The Agent's envelopes go through
`_inbound` (persist, then acknowledge, then deliver; poison quarantined), and the app is told
by `_deliveries` (the fast path: the inbox is the reliable one, which the SDK lists whenever the
app starts; `_redelivery` tells again what waited there too long). Tool calls are the
`_tools` pipeline's, questions to the user `_interactions`', app sub-sessions
`_app_sessions`'; an instance's ending, which touches all three, is `_lifecycle`'s. Everything
they send the Agent goes through one outbox writer (`_outbox`).

Ids (`_ids`): the runtime mints every outbound id; an app's `message_id` is its client id, which
the app sees back (receipts, history, updates) and the Agent never does.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from lineup import wire
from lineup.actors.focus.messages import FindInstanceRequest, InstanceReply
from lineup.actors.kernel import (
    Actor,
    ActorKind,
    AuditRecord,
    Envelope,
    ErrorCode,
    LineUpError,
    app_scope_of,
    handles,
)
from lineup.actors.store.messages import (
    ConversationHistoryReply,
    ConversationHistoryRequest,
    ConversationMessageReply,
    ConversationMessageRequest,
    ConversationSendReply,
    ConversationSendRequest,
    CursorGetReply,
    CursorGetRequest,
    InboxAckManyReply,
    InboxAckReply,
    InboxListReply,
    MessageRow,
    OutboxRetryReply,
    OutboxRetryRequest,
)
from lineup.actors.store.messages import InboxAckManyRequest as StoreInboxAckMany
from lineup.actors.store.messages import InboxAckRequest as StoreInboxAck
from lineup.actors.store.messages import InboxListRequest as StoreInboxList
from lineup.facts.link import SESSION_CURSOR
from lineup.facts.scopes import CHAT
from lineup.sdk import protocol as sdk

from . import _ids as ids
from ._app_sessions import AppSessions, view_of
from ._deliveries import Deliveries
from ._inbound import Inbound
from ._interactions import InteractionService
from ._lifecycle import InstanceLifecycle
from ._outbox import envelope_of, wake
from ._redelivery import Redelivery, delivery_of
from ._tools import ToolPipeline
from .messages import (
    AppSessionContinueReply,
    AppSessionContinueRequest,
    InboundEnvelopesReply,
    InboundEnvelopesRequest,
    InstanceEvent,
    InstancesRecoveredEvent,
    InteractionAnswerReply,
    InteractionAnswerRequest,
    InteractionsListReply,
    InteractionsListRequest,
    InventoryChangedEvent,
    OutboxSettledEvent,
    SessionStartedEvent,
    SurfaceAskReply,
    SurfaceAskRequest,
)

__all__ = ["RouterActor"]

log = logging.getLogger("lineup.router")
SESSION_TTL: Final = 1.0  # seconds a read of it is reused
RECONCILE_S: Final = 5.0  # between two looks for an instance event that never arrived
NOTIFY_TIMEOUT: Final = 5.0  # an app that is not up by then finds the delivery in its inbox
TEXT: Final = wire.TEXT


class RouterActor(Actor):
    kind = ActorKind.ROUTER

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self._session_seen: tuple[float, dict[str, str]] | None = None
        # Per app: the conversation its last history read was of (None: there was no session).
        self._history_of: dict[str, str | None] = {}
        self.deliveries = Deliveries(self.bus, self._soon)
        self.interactions = InteractionService(self.bus, self.ctx.identity, self._session)
        self.tools = ToolPipeline(
            self.bus, self.ctx.identity, self._session, interactive=self.interactions.ask
        )
        self.sessions = AppSessions(self.bus, self._session)
        self.lifecycle = InstanceLifecycle(self.bus, self.tools, self.interactions, self.sessions)
        self.redelivery = Redelivery(self.bus, self._conversation_or_none, self.deliveries.tell)
        self.inbound = Inbound(
            self.bus,
            self.ctx.identity,
            self.tools,
            self.interactions,
            self.sessions,
            self.deliveries.tell,
        )
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await nursery.start(self.tools.run)
            await nursery.start(self.interactions.run)
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

    # An app's inbox is `app_scope + conversation_id + instance_id` (seed 003 §3.1): the scope
    # comes from its channel and the conversation from the session, never from the app; the
    # instance is the one it names. Naming an instance of another app finds nothing, since the
    # scope is part of the key, so the name needs no check with focus.

    @handles(sdk.InboxListRequest)
    async def on_inbox_list(self, msg: sdk.InboxListRequest, env: Envelope) -> sdk.InboxListReply:
        scope = app_scope_of(env.sender)
        conversation_id = await self._conversation_or_none()
        if conversation_id is None:
            return sdk.InboxListReply(deliveries=())  # never logged in: nothing was delivered
        page = await self.bus.request(
            "store",
            StoreInboxList(
                app_scope=scope,
                conversation_id=conversation_id,
                instance_id=msg.instance_id,
                after_seq=msg.after_seq,
                limit=msg.limit,
            ),
            expect=InboxListReply,
        )
        return sdk.InboxListReply(deliveries=tuple(delivery_of(row) for row in page.rows))

    @handles(sdk.InboxAckRequest)
    async def on_inbox_ack(self, msg: sdk.InboxAckRequest, env: Envelope) -> sdk.CommandReceipt:
        scope = app_scope_of(env.sender)
        conversation_id = await self._conversation_or_none()
        if conversation_id is None:
            return sdk.CommandReceipt(id=msg.delivery_id, changed=False)
        reply = await self.bus.request(
            "store",
            StoreInboxAck(
                app_scope=scope,
                conversation_id=conversation_id,
                instance_id=msg.instance_id,
                delivery_id=msg.delivery_id,
            ),
            expect=InboxAckReply,
        )
        if reply.foreign:  # the app learns only that nothing changed; the audit learns why
            self.bus.audit(
                AuditRecord.scope_denied(
                    self.ctx.identity.name, env.sender.name, msg.TYPE, msg.delivery_id
                )
            )
        return sdk.CommandReceipt(id=msg.delivery_id, changed=reply.acked)

    @handles(sdk.InboxAckManyRequest)
    async def on_inbox_ack_many(
        self, msg: sdk.InboxAckManyRequest, env: Envelope
    ) -> sdk.InboxAckManyReply:
        scope = app_scope_of(env.sender)
        conversation_id = await self._conversation_or_none()
        if conversation_id is None:
            return sdk.InboxAckManyReply(acked=())
        reply = await self.bus.request(
            "store",
            StoreInboxAckMany(
                app_scope=scope,
                conversation_id=conversation_id,
                instance_id=msg.instance_id,
                delivery_ids=msg.delivery_ids,
            ),
            expect=InboxAckManyReply,
        )
        for delivery_id in reply.foreign:  # as for one: the app learns only "not acked"
            self.bus.audit(
                AuditRecord.scope_denied(
                    self.ctx.identity.name, env.sender.name, msg.TYPE, delivery_id
                )
            )
        return sdk.InboxAckManyReply(acked=reply.acked)

    @handles(sdk.ConversationSendTextRequest)
    async def on_send_text(
        self, msg: sdk.ConversationSendTextRequest, env: Envelope
    ) -> sdk.CommandReceipt:
        scope = app_scope_of(env.sender)
        session = await self._session()
        # The app's id is its client id: the message's own is the runtime's (a repeat of the
        # client id finds the first one, and this fresh id is dropped with its envelope).
        message_id = ids.message_id()
        body = envelope_of(
            session,
            wire.TEXT,
            wire.TextPayload(markdown=msg.markdown),
            message_id,
            # The legacy rule, backwards: chat's messages carry no scope.
            app_scope=scope if scope != CHAT else None,
        )
        reply = await self.bus.request(
            "store",
            ConversationSendRequest(
                message_id=message_id,
                client_id=msg.message_id,
                conversation_id=session["conversation_id"],
                app_scope=scope,
                kind=TEXT,
                body={"markdown": msg.markdown},
                wire=body,
            ),
            expect=ConversationSendReply,
            idempotency_key=msg.message_id,
        )
        await wake(self.bus)
        return sdk.CommandReceipt(id=msg.message_id, seq=reply.seq, changed=reply.created)

    @handles(sdk.ConversationRetryRequest)
    async def on_retry(
        self, msg: sdk.ConversationRetryRequest, env: Envelope
    ) -> sdk.CommandReceipt:
        scope = app_scope_of(env.sender)
        outbox_id = await self._own_message(msg.message_id, scope)
        reply = await self.bus.request(
            "store", OutboxRetryRequest(outbox_id=outbox_id), expect=OutboxRetryReply
        )
        await wake(self.bus)
        return sdk.CommandReceipt(id=msg.message_id, changed=reply.changed)

    @handles(sdk.ConversationHistoryRequest)
    async def on_history(
        self, msg: sdk.ConversationHistoryRequest, env: Envelope
    ) -> sdk.ConversationHistoryReply:
        scope = app_scope_of(env.sender)
        try:
            session = await self._session()
        except LineUpError as exc:
            if exc.code is not ErrorCode.NOT_CONNECTED:
                raise
            # Never logged in (the AppServer has been unreachable since the first start, or
            # the session's record was quarantined): no conversation yet, so its history is
            # empty, not an error. The app is told to read again once there is one.
            self._history_of[scope] = None
            return sdk.ConversationHistoryReply(items=())
        self._history_of[scope] = session["conversation_id"]
        page = await self.bus.request(
            "store",
            ConversationHistoryRequest(
                conversation_id=session["conversation_id"], after_seq=msg.after_seq, limit=msg.limit
            ),
            expect=ConversationHistoryReply,
        )
        items = []
        for row in page.rows:
            if row.app_scope != scope or row.kind != TEXT:
                continue
            markdown = _markdown_of(row.body)
            items.append(
                sdk.ConversationItem(
                    message_id=_app_id(row),
                    seq=row.seq,
                    author="agent" if row.direction == "inbound" else "user",
                    state=row.state,
                    markdown=markdown,
                    at=row.created_at,
                    app_session_id=_app_session_of(row) if row.direction == "inbound" else None,
                )
            )
        return sdk.ConversationHistoryReply(items=tuple(items))

    # ------------------------------------------------------------------ tools

    @handles(sdk.ToolProgressRequest)
    async def on_tool_progress(
        self, msg: sdk.ToolProgressRequest, env: Envelope
    ) -> sdk.CommandReceipt:
        return await self.tools.progress(env.sender, msg)

    @handles(sdk.ToolCompleteRequest)
    async def on_tool_complete(
        self, msg: sdk.ToolCompleteRequest, env: Envelope
    ) -> sdk.CommandReceipt:
        return await self.tools.complete(env.sender, msg)

    @handles(sdk.ToolFailRequest)
    async def on_tool_fail(self, msg: sdk.ToolFailRequest, env: Envelope) -> sdk.CommandReceipt:
        return await self.tools.fail(env.sender, msg)

    @handles(sdk.ToolCancelRequest)
    async def on_tool_cancel(self, msg: sdk.ToolCancelRequest, env: Envelope) -> sdk.CommandReceipt:
        return await self.tools.cancel(env.sender, msg)

    @handles(InstancesRecoveredEvent)
    async def on_instances_recovered(self, msg: InstancesRecoveredEvent, env: Envelope) -> None:
        self._nursery.start_soon(self.tools.sweep_ended)
        self._nursery.start_soon(self.lifecycle.sweep)

    @handles(sdk.ToolAcceptRequest)
    async def on_tool_accept(self, msg: sdk.ToolAcceptRequest, env: Envelope) -> sdk.CommandReceipt:
        return await self.tools.accept_call(env.sender, msg)

    @handles(sdk.ToolPendingRequest)
    async def on_tool_pending(
        self, msg: sdk.ToolPendingRequest, env: Envelope
    ) -> sdk.ToolPendingReply:
        return await self.tools.pending(env.sender)

    @handles(SessionStartedEvent)
    async def on_session_started(self, msg: SessionStartedEvent, env: Envelope) -> None:
        self._session_seen = None
        await self.tools.publish_inventory()
        self._nursery.start_soon(self._refresh_stale_histories)
        # Instances started while never logged in have no sub-session yet.
        self._nursery.start_soon(self.lifecycle.sweep)

    @handles(InventoryChangedEvent)
    async def on_inventory_changed(self, msg: InventoryChangedEvent, env: Envelope) -> None:
        await self.tools.publish_inventory()

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
            self._nursery.start_soon(self.tools.release, msg.instance_id, msg.app_scope)
        elif msg.event in ("ended", "failed"):
            # One task, in order: the calls converge, then the sub-session closes (seed 000
            # §7.3). A converge that fails takes the router down, as it always did: its start
            # sweeps both.
            self._nursery.start_soon(
                self.lifecycle.ended, msg.instance_id, msg.app_scope, msg.event == "failed"
            )

    async def _refresh_stale_histories(self) -> None:
        """Each app whose last history read was of another conversation than the session's
        (or of none: read before the first login) is told to read again, so a timeline
        rebuilt while the session was unknown does not stay empty."""
        try:
            conversation = await self._conversation_or_none()
        except LineUpError as exc:  # the store busy or restarting: the next login tries again
            log.info("router.histories_not_checked code=%s", exc.code.value)
            return
        stale = [s for s, read in self._history_of.items() if read != conversation]
        for scope in stale:
            self._history_of.pop(scope, None)
            await self.deliveries.tell_app(scope, sdk.ViewRefreshEvent())

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
        return AppSessionContinueReply(session=view_of(row))

    @handles(SurfaceAskRequest)
    async def on_surface_ask(self, msg: SurfaceAskRequest, env: Envelope) -> SurfaceAskReply:
        return await self.interactions.surface_ask(msg, env.sender.name)

    @handles(sdk.InteractionAskRequest)
    async def on_ui_request(
        self, msg: sdk.InteractionAskRequest, env: Envelope
    ) -> sdk.InteractionReceipt:
        return await self.interactions.request(env.sender, msg)

    @handles(sdk.InteractionGetRequest)
    async def on_ui_get(
        self, msg: sdk.InteractionGetRequest, env: Envelope
    ) -> sdk.InteractionReceipt:
        return await self.interactions.get(env.sender, msg)

    @handles(sdk.InteractionCancelRequest)
    async def on_ui_cancel(
        self, msg: sdk.InteractionCancelRequest, env: Envelope
    ) -> sdk.InteractionReceipt:
        return await self.interactions.cancel(env.sender, msg)

    @handles(sdk.ContextRequest)
    async def on_context(self, msg: sdk.ContextRequest, env: Envelope) -> sdk.ContextReply:
        """The runtime's facts about one of the sender's instances: its scope from the channel,
        the state from focus, the conversation from the session (none before a login)."""
        scope = app_scope_of(env.sender)
        instance = await self.bus.request(
            "focus",
            FindInstanceRequest(app_scope=scope, instance_id=msg.instance_id),
            expect=InstanceReply,
            timeout=NOTIFY_TIMEOUT,
            retry=True,
        )
        return sdk.ContextReply(
            app_scope=scope,
            instance_id=instance.instance_id,
            conversation_id=await self._conversation_or_none(),
            state=instance.state,
            mode="im" if scope == CHAT else "app",
        )

    # ------------------------------------------------------------------ outbound results

    @handles(OutboxSettledEvent)
    async def on_outbox_settled(self, msg: OutboxSettledEvent, env: Envelope) -> None:
        call_id = ids.call_of_terminal(msg.outbox_id)
        if call_id is not None:
            # A call's result: if it answered a question, the store settled it with the row.
            await self.interactions.settled(call_id)
            return
        try:
            row = await self.bus.request(
                "store",
                ConversationMessageRequest(message_id=msg.outbox_id),
                expect=ConversationMessageReply,
            )
        except LineUpError:
            return  # an outbox row that carries no conversation message (a tool result)
        await self.deliveries.tell_app(
            row.row.app_scope,
            sdk.ConversationUpdatedEvent(
                message_id=_app_id(row.row), state=msg.state, code=msg.code
            ),
        )

    # ------------------------------------------------------------------ helpers

    async def _session(self) -> dict[str, str]:
        """The AppServer session the transport last logged in to. Read from the store at most
        once per `SESSION_TTL` (a call's every step needs it), and again after the transport
        says it logged in anew; the TTL bounds how stale it is if that word is lost."""
        now = trio.current_time()
        if self._session_seen is not None and now - self._session_seen[0] < SESSION_TTL:
            return self._session_seen[1]
        reply = await self.bus.request(
            "store", CursorGetRequest(name=SESSION_CURSOR), expect=CursorGetReply
        )
        if reply.value is None:
            raise LineUpError(ErrorCode.NOT_CONNECTED, "no AppServer session yet")
        session = _session_of(reply.value)
        if session is None:
            # Not what the transport writes: as good as none, until it logs in again (the
            # store's start-up sweep quarantines such a value).
            log.warning("router.session_undecodable")
            raise LineUpError(ErrorCode.NOT_CONNECTED, "no usable AppServer session")
        self._session_seen = (now, session)
        return session

    async def _conversation_or_none(self) -> str | None:
        try:
            return (await self._session())["conversation_id"]
        except LineUpError as exc:
            if exc.code is not ErrorCode.NOT_CONNECTED:
                raise
            return None

    async def _own_message(self, client_id: str, scope: str) -> str:
        """The runtime's id of the message the app `scope` sent as `client_id`. Another app's
        message is not found: a client id names a message in its own app only."""
        try:
            row = await self.bus.request(
                "store",
                ConversationMessageRequest(message_id=client_id, app_scope=scope),
                expect=ConversationMessageReply,
            )
        except LineUpError as exc:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, client_id) from exc
        return row.row.message_id


def _session_of(value: str) -> dict[str, str] | None:
    """The session the transport wrote (a JSON object of strings), or None for anything else."""
    try:
        raw = json.loads(value)
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(raw, dict)
        or not all(isinstance(v, str) for v in raw.values())
        or "conversation_id" not in raw
    ):
        return None
    return {str(k): v for k, v in raw.items()}


def _app_id(row: MessageRow) -> str:
    """A message's id as its app knows it: its client id for one the app sent, else its own."""
    return row.client_id if row.client_id is not None else row.message_id


def _markdown_of(body: dict[str, Any]) -> str:
    if isinstance(body.get("markdown"), str):
        return str(body["markdown"])
    payload = body.get("payload")
    if isinstance(payload, dict) and isinstance(payload.get("markdown"), str):
        return str(payload["markdown"])
    return ""


def _app_session_of(row: MessageRow) -> str | None:
    """The sub-session an Agent's text was taken for (checked then, stored in its payload)."""
    payload = row.body.get("payload")
    context = payload.get("app_session_context") if isinstance(payload, dict) else None
    session_id = context.get("app_session_id") if isinstance(context, dict) else None
    return session_id if isinstance(session_id, str) and 0 < len(session_id) <= 200 else None
