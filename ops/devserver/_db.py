"""The devserver's own SQLite file: messages, idempotency records and tokens.

Theory of operation: one apsw connection in WAL mode writes, on the event loop's thread, where
a commit of a message (WAL, `synchronous=NORMAL`: appended to the log, no fsync) costs far less
than a hop to a worker thread and back; a second, read-only connection serves the reads
(`principal_of`, `messages_after`) there too, and never waits behind a write: WAL lets a
reader read beside the writer. The one slow step of a WAL database, the checkpoint (copying the
log into the file, with an fsync), never runs in a commit: the writer's automatic checkpoint
is off (its WAL hook only counts the log's pages), and once the log is past `CHECKPOINT_PAGES`
the app runs `checkpoint` on a worker thread, on a third connection, beside the writer
(PASSIVE). Every
message gets two numbers: `position`, a global, never-reused row id that the opaque sync cursor
encodes (so one cursor spans all of an agent's conversations), and `seq`, which increases by one
per message within its conversation across both directions. Posting checks the idempotency
record and stores the message in one transaction, so a repeated key can never store a second
row, even across a restart. Tokens are kept only as SHA-256 digests. Everything here blocks; no
apsw exception leaves this module (`StoreError` replaces it).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import apsw

from ._protocol import Direction, PrincipalKind

__all__ = [
    "BUSY_TIMEOUT_MS",
    "CHECKPOINT_PAGES",
    "DevDatabase",
    "PostOutcome",
    "Principal",
    "StoreError",
]

BUSY_TIMEOUT_MS: Final = 5_000
CHECKPOINT_PAGES: Final = 1000  # the log's size that asks for a checkpoint (SQLite's default)
SCHEMA_VERSION: Final = 1

_SCHEMA: Final = (
    """CREATE TABLE messages (
        position INTEGER PRIMARY KEY AUTOINCREMENT,
        conversation_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        direction TEXT NOT NULL CHECK (direction IN ('to_agent', 'to_client')),
        message_id TEXT NOT NULL,
        envelope TEXT NOT NULL,
        UNIQUE (conversation_id, seq)
    )""",
    "CREATE INDEX messages_by_direction ON messages (direction, conversation_id, position)",
    """CREATE TABLE idempotency (
        principal_kind TEXT NOT NULL,
        principal_id TEXT NOT NULL,
        key TEXT NOT NULL,
        message_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (principal_kind, principal_id, key)
    )""",
    """CREATE TABLE tokens (
        token_sha256 TEXT PRIMARY KEY,
        principal_kind TEXT NOT NULL,
        principal_id TEXT NOT NULL,
        created_at REAL NOT NULL
    )""",
)


class StoreError(Exception):
    """The database could not be opened, read or written."""


@dataclass(frozen=True, slots=True)
class Principal:
    kind: PrincipalKind
    id: str


@dataclass(frozen=True, slots=True)
class PostOutcome:
    message_id: str
    seq: int
    stored: bool  # False when the idempotency key had been seen: the earlier answer, unchanged


def _int(value: object) -> int:
    if not isinstance(value, int):
        raise StoreError("unexpected column type")
    return value


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class DevDatabase:
    """The open database. Not thread-safe by itself: the writes from one thread at a time, the
    reads (`principal_of`, `messages_after`) too, and `checkpoint` one at a time, from any
    thread (it has its own connection)."""

    def __init__(
        self,
        conn: apsw.Connection,
        reader: apsw.Connection,
        checkpointer: apsw.Connection,
        path: Path,
    ) -> None:
        self._conn = conn
        self._reader = reader
        self._checkpointer = checkpointer
        self.path = path
        self.wal_pages = 0  # the log's pages after the last commit
        # A WAL hook replaces SQLite's automatic checkpoint: a commit only counts the pages.
        conn.set_wal_hook(self._logged)

    def _logged(self, conn: apsw.Connection, name: str, pages: int) -> int:
        self.wal_pages = pages
        return apsw.SQLITE_OK

    @property
    def wants_checkpoint(self) -> bool:
        return self.wal_pages >= CHECKPOINT_PAGES

    def checkpoint(self) -> tuple[int, int]:
        """Copy the log into the database file, beside the writer and the readers (PASSIVE):
        (the log's frames, those copied). Blocks on the disk: run it on a worker thread."""
        try:
            return self._checkpointer.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
        except apsw.Error as exc:
            raise StoreError(type(exc).__name__) from exc

    @classmethod
    def open(cls, path: Path) -> DevDatabase:
        """Open (creating owner-only if needed) and migrate. Raises `StoreError`."""
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        except OSError as exc:
            raise StoreError(type(exc).__name__) from exc
        try:
            conn = apsw.Connection(str(path))
        except apsw.Error as exc:
            raise StoreError(type(exc).__name__) from exc
        try:
            conn.set_busy_timeout(BUSY_TIMEOUT_MS)
            # One PRAGMA per call, each consumed: a multi-statement execute stops at a row.
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchall()
            if str(mode[0][0]).lower() != "wal":
                raise StoreError("journal_mode")
            conn.execute("PRAGMA synchronous=NORMAL").fetchall()
            version = conn.execute("PRAGMA user_version").fetchall()[0][0]
            if version == 0:
                with conn:
                    for statement in _SCHEMA:
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}").fetchall()
            elif version != SCHEMA_VERSION:
                raise StoreError("schema_version")
        except apsw.Error as exc:
            conn.close()
            raise StoreError(type(exc).__name__) from exc
        except BaseException:
            conn.close()
            raise
        opened: list[apsw.Connection] = []
        try:
            for flags in (apsw.SQLITE_OPEN_READONLY, apsw.SQLITE_OPEN_READWRITE):
                opened.append(apsw.Connection(str(path), flags=flags))
                opened[-1].set_busy_timeout(BUSY_TIMEOUT_MS)
        except apsw.Error as exc:
            for other in (*opened, conn):
                other.close()
            raise StoreError(type(exc).__name__) from exc
        reader, checkpointer = opened
        try:  # a connection learns of the log when it first reads the file
            checkpointer.execute("PRAGMA journal_mode").fetchall()
        except apsw.Error as exc:
            for other in (*opened, conn):
                other.close()
            raise StoreError(type(exc).__name__) from exc
        return cls(conn, reader, checkpointer, path)

    def close(self) -> None:
        try:
            self._checkpointer.close()
            self._reader.close()
            self._conn.close()
        except apsw.Error as exc:
            raise StoreError(type(exc).__name__) from exc

    # ------------------------------------------------------------------------------ tokens

    def issue_token(self, principal: Principal) -> str:
        token = secrets.token_urlsafe(32)
        self._write(
            "INSERT INTO tokens (token_sha256, principal_kind, principal_id, created_at)"
            " VALUES (?, ?, ?, ?)",
            (_digest(token), principal.kind, principal.id, time.time()),
        )
        return token

    def principal_of(self, token: str) -> Principal | None:
        row = self._one(
            "SELECT principal_kind, principal_id FROM tokens WHERE token_sha256 = ?",
            (_digest(token),),
            conn=self._reader,
        )
        if row is None:
            return None
        kind, principal_id = row
        if kind == "user":
            return Principal("user", str(principal_id))
        return Principal("agent", str(principal_id))

    # ---------------------------------------------------------------------------- messages

    def post(
        self,
        sender: Principal,
        key: str,
        direction: Direction,
        envelope: dict[str, Any],
        message_id: str,
    ) -> PostOutcome:
        """Store `envelope` with its `seq` and the sender stamped in, unless `key` was seen."""
        conversation_id = str(envelope["conversation_id"])
        try:
            with self._conn:
                seen = self._conn.execute(
                    "SELECT message_id, seq FROM idempotency"
                    " WHERE principal_kind = ? AND principal_id = ? AND key = ?",
                    (sender.kind, sender.id, key),
                ).fetchall()
                if seen:
                    return PostOutcome(str(seen[0][0]), _int(seen[0][1]), stored=False)
                last = self._conn.execute(
                    "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE conversation_id = ?",
                    (conversation_id,),
                ).fetchall()
                seq = _int(last[0][0]) + 1
                stamped = {
                    **envelope,
                    "sender": {"kind": sender.kind, "id": sender.id},
                    "seq": seq,
                }
                self._conn.execute(
                    "INSERT INTO messages (conversation_id, seq, direction, message_id, envelope)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (conversation_id, seq, direction, message_id, json.dumps(stamped)),
                )
                self._conn.execute(
                    "INSERT INTO idempotency (principal_kind, principal_id, key, message_id, seq)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (sender.kind, sender.id, key, message_id, seq),
                )
        except apsw.Error as exc:
            raise StoreError(type(exc).__name__) from exc
        return PostOutcome(message_id, seq, stored=True)

    def messages_after(
        self, direction: Direction, conversations: Iterable[str], position: int, limit: int
    ) -> tuple[list[dict[str, Any]], int]:
        """Up to `limit` envelopes after `position`, oldest first, and the new position."""
        wanted = list(conversations)
        if not wanted:
            return [], position
        marks = ", ".join("?" for _ in wanted)
        try:
            rows = self._reader.execute(
                f"SELECT position, envelope FROM messages WHERE direction = ?"
                f" AND conversation_id IN ({marks}) AND position > ?"
                f" ORDER BY position LIMIT ?",
                (direction, *wanted, position, limit),
            ).fetchall()
        except apsw.Error as exc:
            raise StoreError(type(exc).__name__) from exc
        if not rows:
            return [], position
        return [json.loads(str(row[1])) for row in rows], _int(rows[-1][0])

    def count_messages(self, conversation_id: str | None = None) -> int:
        """How many messages are stored (in one conversation, or in all)."""
        if conversation_id is None:
            row = self._one("SELECT COUNT(*) FROM messages", ())
        else:
            row = self._one(
                "SELECT COUNT(*) FROM messages WHERE conversation_id = ?", (conversation_id,)
            )
        assert row is not None
        return _int(row[0])

    # ------------------------------------------------------------------------------ helpers

    def _one(
        self, sql: str, bindings: tuple[Any, ...], *, conn: apsw.Connection | None = None
    ) -> tuple[Any, ...] | None:
        try:
            rows = (conn or self._conn).execute(sql, bindings).fetchall()
        except apsw.Error as exc:
            raise StoreError(type(exc).__name__) from exc
        return tuple(rows[0]) if rows else None

    def _write(self, sql: str, bindings: tuple[Any, ...]) -> None:
        try:
            with self._conn:
                self._conn.execute(sql, bindings)
        except apsw.Error as exc:
            raise StoreError(type(exc).__name__) from exc
