"""The start-up sweep: every row a start-up reader would fail on is quarantined before anyone
reads it, so `lineup run` comes up on any data dir a hostile message has touched (issue 11).

Theory of operation: the store runs `sweep` once, in one write transaction, right after opening
the database. It reads what the other actors read when they start — pending inbox deliveries
(every app lists its inbox), pending outbox rows (the transport), live instances (focus), open
tool calls (the router), the transport's session and sync cursors (the router, the transport) —
each column as bytes where it can, since a TEXT value that is not UTF-8 would fail a whole fetch
(a tool call is read row by row, for the same reason). A row its reader would refuse is copied
verbatim into `dead_letters` with an audit row, then taken out of the reader's way as that table
allows: a delivery is marked delivered, an outbox row failed (its message and call settle as for
any refusal), an instance failed and off the focus stack, a tool call failed, a cursor forgotten
(the transport logs in and syncs again; message ids dedupe the replay). A conversation message
is only skipped by the history that reads it (no start-up depends on one). The readers also skip
such rows, for one written after the sweep. It runs before the committer starts, so before any
request is served.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, Final

from pydantic import ValidationError

from lineup.facts import instances as instance_states
from lineup.facts import tool_calls as call_states
from lineup.facts.link import SESSION_CURSOR, SYNC_CURSOR

from .._db import Connection, rollback_quietly
from .._rows import stored_object
from ..instances.operations import INSTANCE_COLUMNS, instance_row
from ..outbox.messages import OutboxFailRequest, OutboxRow
from ..outbox.operations import outbox_fail
from ..tool_calls.operations import _COLUMNS as _CALL_COLUMNS
from ..tool_calls.operations import _row as tool_call_row
from .operations import OUT_OF_BOUNDS, UNDECODABLE, quarantine, summary

__all__ = ["sweep", "sweep_at_start", "text_of"]

log = logging.getLogger("lineup.store")

MAX_SYNC_CURSOR: Final = 1000  # as `CursorSetRequest` bounds it
ACTOR: Final = "store"


def text_of(raw: object) -> str | None:
    """A column read as bytes, as text, or None if it is not UTF-8 (or not text at all)."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, bytes):
        try:
            return raw.decode()
        except UnicodeDecodeError:
            return None
    return None


def _bad(rows: Iterable[Any], ok: Callable[[Any], bool]) -> list[Any]:
    # The whole result is read before anything is written (a running statement would block the
    # savepoint's release), keeping only the rows that fail.
    return [row for row in rows if not ok(row)]


def _inbox(conn: Connection, now: float) -> int:
    def ok(row: Any) -> bool:
        _, delivery_id, body = row
        text = text_of(delivery_id)
        return text is not None and 1 <= len(text) <= 200 and stored_object(body) is not None

    bad = _bad(
        conn.execute(
            "SELECT seq, CAST(delivery_id AS BLOB), CAST(body AS BLOB) FROM app_inbox"
            " WHERE acked_at IS NULL"
        ),
        ok,
    )
    for seq, _, _ in bad:
        scope = conn.execute(
            "SELECT CAST(app_scope AS BLOB) FROM app_inbox WHERE seq = ?", (seq,)
        ).fetchall()[0][0]
        quarantine(
            conn, source="inbox", item_id=str(seq), code=UNDECODABLE, now=now, actor=ACTOR,
            peer=text_of(scope), copy_from=("SELECT body FROM app_inbox WHERE seq = ?", (seq,)),
        )  # fmt: skip
        # Delivered, as far as anyone will ever know: a retried put of it is not delivered again.
        conn.execute("UPDATE app_inbox SET acked_at = ?, body = NULL WHERE seq = ?", (now, seq))
    return len(bad)


