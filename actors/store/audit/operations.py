"""The audit log: appends (the bus's rows, other actors' `AuditAppendRequest`s, and every area's
own audit rows) and queries.

The contract of every operation (`_rows`). An append is not a table row: the actor serves it by
hand, since the row's `actor` is the channel-bound sender's, never what the record claims; an
area that audits a change calls `audit_append` inside the change's own savepoint.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, Final

from .._db import Connection
from .._table import Served, read
from .messages import AuditQueryReply, AuditQueryRequest, AuditRecord

__all__ = ["HANDLERS", "audit_append", "audit_query"]

_AUDIT_COLUMNS: Final = ("at", "event", "actor", "peer", "code", "message_type", "subject_id")


def _fingerprint(row: tuple[Any, ...]) -> bytes:
    return hashlib.blake2b(json.dumps(row).encode(), digest_size=16).digest()


def audit_append(conn: Connection, records: Sequence[AuditRecord], now: float) -> int:
    """Insert audit rows; a record already present (same fields, same `at`) is not repeated.

    Records arrive with `at` filled by the bus that saw the event; a missing one gets `now`.
    Returns how many rows were new.
    """
    before = conn.total_changes()
    for record in records:
        row = (
            record.at or now,
            record.event,
            record.actor,
            record.peer,
            record.code,
            record.message_type,
            record.subject_id,
        )
        conn.execute(
            f"INSERT INTO audit ({', '.join(_AUDIT_COLUMNS)}, fingerprint)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (fingerprint) DO NOTHING",
            (*row, _fingerprint(row)),
        )
    return int(conn.total_changes() - before)


def audit_query(conn: Connection, req: AuditQueryRequest, now: float) -> AuditQueryReply:
    rows = conn.execute(
        f"SELECT {', '.join(_AUDIT_COLUMNS)} FROM audit"
        " WHERE (?1 IS NULL OR substr(event, 1, length(?1)) = ?1) AND (?2 IS NULL OR peer = ?2)"
        " ORDER BY id DESC LIMIT ?3",
        (req.event_prefix, req.peer, req.limit),
    ).fetchall()
    return AuditQueryReply(
        records=tuple(
            AuditRecord(**dict(zip(_AUDIT_COLUMNS, row, strict=True))) for row in reversed(rows)
        )
    )


# Appends are served by the actor itself (`StoreActor.on_audit_append`).
HANDLERS: Final[tuple[Served, ...]] = (read(AuditQueryRequest, audit_query),)
