"""Dead letters: a row no start-up reader can decode is quarantined, with an audit row, and the
store comes up all the same (issue 11, "Poison is quarantined")."""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import pytest
import trio

from lineup.actors.kernel import ErrorCode
from lineup.actors.store._db import Connection, open_database
from lineup.actors.store._rows import stored_object
from lineup.actors.store.dead_letters import sweep as sweep_module
from lineup.actors.store.dead_letters.messages import QUARANTINE_SUMMARY_FILE
from lineup.actors.store.messages import (
    AuditQueryReply,
    AuditQueryRequest,
    CursorGetReply,
    CursorGetRequest,
    DeadLetterListReply,
    DeadLetterListRequest,
    DeadLetterPutReply,
    DeadLetterPutRequest,
    DeadLetterSummaryReply,
    DeadLetterSummaryRequest,
    FocusStackGetReply,
    FocusStackGetRequest,
    InboxListReply,
    InboxListRequest,
    InboxPutReply,
    InboxPutRequest,
    InstanceListReply,
    InstanceListRequest,
    OutboxPendingReply,
    OutboxPendingRequest,
    ToolCallListReply,
    ToolCallListRequest,
)
from lineup.tests.actors.store._harness import independent_rows, memory_database, start_store

LONE_SURROGATE = '{"id":"m-bad","t":"\\ud800"}'  # SQLite's json_valid takes the escape
INBOX = "INSERT INTO app_inbox (app_scope, conversation_id, instance_id, delivery_id, body," \
    " created_at) VALUES ('chat', 'c-1', NULL, ?, ?, 1.0)"  # fmt: skip


def poison(data_dir: Path) -> None:
    """A data dir whose start-up reads each meet a row they cannot decode, written the way a
    hostile message (or an old runtime that let one through) could have left it."""
    open_database(data_dir, {}).close()  # migrated, then closed: the runtime is stopped
    conn = apsw.Connection(str(data_dir / "lineup.db"))
    try:
        conn.execute(INBOX, ("d-good", '{"id":"d-good"}'))
        conn.execute(INBOX, ("d-array", "[1, 2]"))
        conn.execute(INBOX, ("d-surrogate", LONE_SURROGATE))
        conn.execute(INBOX, ("d-bytes", "{}"))
        conn.execute("PRAGMA ignore_check_constraints=ON")  # corruption: not even UTF-8
        conn.execute(
            "UPDATE app_inbox SET body = CAST(x'7b22ff227d' AS TEXT) WHERE delivery_id = 'd-bytes'"
        )
        conn.execute("PRAGMA ignore_check_constraints=OFF")
        conn.execute(
            "INSERT INTO outbox (outbox_id, conversation_id, kind, body, created_at, state)"
            " VALUES ('o-bad', 'c-1', 'lineup.v1.text', ?, 1.0, 'pending')",
            (LONE_SURROGATE,),
        )
        conn.execute(
            "INSERT INTO outbox (outbox_id, conversation_id, kind, body, created_at, state)"
            " VALUES ('o-good', 'c-1', 'lineup.v1.text', '{\"id\":\"o-good\"}', 2.0, 'pending')"
        )
        conn.execute(
            "INSERT INTO instances (instance_id, app_scope, state, app_session_id, created_at,"
            " updated_at) VALUES (?, 'probe', 'foreground', 's-1', 1.0, 1.0)",
            ("i" * 300,),  # past the model's 200
        )
        conn.execute("INSERT INTO focus_stack (position, instance_id) VALUES (0, ?)", ("i" * 300,))
        conn.execute(
            "INSERT INTO focus_stack_revision (id, revision, updated_at) VALUES (1, 1, 1.0)"
        )
        conn.execute(
            "INSERT INTO cursors (name, value, updated_at) VALUES ('transport.session', '[1]', 1.0)"
        )
        for call_id, tool_input in (("c-bad", LONE_SURROGATE), ("c-good", '{"n":1}')):
            conn.execute(
                "INSERT INTO tool_calls (call_id, tool, inventory_revision, app_scope,"
                " conversation_id, handling, state, input, timeout_ms, created_at, updated_at,"
                " deadline_at) VALUES (?, 'probe.run', '1', 'probe', 'c-1', 'direct',"
                " 'running', ?, 1000, 1.0, 1.0, 9e9)",
                (call_id, tool_input),
            )
    finally:
        conn.close()


