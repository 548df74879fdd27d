"""App inboxes (`store.inbox.*`): deliveries put, listed in order, and acknowledged.

The contract of every operation (`_rows`). A put is idempotent by `(app_scope, delivery_id)`; an
acknowledged delivery keeps a body-less row so that a retried put of the same delivery does not
deliver it again. An acknowledgement names the whole inbox, so an app only ever acknowledges
deliveries it may list. Messages received from an Agent are put here by
`conversations.operations`, in the transaction that records them.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from .._db import Connection
from .._rows import body_cost, int_or_none, json_text, stored_object, within_budget
from .._table import Served, read, write
from .messages import (
    InboxAckManyReply,
    InboxAckManyRequest,
    InboxAckReply,
    InboxAckRequest,
    InboxListReply,
    InboxListRequest,
    InboxPutReply,
    InboxPutRequest,
    InboxRow,
)

__all__ = [
    "HANDLERS",
    "inbox_ack",
    "inbox_ack_many",
    "inbox_list",
    "inbox_put",
]

log = logging.getLogger("lineup.store")


def inbox_put(conn: Connection, req: InboxPutRequest, now: float) -> InboxPutReply:
    seq = int_or_none(
        conn,
        "INSERT INTO app_inbox (app_scope, conversation_id, instance_id, delivery_id, body,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (app_scope, delivery_id) DO NOTHING RETURNING seq",
        (req.app_scope, req.conversation_id, req.instance_id, req.delivery_id,
         json_text(req.body), now),
    )  # fmt: skip
    created = seq is not None
    if seq is None:
        seq = int_or_none(
            conn,
            "SELECT seq FROM app_inbox WHERE app_scope = ? AND delivery_id = ?",
            (req.app_scope, req.delivery_id),
        )
        assert seq is not None  # the conflict that stopped the insert is this row
    return InboxPutReply(delivery_id=req.delivery_id, seq=seq, created=created)


# One inbox. `IS` matches NULL to NULL, so naming no instance lists the conversation-level
# deliveries only, and `NOT (...)` below is never NULL; it still uses `app_inbox_pending`.
_ONE_INBOX: Final = "app_scope = ? AND conversation_id IS ? AND instance_id IS ?"


def inbox_list(conn: Connection, req: InboxListRequest, now: float) -> InboxListReply:
    # Bodies as bytes: one that is not UTF-8 must cost only its own row (skipped below).
    # A delivery of an Agent's message has the message's id (`conversations/`): its
    # conversation seq is found by that unique id.
    rows: list[Any] = conn.execute(
        "SELECT seq, delivery_id, CAST(body AS BLOB), created_at, (SELECT m.seq FROM messages m"
        " WHERE m.message_id = i.delivery_id AND m.app_scope = i.app_scope"
        f" AND m.direction = 'inbound') FROM app_inbox AS i WHERE {_ONE_INBOX}"
        " AND acked_at IS NULL AND seq > ? ORDER BY seq LIMIT ?",
        (req.app_scope, req.conversation_id, req.instance_id, req.after_seq, req.limit),
    ).fetchall()
    listed = []
    for seq, delivery_id, raw, created_at, message_seq in within_budget(rows, body_cost(2)):
        body = stored_object(raw)
        if body is None or not isinstance(delivery_id, str) or not 1 <= len(delivery_id) <= 200:
            # Poison: never listed, so the app moves past it; the start-up sweep quarantines it.
            log.warning("store.row_skipped table=app_inbox seq=%d", seq)
            continue
        listed.append(
            InboxRow(
                seq=seq,
                message_seq=message_seq,
                app_scope=req.app_scope,
                conversation_id=req.conversation_id,
                instance_id=req.instance_id,
                delivery_id=delivery_id,
                body=body,
                created_at=created_at,
            )
        )
    return InboxListReply(rows=tuple(listed))


def _ack_one(
    conn: Connection, key: tuple[str, str, str | None], delivery_id: str, now: float
) -> tuple[bool, bool]:
    """(acked, foreign) for one delivery of the inbox `key`."""
    # The whole inbox is the key: an app only ever acknowledges deliveries it may list.
    conn.execute(
        f"UPDATE app_inbox SET acked_at = ?, body = NULL WHERE {_ONE_INBOX}"
        " AND delivery_id = ? AND acked_at IS NULL",
        (now, *key, delivery_id),
    )
    if conn.changes() == 1:
        return True, False
    foreign = conn.execute(
        f"SELECT 1 FROM app_inbox WHERE delivery_id = ? AND NOT ({_ONE_INBOX}) LIMIT 1",
        (delivery_id, *key),
    ).fetchall()
    return False, bool(foreign)


def inbox_ack(conn: Connection, req: InboxAckRequest, now: float) -> InboxAckReply:
    key = (req.app_scope, req.conversation_id, req.instance_id)
    acked, foreign = _ack_one(conn, key, req.delivery_id, now)
    return InboxAckReply(delivery_id=req.delivery_id, acked=acked, foreign=foreign)


def inbox_ack_many(conn: Connection, req: InboxAckManyRequest, now: float) -> InboxAckManyReply:
    key = (req.app_scope, req.conversation_id, req.instance_id)
    acked: list[str] = []
    foreign: list[str] = []
    for delivery_id in req.delivery_ids:
        removed, theirs = _ack_one(conn, key, delivery_id, now)
        if removed:
            acked.append(delivery_id)
        elif theirs:
            foreign.append(delivery_id)
    return InboxAckManyReply(acked=tuple(acked), foreign=tuple(foreign))


HANDLERS: Final[tuple[Served, ...]] = (
    write(InboxPutRequest, inbox_put),
    read(InboxListRequest, inbox_list),
    write(InboxAckRequest, inbox_ack),
    write(InboxAckManyRequest, inbox_ack_many),
)
