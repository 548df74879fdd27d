"""The store's whole public protocol: every request it serves and every reply it gives.

Every tag starts with `store.`; the ACL lets each runtime actor (never a MiniApp) send `store.*`.
Requests that change state are idempotent by a natural key the caller chooses (`outbox_id`,
`(app_scope, delivery_id)`, a cursor `name`): a retry after a crash or a lost reply applies
nothing twice and answers like the first attempt did (`created=False`, the same `seq`).

Bodies are opaque JSON objects to the store; their size is bounded by the frame limit. List
replies are bounded by `limit` and by a byte budget, and page with `after_seq`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from lineup.actors.kernel.audit import AuditAppendReply, AuditAppendRequest, AuditRecord
from lineup.actors.kernel.messages import Message

__all__ = [
    "AuditAppendReply",
    "AuditAppendRequest",
    "AuditQueryReply",
    "AuditQueryRequest",
    "AuditRecord",
    "CursorGetReply",
    "CursorGetRequest",
    "CursorSetReply",
    "CursorSetRequest",
    "InboxAckReply",
    "InboxAckRequest",
    "InboxListReply",
    "InboxListRequest",
    "InboxPutReply",
    "InboxPutRequest",
    "InboxRow",
    "OutboxAckReply",
    "OutboxAckRequest",
    "OutboxAppendReply",
    "OutboxAppendRequest",
    "OutboxPendingReply",
    "OutboxPendingRequest",
    "OutboxRow",
    "StoreStatsReply",
    "StoreStatsRequest",
]

Id = Annotated[str, Field(min_length=1, max_length=200)]
Name = Annotated[str, Field(min_length=1, max_length=100)]
Limit = Annotated[int, Field(ge=1, le=1000)]
Seq = Annotated[int, Field(ge=0)]

# ---------------------------------------------------------------------------------- outbox


class OutboxRow(Message):
    """One message waiting to reach the AppServer, sent with `outbox_id` as idempotency key."""

    type: Literal["store.outbox.row"] = "store.outbox.row"
    seq: int
    outbox_id: Id
    conversation_id: Id
    kind: Name
    body: dict[str, Any]
    created_at: float


class OutboxAppendRequest(Message):
    """Persist an outgoing message. Idempotent by `outbox_id`."""

    type: Literal["store.outbox.append"] = "store.outbox.append"
    outbox_id: Id
    conversation_id: Id
    kind: Name  # the wire type, e.g. "lineup.v1.tool.result"
    body: dict[str, Any]


class OutboxAppendReply(Message):
    """`created` is False when the id was already there: nothing was written, `seq` is the
    original one."""

    type: Literal["store.outbox.append.reply"] = "store.outbox.append.reply"
    outbox_id: Id
    seq: int
    created: bool


class OutboxPendingRequest(Message):
    """Unacknowledged rows in `seq` order, starting after `after_seq`."""

    type: Literal["store.outbox.pending"] = "store.outbox.pending"
    limit: Limit = 100
    after_seq: Seq = 0


class OutboxPendingReply(Message):
    """May hold fewer than `limit` rows when their bodies would not fit one frame; page on
    with `after_seq` = the last row's seq."""

    type: Literal["store.outbox.pending.reply"] = "store.outbox.pending.reply"
    rows: tuple[OutboxRow, ...]


class OutboxAckRequest(Message):
    """The AppServer accepted this row (its answer's `message_id` is `remote_id`)."""

    type: Literal["store.outbox.ack"] = "store.outbox.ack"
    outbox_id: Id
    remote_id: Id | None = None


class OutboxAckReply(Message):
    """`acked` is True only for the request that acknowledged the row; False if it was already
    acknowledged or does not exist."""

    type: Literal["store.outbox.ack.reply"] = "store.outbox.ack.reply"
    outbox_id: Id
    acked: bool


# ---------------------------------------------------------------------------------- app inboxes


class InboxRow(Message):
    type: Literal["store.inbox.row"] = "store.inbox.row"
    seq: int
    app_scope: Name
    delivery_id: Id
    body: dict[str, Any]
    created_at: float


class InboxPutRequest(Message):
    """Persist a delivery to one app's inbox. Idempotent by `(app_scope, delivery_id)`, also
    after the delivery has been acknowledged (it is then not delivered again)."""

    type: Literal["store.inbox.put"] = "store.inbox.put"
    app_scope: Name
    delivery_id: Id
    body: dict[str, Any]


class InboxPutReply(Message):
    type: Literal["store.inbox.put.reply"] = "store.inbox.put.reply"
    delivery_id: Id
    seq: int
    created: bool


class InboxListRequest(Message):
    """Unacknowledged deliveries of one app in `seq` order, starting after `after_seq`."""

    type: Literal["store.inbox.list"] = "store.inbox.list"
    app_scope: Name
    limit: Limit = 100
    after_seq: Seq = 0


class InboxListReply(Message):
    type: Literal["store.inbox.list.reply"] = "store.inbox.list.reply"
    rows: tuple[InboxRow, ...]


class InboxAckRequest(Message):
    """The app has the delivery: remove it from the inbox (its body is deleted)."""

    type: Literal["store.inbox.ack"] = "store.inbox.ack"
    app_scope: Name
    delivery_id: Id


class InboxAckReply(Message):
    """`acked` is True only for the request that removed the delivery; False when it was
    already acknowledged, belongs to another scope, or never existed."""

    type: Literal["store.inbox.ack.reply"] = "store.inbox.ack.reply"
    delivery_id: Id
    acked: bool


# ---------------------------------------------------------------------------------- cursors


class CursorGetRequest(Message):
    type: Literal["store.cursor.get"] = "store.cursor.get"
    name: Name


class CursorGetReply(Message):
    """`value` is None for a cursor never set."""

    type: Literal["store.cursor.get.reply"] = "store.cursor.get.reply"
    name: Name
    value: str | None


class CursorSetRequest(Message):
    """Set a named cursor (e.g. the AppServer sync cursor). Idempotent: last write wins."""

    type: Literal["store.cursor.set"] = "store.cursor.set"
    name: Name
    value: str = Field(max_length=1000)


class CursorSetReply(Message):
    type: Literal["store.cursor.set.reply"] = "store.cursor.set.reply"
    name: Name
    value: str


# ---------------------------------------------------------------------------------- audit


class AuditQueryRequest(Message):
    """The newest `limit` audit rows matching the filters, returned oldest first."""

    type: Literal["store.audit.query"] = "store.audit.query"
    event_prefix: str | None = Field(default=None, max_length=100)
    peer: Id | None = None
    limit: Limit = 100


class AuditQueryReply(Message):
    type: Literal["store.audit.query.reply"] = "store.audit.query.reply"
    records: tuple[AuditRecord, ...]


# ---------------------------------------------------------------------------------- stats


class StoreStatsRequest(Message):
    type: Literal["store.stats.get"] = "store.stats.get"


class StoreStatsReply(Message):
    """Group-commit counters since the store started: `commits` write transactions committed,
    `batches` batches taken off the queue (reads included), `max_batch` the largest one,
    `writes` write operations acknowledged."""

    type: Literal["store.stats.get.reply"] = "store.stats.get.reply"
    commits: int
    batches: int
    max_batch: int
    writes: int
    schema_version: int
    synchronous: Literal["normal", "full"]
