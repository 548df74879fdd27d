"""Capability requests that wait (`store.capability_request.*`; the models' module says what a
row is). One blocking function per request, each in its own savepoint (`_rows`): an end writes
the row's result and its final audit row together, and only if the row was still open.
Rows ended more than `RETAINED_S` ago are dropped when a new one opens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from .._db import Connection
from .._rows import json_text, stored_object
from .._table import Served, read, write, write_as
from ..audit.messages import AuditRecord
from ..audit.operations import audit_append
from .request_messages import (
    RETAINED_S,
    CapabilityRequestEndReply,
    CapabilityRequestEndRequest,
    CapabilityRequestListReply,
    CapabilityRequestListRequest,
    CapabilityRequestOpenReply,
    CapabilityRequestOpenRequest,
    CapabilityRequestRow,
)

__all__ = [
    "HANDLERS",
    "RETAINED_S",
    "capability_request_end",
    "capability_request_list",
    "capability_request_open",
]


_COLUMNS: Final = (
    "asker", "request_id", "app_scope", "capability", "state", "status", "code", "output",
    "opened_at", "deadline_at", "ended_at",
)  # fmt: skip
_SELECT: Final = f"SELECT {', '.join(_COLUMNS)} FROM capability_requests"


def _row(values: Sequence[Any]) -> CapabilityRequestRow:
    fields = dict(zip(_COLUMNS, values, strict=True))
    fields["output"] = None if fields["output"] is None else stored_object(fields["output"])
    return CapabilityRequestRow.model_validate(fields)


def _load(conn: Connection, asker: str, request_id: str) -> CapabilityRequestRow | None:
    rows = conn.execute(
        f"{_SELECT} WHERE asker = ? AND request_id = ?", (asker, request_id)
    ).fetchall()
    return _row(rows[0]) if rows else None


def capability_request_open(
    conn: Connection, req: CapabilityRequestOpenRequest, now: float
) -> CapabilityRequestOpenReply:
    conn.execute(
        "DELETE FROM capability_requests WHERE state = 'ended' AND ended_at < ?",
        (now - RETAINED_S,),
    )
    conn.execute(
        "INSERT INTO capability_requests (asker, request_id, app_scope, capability, state,"
        " opened_at, deadline_at) VALUES (?, ?, ?, ?, 'open', ?, ?)"
        " ON CONFLICT (asker, request_id) DO NOTHING",
        (req.asker, req.request_id, req.app_scope, req.capability, now, req.deadline_at),
    )
    opened = conn.changes() == 1
    row = _load(conn, req.asker, req.request_id)
    assert row is not None  # inserted, or the conflict that stopped the insert
    return CapabilityRequestOpenReply(row=row, opened=opened)


def capability_request_end(
    conn: Connection, req: CapabilityRequestEndRequest, now: float, *, actor: str = "store"
) -> CapabilityRequestEndReply:
    output = None if req.output is None else json_text(req.output)
    conn.execute(
        "UPDATE capability_requests SET state = 'ended', status = ?, code = ?, output = ?,"
        " ended_at = ? WHERE asker = ? AND request_id = ? AND state = 'open'",
        (req.status, req.code, output, now, req.asker, req.request_id),
    )
    ended = conn.changes() == 1
    row = _load(conn, req.asker, req.request_id)
    if ended:
        assert row is not None
        record = AuditRecord(
            event=req.event,
            actor=actor,
            peer=row.app_scope,
            subject_id=row.request_id,
            message_type=row.capability,
            code=req.code or req.status,
            at=now,
        )
        audit_append(conn, [record], now)
    return CapabilityRequestEndReply(row=row, ended=ended)


def capability_request_list(
    conn: Connection, req: CapabilityRequestListRequest, now: float
) -> CapabilityRequestListReply:
    rows = conn.execute(
        f"{_SELECT} WHERE state = 'open' OR ended_at >= ? ORDER BY opened_at DESC LIMIT ?",
        (req.ended_since, req.limit),
    ).fetchall()
    return CapabilityRequestListReply(rows=tuple(_row(values) for values in rows))


HANDLERS: Final[tuple[Served, ...]] = (
    write(CapabilityRequestOpenRequest, capability_request_open),
    write_as(CapabilityRequestEndRequest, capability_request_end),
    read(CapabilityRequestListRequest, capability_request_list),
)