def _outbox(conn: Connection, now: float) -> int:
    def ok(row: Any) -> bool:
        seq, outbox_id, conversation_id, kind, body, created_at = row
        body = stored_object(body)
        if body is None:
            return False
        try:
            OutboxRow.model_validate({
                "seq": seq, "outbox_id": text_of(outbox_id),
                "conversation_id": text_of(conversation_id), "kind": text_of(kind), "body": body,
                "created_at": created_at,
            })  # fmt: skip
        except ValidationError:
            return False
        return True

    bad = _bad(
        conn.execute(
            "SELECT seq, CAST(outbox_id AS BLOB), CAST(conversation_id AS BLOB),"
            " CAST(kind AS BLOB), CAST(body AS BLOB), created_at FROM outbox"
            " WHERE state = 'pending'"
        ),
        ok,
    )
    for seq, outbox_id, *_ in bad:
        quarantine(
            conn, source="outbox", item_id=str(seq), code=UNDECODABLE, now=now, actor=ACTOR,
            copy_from=("SELECT body FROM outbox WHERE seq = ?", (seq,)),
        )  # fmt: skip
        name = text_of(outbox_id)
        if name is not None and 1 <= len(name) <= 200:
            # Refused for good, as the AppServer would: its message and its call settle too.
            outbox_fail(conn, OutboxFailRequest(outbox_id=name, code=UNDECODABLE), now, actor=ACTOR)
        else:
            conn.execute(
                "UPDATE outbox SET state = 'failed', failed_code = ? WHERE seq = ?",
                (UNDECODABLE, seq),
            )
    return len(bad)


_INSTANCE_COLUMNS: Final = INSTANCE_COLUMNS
_TEXT_COLUMNS: Final = frozenset(
    {"instance_id", "app_scope", "state", "app_session_id", "created_by_call_id"}
    | {"conversation_id", "parent_instance_id", "error", "mode"}
)


def _instances(conn: Connection, now: float) -> int:
    ended = ", ".join(f"'{state}'" for state in sorted(instance_states.FINAL))
    columns = ", ".join(
        f"CAST({name} AS BLOB)" if name in _TEXT_COLUMNS else name for name in _INSTANCE_COLUMNS
    )

    def ok(row: Any) -> bool:
        values = []
        for raw in row[1:]:
            value = text_of(raw) if isinstance(raw, bytes) else raw
            if value is None and raw is not None:
                return False  # a text column that is not UTF-8
            values.append(value)
        try:
            instance_row(values)
        except ValidationError:
            return False
        return True

    bad = _bad(
        conn.execute(f"SELECT rowid, {columns} FROM instances WHERE state NOT IN ({ended})"), ok
    )
    for rowid, *_ in bad:
        quarantine(
            conn, source="instance", item_id=str(rowid), code=OUT_OF_BOUNDS, now=now, actor=ACTOR,
            copy_from=(
                "SELECT json_object('instance_id', quote(instance_id), 'app_scope',"
                " quote(app_scope), 'state', state) FROM instances WHERE rowid = ?",
                (rowid,),
            ),
        )  # fmt: skip
        on_stack = conn.execute(
            "DELETE FROM focus_stack WHERE instance_id IN"
            " (SELECT instance_id FROM instances WHERE rowid = ?) RETURNING position",
            (rowid,),
        ).fetchall()
        if on_stack:  # a change of the stack: a new revision, as every change has
            conn.execute(
                "UPDATE focus_stack_revision SET revision = revision + 1, updated_at = ?", (now,)
            )
        conn.execute(
            "UPDATE instances SET state = 'failed', updated_at = ? WHERE rowid = ?", (now, rowid)
        )
    return len(bad)


