"""Named cursors (`store.cursor.*`): one value per name, the last write wins.

The contract of every operation (`_rows`).
"""

from __future__ import annotations

from typing import Final

from .._db import Connection
from .._table import Served, read, write
from .messages import CursorGetReply, CursorGetRequest, CursorSetReply, CursorSetRequest

__all__ = ["HANDLERS", "cursor_get", "cursor_set", "write_cursor"]


def cursor_get(conn: Connection, req: CursorGetRequest, now: float) -> CursorGetReply:
    rows = conn.execute("SELECT value FROM cursors WHERE name = ?", (req.name,)).fetchall()
    return CursorGetReply(name=req.name, value=str(rows[0][0]) if rows else None)


def cursor_set(conn: Connection, req: CursorSetRequest, now: float) -> CursorSetReply:
    write_cursor(conn, req.name, req.value, now)
    return CursorSetReply(name=req.name, value=req.value)


def write_cursor(conn: Connection, name: str, value: str, now: float) -> None:
    """Set cursor `name` to `value`, inside the caller's transaction. No request model and no
    reply built: a sync page's receive writes its cursor on every commit."""
    conn.execute(
        "INSERT INTO cursors (name, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (name)"
        " DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        (name, value, now),
    )


HANDLERS: Final[tuple[Served, ...]] = (
    read(CursorGetRequest, cursor_get),
    write(CursorSetRequest, cursor_set),
)
