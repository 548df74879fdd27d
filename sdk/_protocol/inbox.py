"""The inbox (seed 003 §3.1): the deliveries the runtime persisted for an app, told to it
and listed by it, and its acknowledgements (`Inbox`)."""

from typing import Any, Literal

from pydantic import Field

from lineup.actors.kernel import Message

from .common import Id

__all__ = [
    "MAX_BATCH",
    "DeliveriesEvent",
    "Delivery",
    "DeliveryEvent",
    "InboxAckManyReply",
    "InboxAckManyRequest",
    "InboxAckRequest",
    "InboxListReply",
    "InboxListRequest",
]

MAX_BATCH = 500  # deliveries in one event, ids in one acknowledgement


class Delivery(Message):
    """One persisted delivery to this app, normalised (the app never sees a wire envelope).
    `seq` is its order in the inbox (what `InboxListRequest.after_seq` pages by);
    `message_seq` the conversation order of the Agent's message it carries (its
    `ConversationItem.seq`), None for a delivery that is no conversation message; `at` when
    the runtime recorded that message (its `ConversationItem.at`): a timeline places a message
    pushed live where its history will, whenever the app gets to it."""

    type: Literal["miniapp.delivery"] = "miniapp.delivery"
    delivery_id: Id
    seq: int
    message_seq: int | None = None
    envelope: dict[str, Any]  # a RuntimeEnvelope (seed 004 §5.1) as JSON
    instance_id: Id | None = None  # the instance it is for; None: the app's conversation
    at: float | None = None


class DeliveryEvent(Message):
    """Runtime → app: a new delivery is in your inbox (acknowledge it when handled)."""

    type: Literal["miniapp.inbox.delivery"] = "miniapp.inbox.delivery"
    delivery: Delivery


class DeliveriesEvent(Message):
    """Runtime → app: new deliveries are in your inbox, in `seq` order (one sync page's, or
    several's): a burst costs one event. Acknowledge them when handled."""

    type: Literal["miniapp.inbox.deliveries"] = "miniapp.inbox.deliveries"
    deliveries: tuple[Delivery, ...] = Field(min_length=1, max_length=MAX_BATCH)


class InboxListRequest(Message):
    """The app's deliveries in the current conversation for `instance_id` (seed 003 §3.1);
    None lists those addressed to no instance (the app's conversation-level inbox)."""

    type: Literal["router.sdk.inbox.list"] = "router.sdk.inbox.list"
    instance_id: Id | None = None
    after_seq: int = Field(default=0, ge=0)
    limit: int = Field(default=100, ge=1, le=500)


class InboxListReply(Message):
    type: Literal["router.sdk.inbox.list.reply"] = "router.sdk.inbox.list.reply"
    deliveries: tuple[Delivery, ...]


class InboxAckRequest(Message):
    """Remove a delivery of the inbox `instance_id` names (as for listing); a delivery of any
    other inbox is left alone and the receipt says `changed=False`."""

    type: Literal["router.sdk.inbox.ack"] = "router.sdk.inbox.ack"
    delivery_id: Id
    instance_id: Id | None = None


class InboxAckManyRequest(Message):
    """`InboxAckRequest` for several deliveries of one inbox, in one request and one
    transaction (a burst handled together is acknowledged together)."""

    type: Literal["router.sdk.inbox.ack_many"] = "router.sdk.inbox.ack_many"
    delivery_ids: tuple[Id, ...] = Field(min_length=1, max_length=MAX_BATCH)
    instance_id: Id | None = None


class InboxAckManyReply(Message):
    """The ids this request removed from the inbox (in request order); any other was not in
    that inbox (already acknowledged, another inbox's, or never delivered)."""

    type: Literal["router.sdk.inbox.ack_many.reply"] = "router.sdk.inbox.ack_many.reply"
    acked: tuple[Id, ...]
