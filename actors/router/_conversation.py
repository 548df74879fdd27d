"""A MiniApp's side of the conversation: its inbox, its texts to the Agent, and its history.

Theory of operation
-------------------
An app's inbox is `app_scope + conversation_id + instance_id` (seed 003 §3.1): the scope comes
from its channel and the conversation from the session, never from the app; the instance is the
one it names. Naming an instance of another app finds nothing, since the scope is part of the
key, so the name needs no check with focus. Acknowledging another app's delivery changes
nothing, and only the audit learns why.

A text an app sends is one transaction (message + outbox row, `_outbox`), under an id the
runtime mints (`_ids`): the app's `message_id` is its client id, which the app sees back
(receipts, history, updates) and the Agent never does. The transport's word on the row comes
back as a `conversation.updated` event to that app.

Before the first login there is no conversation: an inbox is empty and a history too, and an
app whose history was read then (or of another conversation) is told to read it again after
the next login (`refresh_stale_histories`), so a timeline rebuilt meanwhile does not stay empty.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

from lineup import wire
from lineup.actors.kernel import AuditRecord, Bus, ErrorCode, Identity, LineUpError, Message
from lineup.actors.store.messages import (
    ConversationHistoryReply,
    ConversationHistoryRequest,
    ConversationMessageReply,
    ConversationMessageRequest,
    ConversationSendReply,
    ConversationSendRequest,
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
from lineup.facts.scopes import CHAT
from lineup.sdk import protocol as sdk

from . import _ids as ids
from ._outbox import envelope_of, wake
from ._redelivery import delivery_of
from ._session import SessionCache
from .messages import OutboxSettledEvent

__all__ = ["AppConversation"]

log = logging.getLogger("lineup.router")
TEXT: Final = wire.TEXT


class AppConversation:
    """The apps' inboxes, texts and histories (the module's docstring). `tell_app(scope,
    event)` tells an app an event (`Deliveries.tell_app`)."""

    def __init__(
        self,
        bus: Bus,
        me: Identity,
        session: SessionCache,
        tell_app: Callable[[str, Message], Awaitable[None]],
    ) -> None:
        self.bus = bus
        self.me = me
        self.session = session
        self._tell_app = tell_app
        # Per app: the conversation its last history read was of (None: there was no session).
        self._history_of: dict[str, str | None] = {}

    # ------------------------------------------------------------------ the inbox

    async def inbox_list(self, scope: str, msg: sdk.InboxListRequest) -> sdk.InboxListReply:
        conversation_id = await self.session.conversation_or_none()
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

    async def inbox_ack(
        self, scope: str, peer: str, msg: sdk.InboxAckRequest
    ) -> sdk.CommandReceipt:
        conversation_id = await self.session.conversation_or_none()
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
            self.bus.audit(AuditRecord.scope_denied(self.me.name, peer, msg.TYPE, msg.delivery_id))
        return sdk.CommandReceipt(id=msg.delivery_id, changed=reply.acked)

    async def inbox_ack_many(
        self, scope: str, peer: str, msg: sdk.InboxAckManyRequest
    ) -> sdk.InboxAckManyReply:
        conversation_id = await self.session.conversation_or_none()
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
            self.bus.audit(AuditRecord.scope_denied(self.me.name, peer, msg.TYPE, delivery_id))
        return sdk.InboxAckManyReply(acked=reply.acked)

    # ------------------------------------------------------------------ the app's texts

    async def send_text(
        self, scope: str, msg: sdk.ConversationSendTextRequest
    ) -> sdk.CommandReceipt:
        session = await self.session.get()
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
                conversation_id=session.conversation_id,
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

    async def retry(self, scope: str, msg: sdk.ConversationRetryRequest) -> sdk.CommandReceipt:
        outbox_id = await self._own_message(msg.message_id, scope)
        reply = await self.bus.request(
            "store", OutboxRetryRequest(outbox_id=outbox_id), expect=OutboxRetryReply
        )
        await wake(self.bus)
        return sdk.CommandReceipt(id=msg.message_id, changed=reply.changed)

    async def settled(self, message_id: str, msg: OutboxSettledEvent) -> None:
        """The transport's word on the outbox row that carries the message `message_id`: the
        app that sent it is told its new state. The store's acknowledgement named the app and
        its id for the message, so nothing is read again."""
        if msg.app_scope is None:
            log.warning("router.settled_without_app code=%s", ErrorCode.INVALID_ARGUMENTS.value)
            return
        await self._tell_app(
            msg.app_scope,
            sdk.ConversationUpdatedEvent(
                message_id=_app_id_of(message_id, msg.client_id), state=msg.state, code=msg.code
            ),
        )

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

    # ------------------------------------------------------------------ the history

    async def history(
        self, scope: str, msg: sdk.ConversationHistoryRequest
    ) -> sdk.ConversationHistoryReply:
        try:
            session = await self.session.get()
        except LineUpError as exc:
            if exc.code is not ErrorCode.NOT_CONNECTED:
                raise
            # Never logged in (the AppServer has been unreachable since the first start, or
            # the session's record was quarantined): no conversation yet, so its history is
            # empty, not an error. The app is told to read again once there is one.
            self._history_of[scope] = None
            return sdk.ConversationHistoryReply(items=())
        self._history_of[scope] = session.conversation_id
        page = await self.bus.request(
            "store",
            ConversationHistoryRequest(
                conversation_id=session.conversation_id, after_seq=msg.after_seq, limit=msg.limit
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

    async def refresh_stale_histories(self) -> None:
        """Each app whose last history read was of another conversation than the session's
        (or of none: read before the first login) is told to read again, so a timeline
        rebuilt while the session was unknown does not stay empty."""
        try:
            conversation = await self.session.conversation_or_none()
        except LineUpError as exc:  # the store busy or restarting: the next login tries again
            log.info("router.histories_not_checked code=%s", exc.code.value)
            return
        stale = [s for s, read in self._history_of.items() if read != conversation]
        for scope in stale:
            self._history_of.pop(scope, None)
            await self._tell_app(scope, sdk.ViewRefreshEvent())


def _app_id(row: MessageRow) -> str:
    return _app_id_of(row.message_id, row.client_id)


def _app_id_of(message_id: str, client_id: str | None) -> str:
    """A message's id as its app knows it: its client id for one the app sent, else its own."""
    return client_id if client_id is not None else message_id


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
