"""App inboxes (`store.inbox.*`): the deliveries waiting for an app, one inbox per
`app_scope + conversation_id + instance_id` (seed 003 §3.1). Re-exported by
`lineup.actors.store.messages`."""

from typing import Any, Final, Literal

from pydantic import Field

from lineup.actors.kernel.messages import Message

from .._fields import Id, Limit, Name, Seq

__all__ = [
    "InboxAckManyReply",
    "InboxAckManyRequest",
    "InboxAckReply",
    "InboxAckRequest",
    "InboxListReply",
    "InboxListRequest",
    "InboxPutReply",
    "InboxPutRequest",
    "InboxRow",
]


class InboxRow(Message):
    """One delivery; `message_seq` is the conversation seq of the Agent's message it carries
    (None for a delivery that carries none, such as a tool call)."""

    type: Literal["store.inbox.row"] = "store.inbox.row"
    seq: int
    message_seq: int | None = None
    app_scope: Name
    conversation_id: Id
    instance_id: Id | None  # None: the app's conversation-level inbox
    delivery_id: Id
    body: dict[str, Any]
    created_at: float


class InboxPutRequest(Message):
    """Persist a delivery to one inbox: `app_scope + conversation_id + instance_id` (seed 003
    §3.1; no instance: the app's conversation-level inbox). Idempotent by
    `(app_scope, delivery_id)`, also after the delivery has been acknowledged (it is then not
    delivered again)."""

    type: Literal["store.inbox.put"] = "store.inbox.put"
    app_scope: Name
    conversation_id: Id
    instance_id: Id | None = None
    delivery_id: Id
    body: dict[str, Any]


class InboxPutReply(Message):
    type: Literal["store.inbox.put.reply"] = "store.inbox.put.reply"
    delivery_id: Id
    seq: int
    created: bool


class InboxListRequest(Message):
    """Unacknowledged deliveries of one inbox in `seq` order, starting after `after_seq`: those
    of `app_scope` in `conversation_id` addressed to `instance_id` exactly (None lists the
    deliveries addressed to no instance, not every instance's)."""

    type: Literal["store.inbox.list"] = "store.inbox.list"
    app_scope: Name
    conversation_id: Id
    instance_id: Id | None = None
    limit: Limit = 100
    after_seq: Seq = 0


class InboxListReply(Message):
    type: Literal["store.inbox.list.reply"] = "store.inbox.list.reply"
    rows: tuple[InboxRow, ...]


class InboxAckRequest(Message):
    """The app has the delivery: remove it from the inbox (its body is deleted). Only a delivery
    of this exact inbox (`app_scope + conversation_id + instance_id`) is removed."""

    type: Literal["store.inbox.ack"] = "store.inbox.ack"
    app_scope: Name
    conversation_id: Id
    instance_id: Id | None = None
    delivery_id: Id


class InboxAckReply(Message):
    """`acked` is True only for the request that removed the delivery; False when it was
    already acknowledged, belongs to another inbox, or never existed. `foreign` says which of
    those it was only to the (trusted) caller, which audits it: an app is told nothing more
    than "nothing changed", so acknowledging is no oracle for other inboxes' deliveries."""

    type: Literal["store.inbox.ack.reply"] = "store.inbox.ack.reply"
    delivery_id: Id
    acked: bool
    foreign: bool = False  # the delivery is another inbox's (scope, conversation or instance)


# An app acknowledges what it took together: one burst of deliveries, one request.
MAX_ACK_MANY: Final = 500


class InboxAckManyRequest(Message):
    """`InboxAckRequest` for several deliveries of ONE inbox, in one transaction: each id is
    removed exactly as its own request would remove it (a repeat in the list changes nothing)."""

    type: Literal["store.inbox.ack_many"] = "store.inbox.ack_many"
    app_scope: Name
    conversation_id: Id
    instance_id: Id | None = None
    delivery_ids: tuple[Id, ...] = Field(min_length=1, max_length=MAX_ACK_MANY)


class InboxAckManyReply(Message):
    """`acked`: the ids this request removed, in request order; `foreign`: those that are
    another inbox's (for the trusted caller's audit, as in `InboxAckReply`)."""

    type: Literal["store.inbox.ack_many.reply"] = "store.inbox.ack_many.reply"
    acked: tuple[Id, ...]
    foreign: tuple[Id, ...] = ()
