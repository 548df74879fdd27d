"""The app's inbox and conversation as the router keeps them (`Inbox`, `Conversation`)."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.facts.limits import REPLY_BODY_BUDGET

from .. import protocol as p

__all__ = ["FakeConversation", "FakeInbox"]


@dataclass
class FakeInbox:
    """The app's inbox: `put` a delivery, then see what the app acknowledged. An Agent's text
    put here is also a message of `conversation` (as the runtime stores it), and its delivery
    carries that message's seq."""

    conversation: FakeConversation | None = None
    pending: dict[str, p.Delivery] = field(default_factory=dict)
    acknowledged: list[str] = field(default_factory=list)
    _seq: itertools.count[int] = field(
        default_factory=lambda: itertools.count(1), init=False, repr=False
    )

    def put(
        self,
        envelope: dict[str, Any],
        delivery_id: str | None = None,
        *,
        instance_id: str | None = None,
        at: float = 0.0,
    ) -> p.Delivery:
        """A delivery for `instance_id` (None: the app's conversation-level inbox); an Agent's
        text is recorded `at` that time, as its message's."""
        delivery_id = delivery_id or str(uuid.uuid4())
        message_seq = None
        recorded = None
        if self.conversation is not None and envelope.get("type") == "lineup.v1.text":
            payload = envelope.get("payload")
            markdown = payload.get("markdown") if isinstance(payload, dict) else None
            message = self.conversation.add(str(markdown or ""), message_id=delivery_id, at=at)
            message_seq, recorded = message.seq, at
        delivery = p.Delivery(
            delivery_id=delivery_id,
            seq=next(self._seq),
            message_seq=message_seq,
            envelope=envelope,
            instance_id=instance_id,
            at=recorded,
        )
        self.pending[delivery.delivery_id] = delivery
        return delivery

    def _list(self, msg: p.InboxListRequest) -> p.InboxListReply:
        rows = sorted(
            (
                d
                for d in self.pending.values()
                if d.seq > msg.after_seq and d.instance_id == msg.instance_id
            ),
            key=lambda d: d.seq,
        )
        return p.InboxListReply(deliveries=tuple(rows[: msg.limit]))

    def _ack(self, msg: p.InboxAckRequest) -> p.CommandReceipt:
        held = self.pending.get(msg.delivery_id)
        changed = held is not None and held.instance_id == msg.instance_id
        if changed:
            del self.pending[msg.delivery_id]
            self.acknowledged.append(msg.delivery_id)
        return p.CommandReceipt(id=msg.delivery_id, changed=changed)

    def _ack_many(self, msg: p.InboxAckManyRequest) -> p.InboxAckManyReply:
        acked = [
            delivery_id
            for delivery_id in msg.delivery_ids
            if self._ack(
                p.InboxAckRequest(delivery_id=delivery_id, instance_id=msg.instance_id)
            ).changed
        ]
        return p.InboxAckManyReply(acked=tuple(acked))


@dataclass
class FakeConversation:
    """The app's conversation: `items` is its history; `sent` what the app sent, in order."""

    items: dict[str, p.ConversationItem] = field(default_factory=dict)
    sent: list[str] = field(default_factory=list)
    retried: list[str] = field(default_factory=list)
    _seq: itertools.count[int] = field(
        default_factory=lambda: itertools.count(1), init=False, repr=False
    )

    def add(
        self,
        markdown: str,
        *,
        author: Literal["agent", "user"] = "agent",
        state: Literal["received", "pending", "sent", "failed"] = "received",
        message_id: str | None = None,
        app_session_id: str | None = None,
        at: float = 0.0,
    ) -> p.ConversationItem:
        item = p.ConversationItem(
            message_id=message_id or str(uuid.uuid4()),
            seq=next(self._seq),
            author=author,
            state=state,
            markdown=markdown,
            at=at,
            app_session_id=app_session_id,
        )
        self.items[item.message_id] = item
        return item

    def _send(self, msg: p.ConversationSendTextRequest) -> p.CommandReceipt:
        existing = self.items.get(msg.message_id)
        if existing is not None:  # idempotent by message_id, as the store is
            return p.CommandReceipt(id=msg.message_id, seq=existing.seq, changed=False)
        item = self.add(msg.markdown, author="user", state="pending", message_id=msg.message_id)
        self.sent.append(msg.message_id)
        return p.CommandReceipt(id=msg.message_id, seq=item.seq)

    def _retry(self, msg: p.ConversationRetryRequest) -> p.CommandReceipt:
        item = self.items.get(msg.message_id)
        if item is None or item.author != "user":
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, msg.message_id)
        self.retried.append(msg.message_id)
        changed = item.state == "failed"
        if changed:
            self.items[item.message_id] = item.model_copy(update={"state": "pending"})
        return p.CommandReceipt(id=msg.message_id, changed=changed)

    def _history(self, msg: p.ConversationHistoryRequest) -> p.ConversationHistoryReply:
        rows = sorted(
            (i for i in self.items.values() if i.seq > msg.after_seq), key=lambda i: i.seq
        )
        # As the runtime does: a page ends where its text would pass the reply budget.
        page: list[p.ConversationItem] = []
        used = 0
        for row in rows[: msg.limit]:
            used += len(row.markdown.encode())
            if page and used > REPLY_BODY_BUDGET:
                break
            page.append(row)
        return p.ConversationHistoryReply(items=tuple(page))
