"""Opening the one database, and the boundary where apsw errors become `LineUpError`s.

Theory of operation: the file is `<data_dir>/lineup.db`, created owner-only. It runs in WAL
mode: readers never block the single writer, and a commit is one append to the WAL. With
`synchronous=NORMAL` (the default) a committed transaction survives a crash of *this process*
and the file stays consistent on power loss, though the last commits before the power cut may
be lost; `sqlite_synchronous: "full"` in the config fsyncs every commit for power-loss
durability too (DESIGN §3). Foreign keys are enforced. The schema is brought up to date by
`migrate` before anyone may use the connection.

Everything here blocks: callers run it on the store's database thread. No apsw exception and no
apsw type leaves this package: `as_lineup_error` maps them to `store_unavailable`, and the
connection is only ever handed to the committer and the query functions.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

import apsw

from lineup.actors.kernel.errors import ErrorCode, LineUpError, LocalProtocolError, describe_failure

from ._migrations import MIGRATIONS

__all__ = [
    "BUSY_TIMEOUT_MS",
    "DB_FILENAME",
    "Connection",
    "Database",
    "as_lineup_error",
    "migrate",
    "open_database",
    "rollback_quietly",
    "synchronous_mode",
]

log = logging.getLogger("lineup.store")

DB_FILENAME: Final = "lineup.db"
# Only the store writes, so waiting on a lock means an outside reader (a backup, a test's
# second connection) is checkpointing; give it a moment before reporting the store unavailable.
BUSY_TIMEOUT_MS: Final = 5_000

Synchronous = Literal["normal", "full"]
Connection: TypeAlias = apsw.Connection


@dataclass(frozen=True, slots=True)
class Database:
    """An open, migrated connection and the facts the stats reply reports."""

    conn: Connection
    path: Path
    schema_version: int
    synchronous: Synchronous

    def close(self) -> None:
        try:
            self.conn.close()
        except apsw.Error as exc:
            raise as_lineup_error(exc) from exc


def synchronous_mode(config: Mapping[str, Any]) -> Synchronous:
    """`"normal"` unless the config asks for `"full"`. Refuses anything else: a typo must not
    silently weaken durability."""
    raw = config.get("sqlite_synchronous", "normal")
    if raw == "normal":
        return "normal"
    if raw == "full":
        return "full"
    raise LocalProtocolError(ErrorCode.INVALID_ARGUMENTS, "sqlite_synchronous: normal or full")


def open_database(data_dir: Path, config: Mapping[str, Any]) -> Database:
    """Open (creating if needed) and migrate `<data_dir>/lineup.db`. Blocking.

    Raises `LineUpError(store_unavailable)` if the file cannot be opened or migrated, and
    `LocalProtocolError(invalid_arguments)` for a bad `sqlite_synchronous` setting.
    """
    synchronous = synchronous_mode(config)
    path = data_dir / DB_FILENAME
    try:
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Create the file owner-only; SQLite gives the -wal and -shm files the same mode.
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    except OSError as exc:
        raise LineUpError(ErrorCode.STORE_UNAVAILABLE, type(exc).__name__) from exc
    try:
        conn = apsw.Connection(
            str(path), flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
        )
    except apsw.Error as exc:
        raise as_lineup_error(exc) from exc
    try:
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        mode = _scalar(conn, "PRAGMA journal_mode=WAL")
        if str(mode).lower() != "wal":
            raise LineUpError(ErrorCode.STORE_UNAVAILABLE, f"journal_mode is {mode}")
        conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
        conn.execute("PRAGMA foreign_keys=ON")
        version = migrate(conn)
    except apsw.Error as exc:
        conn.close()
        raise as_lineup_error(exc) from exc
    except BaseException:
        conn.close()
        raise
    log.info("store.opened schema_version=%d synchronous=%s", version, synchronous)
    return Database(conn, path, version, synchronous)


def migrate(conn: Connection, migrations: tuple[tuple[int, str], ...] = MIGRATIONS) -> int:
    """Apply every migration newer than `PRAGMA user_version`, one transaction each.

    Returns the resulting version. Raises `LineUpError(store_unavailable)` if a migration
    fails (the database stays at the previous version) or the file is newer than this code.
    """
    latest = migrations[-1][0] if migrations else 0
    current = _user_version(conn)
    if current > latest:
        raise LineUpError(
            ErrorCode.STORE_UNAVAILABLE,
            f"database schema {current} is newer than this runtime ({latest})",
        )
    for version, sql in migrations:
        if version <= current:
            continue
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(sql)
            # user_version lives in the file header and is covered by the same transaction.
            conn.execute(f"PRAGMA user_version={int(version)}")
            conn.execute("COMMIT")
        except apsw.Error as exc:
            rollback_quietly(conn)
            raise LineUpError(
                ErrorCode.STORE_UNAVAILABLE, f"migration {version} failed: {type(exc).__name__}"
            ) from exc
        log.info("store.migrated version=%d", version)
        current = version
    return current


def _scalar(conn: Connection, sql: str) -> apsw.SQLiteValue:
    rows = conn.execute(sql).fetchall()
    if not rows:
        raise LineUpError(ErrorCode.STORE_UNAVAILABLE, "pragma returned no row")
    return rows[0][0]


def _user_version(conn: Connection) -> int:
    value = _scalar(conn, "PRAGMA user_version")
    assert isinstance(value, int)
    return value


def rollback_quietly(conn: Connection) -> None:
    """Roll back the open transaction, if any; used on paths that already report an error."""
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    except Exception:
        log.warning("store.rollback_failed")


def as_lineup_error(exc: BaseException) -> LineUpError:
    """The error a request sees for `exc`, raised inside an operation or by SQLite itself.

    A `LineUpError` is a domain refusal and passes unchanged. An apsw error means the database
    could not do its job: `store_unavailable` (its class name only — SQLite messages can quote
    values). Anything else is a bug in the store: `internal_error`, logged with its traceback.
    The cause is chained so the log keeps the original.
    """
    if isinstance(exc, LineUpError):
        return exc
    if isinstance(exc, apsw.Error):
        err = LineUpError(ErrorCode.STORE_UNAVAILABLE, type(exc).__name__)
    else:
        log.error("store.operation_failed error=%s", describe_failure(exc))
        err = LineUpError(ErrorCode.INTERNAL_ERROR, type(exc).__name__)
    err.__cause__ = exc
    return err
