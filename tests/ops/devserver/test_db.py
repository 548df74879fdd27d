from __future__ import annotations

import stat
from pathlib import Path

import apsw
import pytest

from lineup.ops.devserver._db import CHECKPOINT_PAGES, DevDatabase, Principal, StoreError

ALICE = Principal("user", "user-alice")
AGENT = Principal("agent", "agent-1")


def _envelope(conversation_id: str = "conv-a") -> dict[str, object]:
    return {"v": 1, "type": "lineup.v1.text", "conversation_id": conversation_id, "id": "m"}


def test_the_database_file_is_owner_only_and_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "d" / "devserver.db"
    DevDatabase.open(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    conn = apsw.Connection(str(path))
    try:
        assert conn.execute("PRAGMA journal_mode").fetchall()[0][0] == "wal"
    finally:
        conn.close()


def test_messages_tokens_and_idempotency_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "devserver.db"
    db = DevDatabase.open(path)
    token = db.issue_token(ALICE)
    first = db.post(ALICE, "k", "to_agent", _envelope(), "m")
    db.close()

    db = DevDatabase.open(path)
    try:
        assert db.principal_of(token) == ALICE
        again = db.post(ALICE, "k", "to_agent", _envelope(), "m")
        assert (again.message_id, again.seq, again.stored) == (first.message_id, first.seq, False)
        next_one = db.post(ALICE, "k2", "to_agent", _envelope(), "m2")
        assert next_one.seq == first.seq + 1
        messages, _ = db.messages_after("to_agent", ["conv-a"], 0, 10)
        assert [m["seq"] for m in messages] == [1, 2]
    finally:
        db.close()


def test_tokens_are_stored_only_as_digests(tmp_path: Path) -> None:
    path = tmp_path / "devserver.db"
    db = DevDatabase.open(path)
    token = db.issue_token(AGENT)
    db.close()
    for file in tmp_path.iterdir():  # the database, and its WAL if one is left
        assert token.encode() not in file.read_bytes()


def test_an_unknown_token_has_no_principal(tmp_path: Path) -> None:
    db = DevDatabase.open(tmp_path / "devserver.db")
    try:
        assert db.principal_of("nope") is None
    finally:
        db.close()


def test_the_stored_envelope_carries_the_servers_sender_and_seq(tmp_path: Path) -> None:
    db = DevDatabase.open(tmp_path / "devserver.db")
    try:
        forged = {**_envelope(), "sender": {"kind": "agent", "id": "agent-1"}, "seq": 99}
        db.post(ALICE, "k", "to_agent", forged, "m")
        [message], position = db.messages_after("to_agent", ["conv-a"], 0, 10)
        assert message["sender"] == {"kind": "user", "id": "user-alice"}
        assert message["seq"] == 1
        assert position > 0
    finally:
        db.close()


def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "devserver.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError):
        DevDatabase.open(path)


def test_a_commit_never_checkpoints_the_log_until_checkpoint_is_called(tmp_path: Path) -> None:
    """The checkpoint (the log copied into the file, with an fsync) is the app's to run on a
    worker thread: a commit on the event loop only appends, however long the log grows."""
    db = DevDatabase.open(tmp_path / "devserver.db")
    try:
        n = 0
        while not db.wants_checkpoint:
            big = {**_envelope(), "payload": {"markdown": "x" * 4000}}
            db.post(ALICE, f"k-{n}", "to_agent", big, f"m-{n}")
            n += 1
        for _ in range(50):  # well past SQLite's own automatic checkpoint
            db.post(ALICE, f"k-{n}", "to_agent", {**_envelope(), "x": "x" * 4000}, f"m-{n}")
            n += 1
        assert db.wal_pages > CHECKPOINT_PAGES
        frames, copied = db.checkpoint()
        assert frames == copied >= db.wal_pages
        assert db.count_messages() == n
    finally:
        db.close()
