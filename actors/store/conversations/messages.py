"""Conversations (`store.conversation.*`): the messages an Agent and the apps exchange, as the
store records them. Re-exported by `lineup.actors.store.messages`.

A received message is recorded and put in its app's inbox (`inbox`) in one transaction; a sent
one is recorded and appended to the outbox (`outbox`), whose row it then follows: its state is
the row's (`facts/outbox.py`).
"""

from typing import Any, Literal

from pydantic import Field

from lineup.actors.kernel.messages import Message

from .._fields import HistoryLimit, Id, Name, Seq

__all__ = [
    "ConversationHistoryReply",
    "ConversationHistoryRequest",
    "ConversationMessageReply",
    "ConversationMessageRequest",
    "ConversationReceiveManyReply",
    "ConversationReceiveManyRequest",
    "ConversationReceiveReply",
    "ConversationReceiveRequest",
    "ConversationSendReply",
    "ConversationSendRequest",
    "MessageDirection",
    "MessageRow",
    "MessageState",
]

# An inbound message is `received`; an outbound one has the state of its outbox row.
MessageState = Literal["received", "pending", "sent", "failed"]
MessageDirection = Literal["inbound", "outbound"]


class MessageRow(Message):
    """One conversation message as stored. `seq` orders a conversation's messages (it is
    global, increasing, never reused). `body` is the message as the app sees it."""

    type: Literal["store.message.row"] = "store.message.row"
    seq: int
    message_id: Id
    conversation_id: Id
    direction: MessageDirection
    kind: Name  # the wire type, e.g. "lineup.v1.text"
    app_scope: Name
    state: MessageState
    body: dict[str, Any]
    sender_kind: Name | None
    sender_id: Id | None
    remote_seq: int | None  # the AppServer's seq, once known
    failed_code: Name | None  # why the transport gave up, while `state` is failed
    created_at: float
    client_id: Id | None = None  # outbound: the app's own id for it, unique in its scope


class ConversationReceiveRequest(Message):
    """An Agent's message for an app, in ONE transaction: the conversation is created or
    touched, the message is recorded (`inbound`, `received`), and `body` is put in the inbox of
    `app_scope + conversation_id + instance_id` with `delivery_id = message_id`.

    Idempotent by `message_id`: a repeat writes nothing and delivers nothing again, even after
    the first delivery was acknowledged (the first body stays). Refused with
    `message_id_conflict`, writing nothing, if the id is already an outbound message, or a
    delivery in that inbox that no message put there.
    """

    type: Literal["store.conversation.receive"] = "store.conversation.receive"
    message_id: Id
    conversation_id: Id
    app_scope: Name
    instance_id: Id | None = None  # the instance the Agent addressed; None: conversation-level
    kind: Name
    body: dict[str, Any]
    sender_kind: Name
    sender_id: Id
    remote_seq: Seq | None = None


class ConversationReceiveReply(Message):
    """`created` is False for a repeat: nothing was written and `seq` is the original one.
    In a `ConversationReceiveManyReply`, `refused` is the code of a message refused on its own
    (`message_id_conflict`): nothing was written for it and `seq` is None. `delivery_seq` is
    the seq of the inbox delivery a created message made (the inbox's own order, which is not
    the conversation's `seq`); `created_at`, when a created message was recorded."""

    type: Literal["store.conversation.receive.reply"] = "store.conversation.receive.reply"
    message_id: Id
    seq: int | None
    created: bool
    refused: Name | None = None
    delivery_seq: int | None = None
    created_at: float | None = None


class ConversationReceiveManyRequest(Message):
    """Several Agent messages of one sync page, in ONE transaction: each is received exactly as
    a `ConversationReceiveRequest` would be, in order (a repeat, even of an earlier message of
    the same request, writes nothing and answers `created=False`).

    A message whose id conflicts (`message_id_conflict`, as its own request would be refused)
    is skipped: its reply says `refused`, and the others are written. Any other refusal
    (`invalid_arguments`) is all or nothing: nothing of the request is written and the refusal
    is the request's answer.
    """

    type: Literal["store.conversation.receive_many"] = "store.conversation.receive_many"
    messages: tuple[ConversationReceiveRequest, ...] = Field(min_length=1, max_length=500)
    # The transport's sync cursor past the page these messages end, written in the same
    # transaction (`facts.link.SYNC_CURSOR`): the page and how far it got commit together.
    sync_cursor: str | None = Field(default=None, max_length=1000)


class ConversationReceiveManyReply(Message):
    """One reply per message, in the order of the request."""

    type: Literal["store.conversation.receive_many.reply"] = "store.conversation.receive_many.reply"
    replies: tuple[ConversationReceiveReply, ...]


class ConversationSendRequest(Message):
    """A message for the AppServer, in ONE transaction: the conversation is created or touched,
    the message is recorded (`outbound`, `pending`, `body` as the app sees it), and `wire` (the
    full envelope) is appended to the outbox with `outbox_id = message_id` and `kind`.

    `message_id` is the runtime's (the router mints it); `client_id`, if given, is the app's own
    id for the message, a deduplication key inside `app_scope` only. Idempotent by `client_id`
    in `app_scope` when given, else by `message_id`: a repeat writes nothing and its reply names
    the original message. Refused with `message_id_conflict` if the id is already an inbound
    message, or already an outbox row that carries no message.
    """

    type: Literal["store.conversation.send"] = "store.conversation.send"
    message_id: Id
    client_id: Id | None = None
    conversation_id: Id
    app_scope: Name
    kind: Name
    body: dict[str, Any]
    wire: dict[str, Any]
    sender_kind: Name | None = None
    sender_id: Id | None = None


class ConversationSendReply(Message):
    """`created` is False for a repeat: nothing was written and `seq` is the original one."""

    type: Literal["store.conversation.send.reply"] = "store.conversation.send.reply"
    message_id: Id
    seq: int
    created: bool


class ConversationHistoryRequest(Message):
    """A conversation's messages in `seq` order, starting after `after_seq`. An unknown
    conversation has no messages."""

    type: Literal["store.conversation.history"] = "store.conversation.history"
    conversation_id: Id
    after_seq: Seq = 0
    limit: HistoryLimit = 100


class ConversationHistoryReply(Message):
    """May hold fewer than `limit` rows when their bodies would not fit one frame; page on
    with `after_seq` = the last row's seq."""

    type: Literal["store.conversation.history.reply"] = "store.conversation.history.reply"
    rows: tuple[MessageRow, ...]


class ConversationMessageRequest(Message):
    """One message by id, or, with `app_scope`, by the client id that app gave it (`message_id`
    is then that client id). Refused with `invalid_arguments` if there is no such message."""

    type: Literal["store.conversation.message"] = "store.conversation.message"
    message_id: Id
    app_scope: Name | None = None


class ConversationMessageReply(Message):
    type: Literal["store.conversation.message.reply"] = "store.conversation.message.reply"
    row: MessageRow
