"""App sub-sessions and their outbox rows (`store.app_session.*`).

The contract of every operation (`_rows`): one blocking function per request, inside its own
savepoint. Opening writes the sub-session and its `app_session.opened` outbox row, closing its
state and its `app_session.closed` row: each both or nothing. Idempotency is in the SQL: a
sub-session is keyed by its id (the router derives it from the instance, so a retry is a
repeat), and one instance has at most one (a unique index).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from lineup.actors.kernel.errors import ErrorCode, LineUpError

from .._db import Connection
from .._fields import MAX_WIRE_BYTES, MAX_WIRE_DEPTH, bounded_json, wire_kind
from .._rows import int_or_none, within_budget
from .._table import Served, read, write_as
from ..audit.messages import AuditRecord
from ..audit.operations import audit_append
from .messages import (
    AppSessionCloseReply,
    AppSessionCloseRequest,
    AppSessionGetReply,
    AppSessionGetRequest,
    AppSessionListReply,
    AppSessionListRequest,
    AppSessionOpenReply,
    AppSessionOpenRequest,
    AppSessionRow,
)

__all__ = [
    "HANDLERS",
    "app_session_close",
    "app_session_get",
    "app_session_list",
    "app_session_open",
]

_COLUMNS: Final = (
    "app_session_id", "app_scope", "instance_id", "agent_id", "conversation_id", "state",
    "opened_at", "closed_at", "previous_app_session_id",
)  # fmt: skip
_SELECT: Final = f"SELECT {', '.join(_COLUMNS)} FROM app_sessions"


def _row(values: Sequence[Any]) -> AppSessionRow:
    return AppSessionRow.model_validate(dict(zip(_COLUMNS, values, strict=True)))


def _load(conn: Connection, where: str, key: str) -> AppSessionRow | None:
    rows = conn.execute(f"{_SELECT} WHERE {where} = ?", (key,)).fetchall()
    return _row(rows[0]) if rows else None


def _queue(
    conn: Connection, outbox_id: str, conversation_id: str, wire: dict[str, Any], now: float
) -> None:
    text = bounded_json(wire, max_bytes=MAX_WIRE_BYTES, max_depth=MAX_WIRE_DEPTH, what="wire")
    seq = int_or_none(
        conn,
        "INSERT INTO outbox (outbox_id, conversation_id, kind, body, created_at, state)"
        " VALUES (?, ?, ?, ?, ?, 'pending') ON CONFLICT (outbox_id) DO NOTHING RETURNING seq",
        (outbox_id, conversation_id, wire_kind(wire), text, now),
    )
    if seq is None:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "outbox id already used")


def _audit(conn: Connection, now: float, actor: str, row: AppSessionRow) -> None:
    record = AuditRecord(
        event=f"store.app_session.{row.state}",
        actor=actor,
        peer=row.app_scope,
        subject_id=row.app_session_id,
        at=now,
    )
    audit_append(conn, [record], now)


def app_session_open(
    conn: Connection, req: AppSessionOpenRequest, now: float, *, actor: str = "store"
) -> AppSessionOpenReply:
    found = _load(conn, "app_session_id", req.app_session_id)
    if found is not None:
        return AppSessionOpenReply(session=found, created=False)
    other = _load(conn, "instance_id", req.instance_id)
    if other is not None:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "the instance has another sub-session")
    conn.execute(
        "INSERT INTO app_sessions (app_session_id, app_scope, instance_id, agent_id,"
        " conversation_id, state, opened_at, previous_app_session_id)"
        " VALUES (?, ?, ?, ?, ?, 'open', ?, ?)",
        (req.app_session_id, req.app_scope, req.instance_id, req.agent_id, req.conversation_id,
         now, req.previous_app_session_id),
    )  # fmt: skip
    _queue(conn, req.outbox_id, req.conversation_id, req.wire, now)
    made = _load(conn, "app_session_id", req.app_session_id)
    assert made is not None
    _audit(conn, now, actor, made)
    return AppSessionOpenReply(session=made, created=True)


def app_session_close(
    conn: Connection, req: AppSessionCloseRequest, now: float, *, actor: str = "store"
) -> AppSessionCloseReply:
    found = _load(conn, "app_session_id", req.app_session_id)
    if found is None:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "no such app sub-session")
    if found.state == "closed":
        return AppSessionCloseReply(session=found, changed=False)
    conn.execute(
        "UPDATE app_sessions SET state = 'closed', closed_at = ? WHERE app_session_id = ?",
        (now, req.app_session_id),
    )
    _queue(conn, req.outbox_id, found.conversation_id, req.wire, now)
    closed = _load(conn, "app_session_id", req.app_session_id)
    assert closed is not None
    _audit(conn, now, actor, closed)
    return AppSessionCloseReply(session=closed, changed=True)


def app_session_get(conn: Connection, req: AppSessionGetRequest, now: float) -> AppSessionGetReply:
    if req.app_session_id is not None:
        return AppSessionGetReply(session=_load(conn, "app_session_id", req.app_session_id))
    assert req.instance_id is not None
    return AppSessionGetReply(session=_load(conn, "instance_id", req.instance_id))


def app_session_list(
    conn: Connection, req: AppSessionListRequest, now: float
) -> AppSessionListReply:
    rows = conn.execute(
        f"{_SELECT} WHERE state = 'open' ORDER BY opened_at, app_session_id"
    ).fetchall()
    if not req.open_only:
        rows += conn.execute(
            f"{_SELECT} WHERE state = 'closed' ORDER BY closed_at DESC, app_session_id DESC"
            " LIMIT ?",
            (req.recent,),
        ).fetchall()
    kept = within_budget(rows, lambda values: 256 + sum(len(str(v).encode()) for v in values))
    return AppSessionListReply(sessions=tuple(_row(values) for values in kept))


HANDLERS: Final[tuple[Served, ...]] = (
    write_as(AppSessionOpenRequest, app_session_open),
    write_as(AppSessionCloseRequest, app_session_close),
    read(AppSessionGetRequest, app_session_get),
    read(AppSessionListRequest, app_session_list),
)
