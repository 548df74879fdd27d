"""The outbox (`store.outbox.*`): what waits to reach the AppServer, and what became of it.
Re-exported by `lineup.actors.store.messages`.

A row moves by the table in `machine`: `pending` until the AppServer accepts it (`ack`) or the
transport gives up on it (`fail`), and a retry makes a failed row pending again. The message a
row carries, if any (`ConversationSendRequest`), has the row's state, in the same transaction.
"""

from typing import Any, Literal

from pydantic import Field

from lineup.actors.kernel.messages import Message
from lineup.facts.outbox import OutboxState

from .._fields import Id, Limit, Name, Seq

__all__ = [
    "OutboxAckReply",
    "OutboxAckRequest",
    "OutboxAppendReply",
    "OutboxAppendRequest",
    "OutboxFailReply",
    "OutboxFailRequest",
    "OutboxPendingReply",
    "OutboxPendingRequest",
    "OutboxRetryReply",
    "OutboxRetryRequest",
    "OutboxRow",
    "OutboxState",
]


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
    """Pending rows (neither acknowledged nor failed) in `seq` order, after `after_seq`; the
    rows of a kind in `ahead` first (a snapshot the Agent must not wait for behind a backlog:
    the inventory), each group in `seq` order."""

    type: Literal["store.outbox.pending"] = "store.outbox.pending"
    limit: Limit = 100
    after_seq: Seq = 0
    ahead: tuple[Name, ...] = Field(default=(), max_length=8)


class OutboxPendingReply(Message):
    """May hold fewer than `limit` rows when their bodies would not fit one frame; page on
    with `after_seq` = the last row's seq."""

    type: Literal["store.outbox.pending.reply"] = "store.outbox.pending.reply"
    rows: tuple[OutboxRow, ...]


class OutboxAckRequest(Message):
    """The AppServer accepted this row (its answer's `message_id` is `remote_id`, its `seq` is
    `remote_seq`). The row leaves the pending set and the message it carries, if any, becomes
    `sent` with that `remote_seq`, in one transaction. A failed row may be acknowledged too:
    the AppServer has it, whatever the transport concluded before."""

    type: Literal["store.outbox.ack"] = "store.outbox.ack"
    outbox_id: Id
    remote_id: Id | None = None
    remote_seq: Seq | None = None


class OutboxAckReply(Message):
    """`acked` is True only for the request that acknowledged the row; False if it was already
    acknowledged or does not exist. `message_id` names the conversation message the row
    carries (None for a row appended with `OutboxAppendRequest`, or an unknown row), with the
    app that sent it (`app_scope`) and that app's id for it (`client_id`, if it gave one), so
    the app can be told without reading the message again; `call_id`, the tool call whose
    terminal row it is (None for any other row)."""

    type: Literal["store.outbox.ack.reply"] = "store.outbox.ack.reply"
    outbox_id: Id
    acked: bool
    message_id: Id | None = None
    app_scope: Name | None = None
    client_id: Id | None = None
    call_id: Id | None = None


class OutboxFailRequest(Message):
    """The transport gave up on this row (`code` says why): it is no longer pending, and the
    message it carries becomes `failed`, in one transaction. Idempotent: failing a failed row
    changes nothing and keeps the first code. Refused with `invalid_arguments` for an unknown
    row or one already sent."""

    type: Literal["store.outbox.fail"] = "store.outbox.fail"
    outbox_id: Id
    code: Name


class OutboxFailReply(Message):
    """`changed` is True only for the request that failed the row; `state` is the row's state
    after the request; `app_scope`, `client_id` and `call_id` as `OutboxAckReply`'s."""

    type: Literal["store.outbox.fail.reply"] = "store.outbox.fail.reply"
    outbox_id: Id
    message_id: Id | None
    changed: bool
    state: OutboxState
    app_scope: Name | None = None
    client_id: Id | None = None
    call_id: Id | None = None


class OutboxRetryRequest(Message):
    """Make a failed row pending again (and its message `pending`), in one transaction; it
    keeps its `seq`. Idempotent: retrying a pending row changes nothing. Refused with
    `invalid_arguments` for an unknown row or one already sent."""

    type: Literal["store.outbox.retry"] = "store.outbox.retry"
    outbox_id: Id


class OutboxRetryReply(Message):
    """`changed` is True only for the request that made the row pending again."""

    type: Literal["store.outbox.retry.reply"] = "store.outbox.retry.reply"
    outbox_id: Id
    message_id: Id | None
    changed: bool
    state: OutboxState