async def test_a_store_comes_up_on_poisoned_rows_and_quarantines_each_once_with_an_audit_row(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    poison(data_dir)
    store = await start_store(nursery, data_dir)

    inbox = await store.ask(
        InboxListRequest(app_scope="chat", conversation_id="c-1"), InboxListReply
    )
    assert [row.delivery_id for row in inbox.rows] == ["d-good"]
    pending = await store.ask(OutboxPendingRequest(), OutboxPendingReply)
    assert [row.outbox_id for row in pending.rows] == ["o-good"]
    instances = await store.ask(InstanceListRequest(), InstanceListReply)
    assert instances.instances == ()
    stack = await store.ask(FocusStackGetRequest(), FocusStackGetReply)
    assert stack.instance_ids == ()
    assert stack.revision == 2  # the stack changed: a new revision
    session = await store.ask(CursorGetRequest(name="transport.session"), CursorGetReply)
    assert session.value is None  # forgotten: the transport logs in again

    summary = await store.ask(DeadLetterSummaryRequest(), DeadLetterSummaryReply)
    assert summary.count == 7
    assert summary.kinds == {
        "cursor:envelope_malformed": 1,
        "inbox:envelope_malformed": 3,
        "instance:invalid_arguments": 1,
        "outbox:envelope_malformed": 1,
        "tool_call:envelope_malformed": 1,
    }
    calls = await store.ask(ToolCallListRequest(non_final_only=True), ToolCallListReply)
    assert [call.call_id for call in calls.calls] == ["c-good"]  # the router reads it whole
    listed = await store.ask(DeadLetterListRequest(), DeadLetterListReply)
    assert sorted(row.source for row in listed.rows) == [
        "cursor", "inbox", "inbox", "inbox", "instance", "outbox", "tool_call",
    ]  # fmt: skip
    audit = await store.ask(AuditQueryRequest(event_prefix="store.dead_lettered"), AuditQueryReply)
    assert len(audit.records) == 7
    assert {r.subject_id for r in audit.records} == {
        f"{row.source}:{row.item_id}" for row in listed.rows
    }
    # The body is kept, verbatim, for a person to inspect; the audit row has none.
    kept = independent_rows(store.db_path, "SELECT body FROM dead_letters WHERE source = 'outbox'")
    assert kept == [(LONE_SURROGATE,)]
    outbox_state = independent_rows(
        store.db_path, "SELECT state, failed_code FROM outbox WHERE outbox_id = 'o-bad'"
    )
    assert outbox_state == [("failed", ErrorCode.ENVELOPE_MALFORMED.value)]
    document = json.loads((data_dir / QUARANTINE_SUMMARY_FILE).read_text())
    assert document == {"count": 7, "kinds": summary.kinds}


async def test_a_second_start_quarantines_nothing_again(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    poison(data_dir)
    async with trio.open_nursery() as first:
        await start_store(first, data_dir)
        first.cancel_scope.cancel()
    store = await start_store(nursery, data_dir)
    summary = await store.ask(DeadLetterSummaryRequest(), DeadLetterSummaryReply)
    assert summary.count == 7
    audit = await store.ask(AuditQueryRequest(event_prefix="store.dead_lettered"), AuditQueryReply)
    assert len(audit.records) == 7


async def test_a_row_written_after_the_sweep_is_skipped_by_its_reader(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    store = await start_store(nursery, tmp_path / "data")
    put = InboxPutRequest(
        app_scope="chat", conversation_id="c-1", delivery_id="d-1", body={"id": "d-1"}
    )
    await store.ask(put, InboxPutReply)
    await store.ask(put.model_copy(update={"delivery_id": "d-2"}), InboxPutReply)
    conn = apsw.Connection(str(store.db_path))
    try:
        conn.setbusytimeout(5000)
        conn.execute("UPDATE app_inbox SET body = '[]' WHERE delivery_id = 'd-1'")
    finally:
        conn.close()
    listed = await store.ask(
        InboxListRequest(app_scope="chat", conversation_id="c-1"), InboxListReply
    )
    assert [row.delivery_id for row in listed.rows] == ["d-2"]


async def test_a_dead_letter_put_is_kept_once_audited_once_and_counted(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    store = await start_store(nursery, tmp_path / "data")
    put = DeadLetterPutRequest(
        source="inbound",
        item_id="m-1",
        kind="lineup.v1.text",
        code=ErrorCode.HANDLER_FAILED.value,
        attempts=2,
        body={"id": "m-1"},
    )
    first = await store.ask(put, DeadLetterPutReply)
    again = await store.ask(put, DeadLetterPutReply)
    assert (first.created, again.created, again.seq) == (True, False, first.seq)
    audit = await store.ask(AuditQueryRequest(event_prefix="store.dead_lettered"), AuditQueryReply)
    [record] = audit.records
    assert (record.actor, record.code, record.message_type, record.subject_id) == (
        "router", "handler_failed", "lineup.v1.text", "inbound:m-1",
    )  # fmt: skip
    document = json.loads((store.data_dir / QUARANTINE_SUMMARY_FILE).read_text())
    assert document == {"count": 1, "kinds": {"inbound:handler_failed": 1}}


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        (b'{"a":1}', {"a": 1}),
        ('{"a":"\\ud83d\\ude00"}', {"a": "\U0001f600"}),
        (b"[1]", None),
        (b'"x"', None),
        (b'{"a":NaN}', None),
        (b'{"a":"\\ud800"}', None),
        (b'{"a":"\xff"}', None),
        (b"{" * 300 + b"}" * 300, None),
        (None, None),
        (42, None),
        (b'{"a":"' + b"x" * 600_000 + b'"}', None),
    ],
    ids=["object", "pair", "array", "string", "nan", "lone-surrogate", "not-utf8", "deep",
         "null", "integer", "too-large"],
)  # fmt: skip
def test_a_stored_body_is_an_object_of_strict_json_or_nothing(raw: object, decoded: object) -> None:
    assert stored_object(raw) == decoded


def test_a_source_whose_sweep_fails_is_undone_and_the_others_are_swept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    conn = memory_database()
    conn.execute(INBOX, ("d-array", "[1]"))

    def broken(conn: Connection, now: float) -> int:
        conn.execute("DELETE FROM app_inbox")  # undone with its savepoint
        raise RuntimeError("a bug in one source's sweep")

    monkeypatch.setattr(sweep_module, "_SOURCES", (("outbox", broken), *sweep_module._SOURCES))
    try:
        count, kinds = sweep_module.sweep_at_start(conn, 2.0)
        assert (count, kinds) == (1, {"inbox:envelope_malformed": 1})
        assert conn.execute("SELECT count(*) FROM app_inbox").fetchall() == [(1,)]
    finally:
        conn.close()
