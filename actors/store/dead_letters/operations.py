"""Dead letters: an item moved out of the way, with an audit row, so processing moves past it.

The contract of every operation (`_rows`). `quarantine` is the one way in: it keeps the item
(`body` verbatim), writes the audit row (ids and codes, never the body) in the same savepoint,
and is idempotent by `(source, item_id)`. The router puts an inbound item that failed twice
(`dead_letter_put`); the store quarantines the rows its start-up readers could not decode
(`sweep`). The summary counts them by `source:code` for `lineup status`.
"""

from __future__ import annotations

from typing import Any, Final

from lineup.actors.kernel.errors import ErrorCode

from .._db import Connection
from .._rows import int_or_none, json_text
from .._table import Served, read
from ..audit.messages import AuditRecord
from ..audit.operations import audit_append
from .messages import (
    DeadLetterListReply,
    DeadLetterListRequest,
    DeadLetterPutReply,
    DeadLetterPutRequest,
    DeadLetterRow,
    DeadLetterSummaryReply,
    DeadLetterSummaryRequest,
)

__all__ = [
    "AUDIT_EVENT",
    "HANDLERS",
    "OUT_OF_BOUNDS",
    "UNDECODABLE",
    "dead_letter_list",
    "dead_letter_put",
    "dead_letter_summary",
    "quarantine",
    "summary",
]

AUDIT_EVENT: Final = "store.dead_lettered"
UNDECODABLE: Final = ErrorCode.ENVELOPE_MALFORMED.value  # a body no reader can decode
OUT_OF_BOUNDS: Final = ErrorCode.INVALID_ARGUMENTS.value  # a row whose fields break the model
_AUDIT_ID: Final = 200  # the audit record's id fields


def _clip(value: str | None) -> str | None:
    return value[:_AUDIT_ID] if value is not None else None


def quarantine(
    conn: Connection,
    *,
    source: str,
    item_id: str,
    code: str,
    now: float,
    actor: str,
    kind: str | None = None,
    attempts: int = 1,
    body: object = None,
    copy_from: tuple[str, tuple[object, ...]] | None = None,
    peer: str | None = None,
) -> tuple[int, bool]:
    """Keep one item as a dead letter and audit it; (its seq, whether it is new). The body is
    `body`, or, for a stored row, `copy_from`: a `SELECT` of exactly one value and its bindings,
    so a value Python could not even read is copied by SQLite as it is."""
    if copy_from is None:
        sql = (
            "INSERT INTO dead_letters (source, item_id, kind, code, attempts, body, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source, item_id) DO NOTHING RETURNING seq"
        )
        bindings: tuple[object, ...] = (source, item_id, kind, code, attempts, body, now)
    else:
        select, where = copy_from
        sql = (
            "INSERT INTO dead_letters (source, item_id, kind, code, attempts, body, created_at)"
            f" SELECT ?, ?, ?, ?, ?, ({select}), ?"
            " ON CONFLICT (source, item_id) DO NOTHING RETURNING seq"
        )
        bindings = (source, item_id, kind, code, attempts, *where, now)
    seq = int_or_none(conn, sql, bindings)
    if seq is None:
        before = int_or_none(
            conn,
            "SELECT seq FROM dead_letters WHERE source = ? AND item_id = ?",
            (source, item_id),
        )
        assert before is not None  # the conflict that stopped the insert is this row
        return before, False
    audit_append(
        conn,
        [
            AuditRecord(
                event=AUDIT_EVENT,
                actor=actor,
                peer=_clip(peer),
                code=code,
                message_type=_clip(kind),
                subject_id=_clip(f"{source}:{item_id}"),
                at=now,
            )
        ],
        now,
    )
    return seq, True


def dead_letter_put(
    conn: Connection, req: DeadLetterPutRequest, now: float, *, actor: str = "store"
) -> DeadLetterPutReply:
    body = json_text(req.body) if req.body is not None else None
    seq, created = quarantine(
        conn,
        source=req.source,
        item_id=req.item_id,
        kind=req.kind,
        code=req.code,
        attempts=req.attempts,
        body=body,
        now=now,
        actor=actor,
    )
    return DeadLetterPutReply(seq=seq, created=created)


_ROW: Final = ("seq", "source", "item_id", "kind", "code", "attempts", "created_at")


def dead_letter_list(
    conn: Connection, req: DeadLetterListRequest, now: float
) -> DeadLetterListReply:
    rows: list[Any] = conn.execute(
        f"SELECT {', '.join(_ROW)} FROM dead_letters WHERE seq > ? ORDER BY seq LIMIT ?",
        (req.after_seq, req.limit),
    ).fetchall()
    return DeadLetterListReply(
        rows=tuple(DeadLetterRow(**dict(zip(_ROW, row, strict=True))) for row in rows)
    )


def summary(conn: Connection) -> tuple[int, dict[str, int]]:
    """(how many dead letters, how many per `source:code`)."""
    kinds: dict[str, int] = {}
    for source, code, count in conn.execute(
        "SELECT source, code, count(*) FROM dead_letters GROUP BY source, code"
        " ORDER BY source, code"
    ).fetchall():
        assert isinstance(count, int)
        kinds[f"{source}:{code}"] = count
    return sum(kinds.values()), kinds


def dead_letter_summary(
    conn: Connection, req: DeadLetterSummaryRequest, now: float
) -> DeadLetterSummaryReply:
    count, kinds = summary(conn)
    return DeadLetterSummaryReply(count=count, kinds=kinds)


# Served by the actor itself: `StoreActor.on_dead_letter_put` (it also refreshes the summary).
HANDLERS: Final[tuple[Served, ...]] = (
    read(DeadLetterListRequest, dead_letter_list),
    read(DeadLetterSummaryRequest, dead_letter_summary),
)