def _tool_calls(conn: Connection, now: float) -> int:
    """Open calls the router reads back at start (to converge them with their instances)."""
    final = ", ".join(f"'{state}'" for state in sorted(call_states.FINAL))
    rowids = [
        rowid
        for (rowid,) in conn.execute(f"SELECT rowid FROM tool_calls WHERE state NOT IN ({final})")
    ]
    bad = []
    for rowid in rowids:
        try:
            rows = conn.execute(
                f"SELECT {', '.join(_CALL_COLUMNS)} FROM tool_calls WHERE rowid = ?", (rowid,)
            ).fetchall()
            # Read, and also sent: a lone surrogate escape reads as JSON but cannot be framed.
            tool_call_row(rows[0]).model_dump_json()
        except (ValueError, RecursionError):  # not UTF-8, not JSON, or out of the model's bounds
            bad.append(rowid)
    for rowid in bad:
        quarantine(
            conn, source="tool_call", item_id=str(rowid), code=UNDECODABLE, now=now, actor=ACTOR,
            copy_from=(
                "SELECT json_object('call_id', quote(call_id), 'tool', quote(tool), 'state',"
                " state) FROM tool_calls WHERE rowid = ?",
                (rowid,),
            ),
        )  # fmt: skip
        # Ended, as the router would end a call it could not read: it never reads it again.
        conn.execute(
            "UPDATE tool_calls SET state = 'failed', error_code = ?, updated_at = ?"
            " WHERE rowid = ?",
            (UNDECODABLE, now, rowid),
        )
    return len(bad)


def _session_ok(raw: object) -> bool:
    value = stored_object(raw)
    return value is not None and all(type(v) is str for v in value.values())


def _sync_ok(raw: object) -> bool:
    text = text_of(raw)
    return text is not None and len(text) <= MAX_SYNC_CURSOR and text.isprintable()


def _cursors(conn: Connection, now: float) -> int:
    forgotten = 0
    for name, ok in ((SESSION_CURSOR, _session_ok), (SYNC_CURSOR, _sync_ok)):
        rows = conn.execute(
            "SELECT CAST(value AS BLOB) FROM cursors WHERE name = ?", (name,)
        ).fetchall()
        if not rows or ok(rows[0][0]):
            continue
        quarantine(
            conn, source="cursor", item_id=name, code=UNDECODABLE, now=now, actor=ACTOR,
            copy_from=("SELECT value FROM cursors WHERE name = ?", (name,)),
        )  # fmt: skip
        conn.execute("DELETE FROM cursors WHERE name = ?", (name,))
        forgotten += 1
    return forgotten


_SOURCES: Final[tuple[tuple[str, Callable[[Connection, float], int]], ...]] = (
    ("inbox", _inbox),
    ("outbox", _outbox),
    ("instance", _instances),
    ("tool_call", _tool_calls),
    ("cursor", _cursors),
)


def sweep(conn: Connection, now: float) -> dict[str, int]:
    """Quarantine every row a start-up reader could not decode; how many, per source (only the
    sources that had any). Runs in the caller's transaction, each source in a savepoint of its
    own: one that fails is undone and logged, and the others are swept all the same."""
    found: dict[str, int] = {}
    for source, sweep_one in _SOURCES:
        conn.execute("SAVEPOINT sweep")
        try:
            count = sweep_one(conn, now)
        except Exception as exc:
            conn.execute("ROLLBACK TO sweep")
            log.error("store.sweep_failed source=%s error=%s", source, type(exc).__name__)
            count = 0
        finally:
            conn.execute("RELEASE sweep")
        if count:
            found[source] = count
            log.warning("store.quarantined source=%s count=%d", source, count)
    return found


def sweep_at_start(conn: Connection, now: float) -> tuple[int, dict[str, int]]:
    """`sweep` in a transaction of its own, on the connection no one else uses yet; then the
    dead letters' summary. Never raises for a sweep that fails: it is rolled back and logged,
    the readers skip what it would have moved, and the store comes up regardless."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        sweep(conn, now)
        conn.execute("COMMIT")
    except Exception as exc:
        rollback_quietly(conn)
        log.error("store.sweep_failed error=%s", type(exc).__name__)
    try:
        return summary(conn)
    except Exception as exc:
        log.error("store.summary_failed error=%s", type(exc).__name__)
        return 0, {}
