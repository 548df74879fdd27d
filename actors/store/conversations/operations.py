"""Conversation messages (`store.conversation.*`).

The contract of every operation (`_rows`): one blocking function per request,
`fn(conn, request, now)`, run inside its own savepoint of a group-committed transaction. Every
request here writes more than one table, and the savepoint is what makes it ONE transaction: a
refusal raised after the first write (or a failing statement) rolls back everything the request
wrote, and nothing else.

Idempotency is by `message_id` (a sent message's by the app's `client_id`, when it gave one),
checked before anything is written: a repeat finds the message row, writes nothing and answers
`created=False` with the original `seq`. Because the message row outlives the inbox delivery
(acknowledging a delivery clears only the inbox), a repeated receive never delivers again.

An id that names a message it cannot be a repeat of (the other direction, an inbox delivery or
an outbox row that no message put there) is a conflict: refused with `message_id_conflict`
before anything is written, never a crash. A page of received messages skips a conflicting one
and keeps the rest (`conversation_receive_many`). An outbound message moves along with the
outbox row that carries it (`outbox.operations`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final

from lineup.actors.kernel.errors import ErrorCode, LineUpError
from lineup.facts.link import SYNC_CURSOR

from .._db import Connection
from .._rows import int_or_none, json_text, stored_object, within_budget
from .._table import Served, read, write
from ..cursors.operations import write_cursor
from .messages import (
    ConversationHistoryReply,
    ConversationHistoryRequest,
    ConversationMessageReply,
    ConversationMessageRequest,
    ConversationReceiveManyReply,
    ConversationReceiveManyRequest,
    ConversationReceiveReply,
    ConversationReceiveRequest,
    ConversationSendReply,
    ConversationSendRequest,
    MessageDirection,
    MessageRow,
    MessageState,
)

__all__ = [
    "HANDLERS",
    "conversation_history",
    "conversation_message",
    "conversation_receive",
    "conversation_receive_many",
    "conversation_send",
]

log = logging.getLogger("lineup.store")

_ROW_COLUMNS: Final = (
    "seq", "message_id", "conversation_id", "direction", "kind", "app_scope", "state", "body",
    "sender_kind", "sender_id", "remote_seq", "failed_code", "created_at", "client_id",
)  # fmt: skip
# The body as bytes: one that is not UTF-8 must cost only its own row.
_SELECT_ROWS: Final = (
    "SELECT "
    + ", ".join("CAST(body AS BLOB)" if name == "body" else name for name in _ROW_COLUMNS)
    + " FROM messages"
)
# Bytes a row's keys and JSON punctuation add to a reply, on top of its values.
_ROW_OVERHEAD: Final = 256


def _conflict(what: str) -> LineUpError:
    return LineUpError(ErrorCode.MESSAGE_ID_CONFLICT, what)


def _repeat(conn: Connection, message_id: str, direction: MessageDirection) -> int | None:
    """The `seq` of the message already recorded under `message_id`, or None if there is none.
    Refuses (`message_id_conflict`) an id that names a message of the other direction: it is
    not a repeat. One of the same direction is, whatever its body: the first one stays."""
    rows = conn.execute(
        "SELECT seq, direction FROM messages WHERE message_id = ?", (message_id,)
    ).fetchall()
    if not rows:
        return None
    seq, found = rows[0]
    if found != direction:
        raise _conflict(f"message id is already {found}")
    assert isinstance(seq, int)
    return seq


def _touch_conversation(conn: Connection, conversation_id: str, now: float) -> None:
    conn.execute(
        "INSERT INTO conversations (conversation_id, created_at, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT (conversation_id) DO UPDATE SET updated_at = excluded.updated_at",
        (conversation_id, now, now),
    )


def _insert_message(
    conn: Connection,
    req: ConversationReceiveRequest | ConversationSendRequest,
    *,
    direction: MessageDirection,
    state: MessageState,
    body: str,
    now: float,
    outbox_id: str | None = None,
    remote_seq: int | None = None,
    client_id: str | None = None,
) -> int:
    seq = int_or_none(
        conn,
        "INSERT INTO messages (message_id, conversation_id, direction, kind, app_scope,"
        " sender_kind, sender_id, outbox_id, remote_seq, state, body, created_at, updated_at,"
        " client_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq",
        (req.message_id, req.conversation_id, direction, req.kind, req.app_scope,
         req.sender_kind, req.sender_id, outbox_id, remote_seq, state, body, now, now,
         client_id),
    )  # fmt: skip
    assert seq is not None  # a plain INSERT either returns its row or raises
    return seq


def conversation_receive(
    conn: Connection, req: ConversationReceiveRequest, now: float
) -> ConversationReceiveReply:
    return _receive(conn, req, now, set())


def _receive(
    conn: Connection, req: ConversationReceiveRequest, now: float, touched: set[str]
) -> ConversationReceiveReply:
    """Receive one message; `touched` holds the conversations this transaction already
    touched (with the same `now`), which need no second update. Every refusal comes before
    the first write."""
    body = json_text(req.body)
    seq = _repeat(conn, req.message_id, "inbound")
    if seq is not None:
        return ConversationReceiveReply(message_id=req.message_id, seq=seq, created=False)
    # The delivery first: one that no message put there conflicts, and its insert wrote
    # nothing, so the refusal still comes before the first write.
    delivered = int_or_none(
        conn,
        "INSERT INTO app_inbox (app_scope, conversation_id, instance_id, delivery_id, body,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (app_scope, delivery_id) DO NOTHING RETURNING seq",
        (req.app_scope, req.conversation_id, req.instance_id, req.message_id, body, now),
    )
    if delivered is None:
        raise _conflict("delivery id already used in this inbox")
    if req.conversation_id not in touched:
        _touch_conversation(conn, req.conversation_id, now)
        touched.add(req.conversation_id)
    seq = _insert_message(
        conn, req, direction="inbound", state="received", body=body, now=now,
        remote_seq=req.remote_seq,
    )  # fmt: skip
    return ConversationReceiveReply(
        message_id=req.message_id, seq=seq, created=True, delivery_seq=delivered, created_at=now
    )


def conversation_receive_many(
    conn: Connection, req: ConversationReceiveManyRequest, now: float
) -> ConversationReceiveManyReply:
    # The request's savepoint covers every message: a refusal of one undoes them all, except
    # a conflict, which `_receive` raises before it writes anything: that one is skipped.
    touched: set[str] = set()
    replies = []
    if req.sync_cursor is not None:
        write_cursor(conn, SYNC_CURSOR, req.sync_cursor, now)
    for one in req.messages:
        try:
            replies.append(_receive(conn, one, now, touched))
        except LineUpError as exc:
            if exc.code is not ErrorCode.MESSAGE_ID_CONFLICT:
                raise
            replies.append(
                ConversationReceiveReply(
                    message_id=one.message_id, seq=None, created=False, refused=exc.code.value
                )
            )
    return ConversationReceiveManyReply(replies=tuple(replies))


def _sent_before(conn: Connection, req: ConversationSendRequest) -> tuple[str, int] | None:
    """`(message_id, seq)` of the message this send repeats: the one with the same client id
    in the same app, or else the same message id. None if it is new."""
    if req.client_id is not None:
        rows = conn.execute(
            "SELECT message_id, seq FROM messages WHERE app_scope = ? AND client_id = ?",
            (req.app_scope, req.client_id),
        ).fetchall()
        if rows:
            message_id, seq = rows[0]
            assert isinstance(message_id, str)
            assert isinstance(seq, int)
            return message_id, seq
    seq = _repeat(conn, req.message_id, "outbound")
    return None if seq is None else (req.message_id, seq)


def conversation_send(
    conn: Connection, req: ConversationSendRequest, now: float
) -> ConversationSendReply:
    before = _sent_before(conn, req)
    if before is not None:
        return ConversationSendReply(message_id=before[0], seq=before[1], created=False)
    body, wire = json_text(req.body), json_text(req.wire)
    _touch_conversation(conn, req.conversation_id, now)
    seq = _insert_message(
        conn, req, direction="outbound", state="pending", body=body, now=now,
        outbox_id=req.message_id, client_id=req.client_id,
    )  # fmt: skip
    queued = int_or_none(
        conn,
        "INSERT INTO outbox (outbox_id, conversation_id, kind, body, created_at, state)"
        " VALUES (?, ?, ?, ?, ?, 'pending') ON CONFLICT (outbox_id) DO NOTHING RETURNING seq",
        (req.message_id, req.conversation_id, req.kind, wire, now),
    )
    if queued is None:  # the savepoint undoes the message row written above
        raise _conflict("outbox id already used")
    return ConversationSendReply(message_id=req.message_id, seq=seq, created=True)


def _message_row(row: Sequence[Any]) -> MessageRow | None:
    """The row as its model, or None for one that does not decode (a reader skips it)."""
    fields = dict(zip(_ROW_COLUMNS, row, strict=True))
    fields["body"] = stored_object(fields["body"])
    try:
        if fields["body"] is None:
            raise ValueError("undecodable body")
        return MessageRow.model_validate(fields)
    except ValueError:  # a ValidationError too
        log.warning("store.row_skipped table=messages seq=%s", fields["seq"])
        return None


def _row_cost(row: Sequence[Any]) -> int:
    return _ROW_OVERHEAD + sum(
        len(value) if isinstance(value, bytes) else len(str(value).encode()) for value in row
    )


def conversation_history(
    conn: Connection, req: ConversationHistoryRequest, now: float
) -> ConversationHistoryReply:
    rows = conn.execute(
        f"{_SELECT_ROWS} WHERE conversation_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        (req.conversation_id, req.after_seq, req.limit),
    ).fetchall()
    decoded = (_message_row(row) for row in within_budget(rows, _row_cost))
    return ConversationHistoryReply(rows=tuple(row for row in decoded if row is not None))


def conversation_message(
    conn: Connection, req: ConversationMessageRequest, now: float
) -> ConversationMessageReply:
    if req.app_scope is None:
        rows = conn.execute(f"{_SELECT_ROWS} WHERE message_id = ?", (req.message_id,)).fetchall()
    else:
        rows = conn.execute(
            f"{_SELECT_ROWS} WHERE app_scope = ? AND client_id = ?",
            (req.app_scope, req.message_id),
        ).fetchall()
    row = _message_row(rows[0]) if rows else None
    if row is None:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "no such message")
    return ConversationMessageReply(row=row)


HANDLERS: Final[tuple[Served, ...]] = (
    write(ConversationReceiveRequest, conversation_receive),
    write(ConversationReceiveManyRequest, conversation_receive_many),
    write(ConversationSendRequest, conversation_send),
    read(ConversationHistoryRequest, conversation_history),
    read(ConversationMessageRequest, conversation_message),
)
