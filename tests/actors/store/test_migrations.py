"""Opening the database and migrating its schema (`actors/store/_db.py`, `_migrations.py`)."""

from __future__ import annotations

import stat
from contextlib import closing
from pathlib import Path

import apsw
import pytest

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store._db import DB_FILENAME, Database, migrate, open_database
from lineup.actors.store._migrations import LATEST_VERSION, MIGRATIONS
from lineup.actors.store.inbox.operations import inbox_ack, inbox_list
from lineup.actors.store.messages import (
    InboxAckRequest,
    InboxListRequest,
    OutboxRowIn,
    ToolCallListRequest,
    ToolCallStepRequest,
)
from lineup.actors.store.tool_calls.operations import tool_call_list, tool_call_step
from lineup.tests.actors.store._harness import in_savepoint

REQUIRED_TABLES = {
    "conversations",
    "messages",
    "cursors",
    "outbox",
    "app_inbox",
    "tool_calls",
    "interactions",
    "instances",
    "focus_stack",
    "app_sessions",
    "session_data",
    "artifacts",
    "registry",
    "inventory_revisions",
    "audit",
    "tool_call_outbox",
    "focus_stack_revision",
    "inventory_bumps",
}


def tables(conn: apsw.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'").fetchall()
    return {str(name) for (name,) in rows}


def schema(conn: apsw.Connection) -> list[tuple[object, ...]]:
    return conn.execute("SELECT type, name, sql FROM sqlite_schema ORDER BY name").fetchall()


def user_version(conn: apsw.Connection) -> object:
    return conn.execute("PRAGMA user_version").fetchall()[0][0]


def test_migrations_are_numbered_from_one_without_gaps() -> None:
    assert [version for version, _ in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
    assert len(MIGRATIONS) == LATEST_VERSION


def test_opening_a_fresh_directory_creates_every_table_at_the_latest_version(
    db: Database,
) -> None:
    assert tables(db.conn) >= REQUIRED_TABLES
    assert user_version(db.conn) == LATEST_VERSION
    assert db.schema_version == LATEST_VERSION


def test_opening_a_migrated_database_again_changes_nothing(tmp_path: Path) -> None:
    first = open_database(tmp_path, {})
    first.conn.execute("INSERT INTO cursors VALUES ('sync', 'c1', 0)")
    before = schema(first.conn)
    first.close()

    with closing(open_database(tmp_path, {})) as second:
        assert schema(second.conn) == before
        assert user_version(second.conn) == LATEST_VERSION
        assert second.conn.execute("SELECT value FROM cursors").fetchall() == [("c1",)]
        assert migrate(second.conn) == LATEST_VERSION  # and once more, explicitly


def test_a_failing_migration_leaves_the_database_at_the_previous_version(db: Database) -> None:
    broken = (*MIGRATIONS, (LATEST_VERSION + 1, "CREATE TABLE fresh (a); THIS IS NOT SQL"))

    with pytest.raises(LineUpError) as caught:
        migrate(db.conn, broken)

    assert caught.value.code is ErrorCode.STORE_UNAVAILABLE
    assert user_version(db.conn) == LATEST_VERSION
    assert "fresh" not in tables(db.conn)
    assert not db.conn.in_transaction


def test_a_new_migration_is_applied_once(db: Database) -> None:
    extended = (*MIGRATIONS, (LATEST_VERSION + 1, "CREATE TABLE fresh (a INTEGER) STRICT"))

    assert migrate(db.conn, extended) == LATEST_VERSION + 1
    assert migrate(db.conn, extended) == LATEST_VERSION + 1
    assert "fresh" in tables(db.conn)


def test_a_database_from_a_newer_runtime_is_refused(tmp_path: Path) -> None:
    db = open_database(tmp_path, {})
    db.conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
    db.close()

    with pytest.raises(LineUpError) as caught:
        open_database(tmp_path, {})
    assert caught.value.code is ErrorCode.STORE_UNAVAILABLE


def test_the_database_runs_in_wal_mode_with_foreign_keys_enforced(db: Database) -> None:
    assert db.conn.execute("PRAGMA journal_mode").fetchall() == [("wal",)]
    assert db.conn.execute("PRAGMA foreign_keys").fetchall() == [(1,)]
    with pytest.raises(apsw.ConstraintError):
        db.conn.execute("INSERT INTO focus_stack VALUES (0, 'no-such-instance')")


@pytest.mark.parametrize(
    ("config", "mode", "pragma"),
    [({}, "normal", 1), ({"sqlite_synchronous": "normal"}, "normal", 1),
     ({"sqlite_synchronous": "full"}, "full", 2)],
)  # fmt: skip
def test_synchronous_is_normal_unless_the_config_asks_for_full(
    tmp_path: Path, config: dict[str, str], mode: str, pragma: int
) -> None:
    with closing(open_database(tmp_path, config)) as db:
        assert db.synchronous == mode
        assert db.conn.execute("PRAGMA synchronous").fetchall() == [(pragma,)]


def test_an_unknown_synchronous_setting_is_refused_rather_than_weakened(tmp_path: Path) -> None:
    with pytest.raises(LineUpError) as caught:
        open_database(tmp_path, {"sqlite_synchronous": "FULLL"})
    assert caught.value.code is ErrorCode.INVALID_ARGUMENTS
    assert not (tmp_path / DB_FILENAME).exists()


def test_the_database_file_is_readable_by_its_owner_only(db: Database) -> None:
    assert stat.S_IMODE(db.path.stat().st_mode) == 0o600
    assert db.path.name == DB_FILENAME


def test_the_audit_table_has_no_column_for_content(db: Database) -> None:
    columns = {str(row[1]) for row in db.conn.execute("PRAGMA table_info(audit)").fetchall()}
    assert columns == {
        "id", "at", "event", "actor", "peer", "code", "message_type", "subject_id", "fingerprint",
    }  # fmt: skip


def test_a_data_dir_that_cannot_hold_a_database_is_reported_as_store_unavailable(
    tmp_path: Path,
) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")

    with pytest.raises(LineUpError) as caught:
        open_database(not_a_dir, {})
    assert caught.value.code is ErrorCode.STORE_UNAVAILABLE


# ---------------------------------------------------------------------------------- migration 2


def version_1_database(path: Path) -> None:
    """A database as the first release left it: schema 1, with conversation data in it."""
    with closing(apsw.Connection(str(path / DB_FILENAME))) as conn:
        assert migrate(conn, MIGRATIONS[:1]) == 1
        conn.execute(
            "INSERT INTO conversations VALUES ('conv-1', NULL, 0, 0);"
            # outbox: o-a acknowledged, o-c waiting, o-x acknowledged and carrying no message
            "INSERT INTO outbox (outbox_id, conversation_id, kind, body, created_at, acked_at,"
            "                    remote_id)"
            " VALUES ('o-a', 'conv-1', 'lineup.v1.text', '{}', 1, 5, 'r-a'),"
            "        ('o-c', 'conv-1', 'lineup.v1.text', '{}', 3, NULL, NULL),"
            "        ('o-x', 'conv-1', 'lineup.v1.tool.result', '{}', 4, 6, 'r-x');"
            # messages inserted out of time order; m-b has no scope, m-c a state schema 2 lacks
            "INSERT INTO messages (message_id, conversation_id, direction, type, app_scope,"
            "                      outbox_id, remote_seq, state, body, created_at)"
            " VALUES ('m-c', 'conv-1', 'outbound', 'lineup.v1.text', 'chat', 'o-c', NULL,"
            "         'queued', '{\"n\":3}', 3),"
            "        ('m-b', 'conv-1', 'inbound', 'lineup.v1.text', NULL, NULL, 12,"
            "         'new', '{\"n\":2}', 2),"
            "        ('m-a', 'conv-1', 'outbound', 'lineup.v1.text', 'chat', 'o-a', NULL,"
            "         'pending', '{\"n\":1}', 1)"
        )


def test_migration_2_gives_old_messages_seqs_in_time_order_and_the_states_of_their_rows(
    tmp_path: Path,
) -> None:
    version_1_database(tmp_path)

    with closing(open_database(tmp_path, {})) as db:
        assert db.schema_version == LATEST_VERSION >= 2
        rows = db.conn.execute(
            "SELECT seq, message_id, direction, kind, app_scope, state, remote_seq, body"
            " FROM messages ORDER BY seq"
        ).fetchall()
        outbox = db.conn.execute("SELECT outbox_id, state FROM outbox ORDER BY seq").fetchall()
        pending = db.conn.execute("SELECT outbox_id FROM outbox WHERE state = 'pending'").fetchall()

    assert [row[1] for row in rows] == ["m-a", "m-b", "m-c"]  # ORDER BY seq: time order
    assert [(row[1], row[4], row[5]) for row in rows] == [
        ("m-a", "chat", "sent"), ("m-b", "chat", "received"), ("m-c", "chat", "pending"),
    ]  # fmt: skip
    assert rows[1][2:4] == ("inbound", "lineup.v1.text")
    assert (rows[1][6], rows[2][7]) == (12, '{"n":3}')
    assert outbox == [("o-a", "sent"), ("o-c", "pending"), ("o-x", "sent")]
    assert pending == [("o-c",)]


def test_a_message_added_after_migration_2_gets_a_seq_after_every_old_one(
    tmp_path: Path,
) -> None:
    version_1_database(tmp_path)
    with closing(open_database(tmp_path, {})) as db:
        newest_old = db.conn.execute("SELECT max(seq) FROM messages").fetchall()[0][0]
        db.conn.execute("DELETE FROM messages WHERE message_id = 'm-c'")
        added = db.conn.execute(
            "INSERT INTO messages (message_id, conversation_id, direction, kind, app_scope,"
            " state, body, created_at, updated_at)"
            " VALUES ('m-d', 'conv-1', 'inbound', 'lineup.v1.text', 'chat', 'received', '{}',"
            " 9, 9) RETURNING seq"
        ).fetchall()[0][0]

    assert isinstance(newest_old, int)
    assert isinstance(added, int)
    assert added > newest_old  # never reused, even after the newest row is gone


def test_migration_2_leaves_a_consistent_schema_and_no_trace_of_the_rebuild(
    tmp_path: Path,
) -> None:
    version_1_database(tmp_path)
    with closing(open_database(tmp_path, {})) as db:
        assert "messages_v2" not in tables(db.conn)
        assert db.conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert db.conn.execute("PRAGMA foreign_key_check").fetchall() == []
        indexes = {
            str(name)
            for (name,) in db.conn.execute(
                "SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL"
            ).fetchall()
        }
        assert {"messages_by_conversation", "outbox_pending"} <= indexes


@pytest.mark.parametrize(
    "sql",
    [
        # an inbound message is always `received`, an outbound one never
        "INSERT INTO messages (message_id, conversation_id, direction, kind, app_scope, state,"
        " body, created_at, updated_at)"
        " VALUES ('x', 'conv-1', 'inbound', 't', 'chat', 'pending', '{}', 0, 0)",
        # only a failed message has a failure code
        "INSERT INTO messages (message_id, conversation_id, direction, kind, app_scope, state,"
        " failed_code, body, created_at, updated_at)"
        " VALUES ('x', 'conv-1', 'outbound', 't', 'chat', 'sent', 'c', '{}', 0, 0)",
        "UPDATE outbox SET state = 'lost'",
    ],
)
def test_migration_2_constraints_refuse_inconsistent_states(tmp_path: Path, sql: str) -> None:
    version_1_database(tmp_path)
    with closing(open_database(tmp_path, {})) as db, pytest.raises(apsw.ConstraintError):
        db.conn.execute(sql)


# ---------------------------------------------------------------------------------- migration 3


def version_2_database(path: Path) -> None:
    """A database as schema 2 left it, with tool calls and an instance in it (no release wrote
    them, but a migration must not lose what is there)."""
    with closing(apsw.Connection(str(path / DB_FILENAME))) as conn:
        assert migrate(conn, MIGRATIONS[:2]) == 2
        conn.execute(
            "INSERT INTO tool_calls (call_id, app_scope, instance_id, conversation_id, tool,"
            " inventory_revision, state, terminal_code, input, result, created_at, updated_at)"
            " VALUES ('c-late', 'task', 'td-1', 'conv-1', 'task.open', 'inv-1', 'completed',"
            "         NULL, '{\"a\":1}', '{\"ok\":true}', 5, 6),"
            "        ('c-early', 'task', NULL, NULL, 'task.open', NULL, 'failed',"
            "         'handler_failed', NULL, '{\"stray\":1}', 2, 3),"
            "        ('c-open', 'task', NULL, 'conv-1', 'task.open', 'inv-1', 'running',"
            "         'stray_code', '{}', NULL, 4, 4);"
            "INSERT INTO instances (instance_id, app_scope, state, created_at, updated_at)"
            " VALUES ('td-1', 'task', 'foreground', 1, 1);"
            "INSERT INTO registry (app_scope, version, manifest, installed_at, updated_at)"
            " VALUES ('task', '1.0.0', '{}', 1, 1)"
        )


def test_migration_3_keeps_old_tool_calls_in_time_order_with_neutral_values_for_new_fields(
    tmp_path: Path,
) -> None:
    version_2_database(tmp_path)

    with closing(open_database(tmp_path, {})) as db:
        assert db.schema_version == LATEST_VERSION >= 3
        calls = db.conn.execute(
            "SELECT call_id, conversation_id, inventory_revision, handling, state, input, result,"
            " error_code, timeout_ms, deadline_at FROM tool_calls ORDER BY seq"
        ).fetchall()
        instance = db.conn.execute("SELECT created_by_call_id FROM instances").fetchall()
        registry = db.conn.execute("SELECT kind, enabled FROM registry").fetchall()
        assert db.conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert db.conn.execute("PRAGMA foreign_key_check").fetchall() == []

    assert calls == [
        ("c-early", "", "", "direct", "failed", "{}", None, "handler_failed", 0, 2.0),
        ("c-open", "conv-1", "inv-1", "direct", "running", "{}", None, None, 0, 4.0),
        ("c-late", "conv-1", "inv-1", "direct", "completed", '{"a":1}', '{"ok":true}', None, 0,
         5.0),
    ]  # fmt: skip
    assert instance == [(None,)]
    assert registry == [("installed", 1)]


def test_tool_calls_kept_by_migration_3_can_be_read_and_ended(tmp_path: Path) -> None:
    version_2_database(tmp_path)
    with closing(open_database(tmp_path, {})) as db:
        listed = in_savepoint(db.conn, lambda c: tool_call_list(c, ToolCallListRequest(), 9.0))
        row = OutboxRowIn(row="terminal", outbox_id="o-1", wire={"type": "lineup.v1.tool.error"})
        cancel = ToolCallStepRequest(call_id="c-open", event="close", code="app_closed",
                                     rows=(row,))  # fmt: skip
        ended = in_savepoint(db.conn, lambda c: tool_call_step(c, cancel, 9.0))

    assert [(call.call_id, call.conversation_id) for call in listed.calls] == [
        ("c-early", ""), ("c-open", "conv-1"), ("c-late", "conv-1"),
    ]  # fmt: skip
    assert (ended.call.state, ended.call.error_code) == ("cancelled", "app_closed")


@pytest.mark.parametrize(
    "sql",
    [
        # only a completed call has a result, only an ended one a code
        "UPDATE tool_calls SET result = '{}' WHERE call_id = 'c-open'",
        "UPDATE tool_calls SET error_code = 'x' WHERE call_id = 'c-late'",
        "UPDATE tool_calls SET state = 'done' WHERE call_id = 'c-open'",
        "UPDATE tool_calls SET handling = 'whatever' WHERE call_id = 'c-open'",
        # an outbox link names a real outbox row and a real call
        "INSERT INTO tool_call_outbox VALUES ('no-such-row', 'c-open', 'progress', NULL)",
    ],
)
def test_migration_3_constraints_refuse_inconsistent_tool_calls(tmp_path: Path, sql: str) -> None:
    version_2_database(tmp_path)
    with closing(open_database(tmp_path, {})) as db, pytest.raises(apsw.ConstraintError):
        db.conn.execute(sql)


def test_migration_3_inventory_revisions_are_never_reused(db: Database) -> None:
    db.conn.execute("INSERT INTO inventory_bumps (reason, created_at) VALUES ('a', 0), ('b', 0)")
    db.conn.execute("DELETE FROM inventory_bumps")
    added = db.conn.execute(
        "INSERT INTO inventory_bumps (reason, created_at) VALUES ('c', 0) RETURNING revision"
    ).fetchall()
    assert added == [(3,)]


# ---------------------------------------------------------------------------------- migration 6


def version_5_database(path: Path) -> None:
    """A v5 device: inbox rows keyed by scope alone — one pending for an instance, one pending
    and one acknowledged for the chat, and one put without a message."""
    with closing(apsw.Connection(str(path / DB_FILENAME))) as conn:
        assert migrate(conn, MIGRATIONS[:5]) == 5
        envelope = '{"scope": {"app_scope": "board", "instance_id": "inst-a"}}'
        conn.execute(
            "INSERT INTO conversations VALUES ('conv-1', NULL, 0, 0);"
            "INSERT INTO cursors VALUES"
            " ('transport.session', '{\"conversation_id\": \"conv-1\"}', 0);"
            "INSERT INTO messages (message_id, conversation_id, direction, kind, app_scope, state,"
            "                      body, created_at, updated_at)"
            f" VALUES ('m-board', 'conv-1', 'inbound', 'lineup.v1.text', 'board', 'received',"
            f"         '{envelope}', 1, 1),"
            "        ('m-chat', 'conv-1', 'inbound', 'lineup.v1.text', 'chat', 'received',"
            "         '{\"scope\": {}}', 2, 2),"
            "        ('m-acked', 'conv-1', 'inbound', 'lineup.v1.text', 'board', 'received',"
            f"         '{envelope}', 3, 3);"
            "INSERT INTO app_inbox (app_scope, delivery_id, body, created_at, acked_at)"
            f" VALUES ('board', 'm-board', '{envelope}', 1, NULL),"
            "        ('chat', 'm-chat', '{\"scope\": {}}', 2, NULL),"
            "        ('board', 'm-acked', NULL, 3, 4),"
            "        ('chat', 'put-only', '{}', 5, NULL)"
        )


def test_migration_6_scopes_old_inbox_rows_by_their_conversation_and_instance(
    tmp_path: Path,
) -> None:
    version_5_database(tmp_path)

    with closing(open_database(tmp_path, {})) as db:
        rows = db.conn.execute(
            "SELECT delivery_id, app_scope, conversation_id, instance_id FROM app_inbox"
            " ORDER BY seq"
        ).fetchall()
        integrity = db.conn.execute("PRAGMA integrity_check").fetchall()

    assert rows == [
        ("m-board", "board", "conv-1", "inst-a"),
        ("m-chat", "chat", "conv-1", None),
        ("m-acked", "board", "conv-1", "inst-a"),  # its body is gone: from its message
        ("put-only", "chat", "conv-1", None),  # no message: the session's conversation
    ]
    assert integrity == [("ok",)]


def test_old_inbox_rows_are_listed_and_acknowledged_in_their_scoped_inbox_after_migration_6(
    tmp_path: Path,
) -> None:
    version_5_database(tmp_path)
    board_a = InboxListRequest(app_scope="board", conversation_id="conv-1", instance_id="inst-a")
    chat = InboxListRequest(app_scope="chat", conversation_id="conv-1")
    ack = InboxAckRequest(
        app_scope="board", conversation_id="conv-1", instance_id="inst-a", delivery_id="m-board"
    )
    with closing(open_database(tmp_path, {})) as db:
        board_rows = in_savepoint(db.conn, lambda conn: inbox_list(conn, board_a, 9.0)).rows
        chat_rows = in_savepoint(db.conn, lambda conn: inbox_list(conn, chat, 9.0)).rows
        acked = in_savepoint(db.conn, lambda conn: inbox_ack(conn, ack, 9.0))

    assert [row.delivery_id for row in board_rows] == ["m-board"]
    assert [row.delivery_id for row in chat_rows] == ["m-chat", "put-only"]
    assert acked.acked is True


# ---------------------------------------------------------------------------------- migration 7


def test_migration_7_makes_old_outbound_ids_their_apps_client_ids(tmp_path: Path) -> None:
    with closing(apsw.Connection(str(tmp_path / DB_FILENAME))) as conn:
        assert migrate(conn, MIGRATIONS[:6]) == 6
        conn.execute(
            "INSERT INTO conversations VALUES ('conv-1', NULL, 0, 0);"
            "INSERT INTO messages (message_id, conversation_id, direction, kind, app_scope,"
            "                      outbox_id, state, body, created_at, updated_at)"
            " VALUES ('user-1', 'conv-1', 'outbound', 'lineup.v1.text', 'chat', 'user-1',"
            "         'pending', '{}', 1, 1),"
            "        ('agent-1', 'conv-1', 'inbound', 'lineup.v1.text', 'chat', NULL,"
            "         'received', '{}', 2, 2)"
        )

    with closing(open_database(tmp_path, {})) as db:
        rows = db.conn.execute("SELECT message_id, client_id FROM messages ORDER BY seq").fetchall()
        with pytest.raises(apsw.ConstraintError):  # one message per client id in an app
            db.conn.execute(
                "INSERT INTO messages (message_id, conversation_id, direction, kind, app_scope,"
                " state, body, created_at, updated_at, client_id) VALUES ('lu:x', 'conv-1',"
                " 'outbound', 'lineup.v1.text', 'chat', 'pending', '{}', 3, 3, 'user-1')"
            )

    assert rows == [("user-1", "user-1"), ("agent-1", None)]


# ---------------------------------------------------------------------------------- migration 9


def test_migration_9_gives_old_interactions_their_source_and_sessions_one_per_instance(
    tmp_path: Path,
) -> None:
    with closing(apsw.Connection(str(tmp_path / DB_FILENAME))) as conn:
        assert migrate(conn, MIGRATIONS[:8]) == 8
        conn.execute(
            "INSERT INTO interactions (interaction_id, call_id, owner_scope, kind, state,"
            " request, created_at, updated_at) VALUES ('ia-1', 'c-1', 'interaction', 'confirm',"
            " 'pending', '{}', 1, 1);"
            "INSERT INTO app_sessions (app_session_id, app_scope, instance_id, state, opened_at)"
            " VALUES ('s-1', 'board', 'inst-a', 'open', 1)"
        )

    with closing(open_database(tmp_path, {})) as db:
        interaction = db.conn.execute(
            "SELECT source, parent_call_id, surface_id, presentation FROM interactions"
        ).fetchall()
        session = db.conn.execute("SELECT previous_app_session_id FROM app_sessions").fetchall()
        with pytest.raises(apsw.ConstraintError):
            db.conn.execute(
                "INSERT INTO app_sessions (app_session_id, app_scope, instance_id, state,"
                " opened_at) VALUES ('s-2', 'board', 'inst-a', 'open', 2)"
            )
        with pytest.raises(apsw.ConstraintError):
            db.conn.execute("UPDATE interactions SET presentation = 'popup'")

    assert interaction == [("agent_tool", None, None, "default")]
    assert session == [(None,)]
