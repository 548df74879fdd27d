"""Interaction steps (`actors/store/interactions/operations.py`), run as the committer runs them
(each request in its own savepoint) on a real migrated SQLite: the interaction's step and its
call's step are ONE transaction, the first committed ending wins, ownership comes first, and the
outbox's acknowledgement of the call's result settles the interaction in its own transaction.
"""

from __future__ import annotations

from typing import Any

import apsw
import pydantic
import pytest
import trio

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store._committer import Committer
from lineup.actors.store._db import Connection, Database
from lineup.actors.store.interactions import operations as ops
from lineup.actors.store.messages import (
    InteractionFacts,
    InteractionGetReply,
    InteractionGetRequest,
    InteractionListRequest,
    InteractionStepReply,
    InteractionStepRequest,
    OutboxAckRequest,
    OutboxFailRequest,
    OutboxRowIn,
    ToolCallFacts,
    ToolCallStepRequest,
)
from lineup.actors.store.outbox import operations as outbox
from lineup.facts.interactions import CODED, InteractionEvent
from lineup.facts.tool_calls import CODED as CALL_CODED
from lineup.facts.tool_calls import ROWS, ToolCallEvent
from lineup.tests.actors.store._harness import (
    StoreHarness,
    in_savepoint,
    refusal,
)

SECRET = "hunter2-the-question"
ANSWER_SECRET = "hunter2-the-answer"
CALL = "call-1"
ITEM = "ia-1"


def call_step(event: ToolCallEvent, call_id: str = CALL, **fields: Any) -> ToolCallStepRequest:
    values: dict[str, Any] = {}
    if event == "ask":
        values["new"] = ToolCallFacts(
            tool="interaction.input", inventory_revision="inv-1", app_scope="interaction",
            conversation_id="conv-1", handling="interactive", input={"title": SECRET},
            timeout_ms=900_000,
        )  # fmt: skip
    if event == "submit":
        values["result"] = {"values": {"name": ANSWER_SECRET}}
    if event in CALL_CODED:
        values["code"] = "interaction_dismissed"
    rows = tuple(
        OutboxRowIn(
            row=row,
            outbox_id=f"final:{call_id}" if row == "terminal" else f"receipt:{call_id}:{row}",
            wire={"type": "lineup.v1.tool.result" if row == "terminal" else "lineup.v1.receipt"},
        )
        for row in ROWS[event]
    )
    return ToolCallStepRequest(call_id=call_id, event=event, rows=rows, **(values | fields))


def facts(**fields: Any) -> InteractionFacts:
    values: dict[str, Any] = {
        "interaction_id": ITEM, "kind": "input", "source": "agent_tool",
        "request": {"kind": "input", "title": SECRET, "prompt": "p", "fields": []},
        "owner_scope": "interaction", "agent_id": "agent-1", "conversation_id": "conv-1",
        "call_id": CALL, "expires_at": 1000.0,
    }  # fmt: skip
    return InteractionFacts(**(values | fields))


def step(
    event: InteractionEvent, *, call: ToolCallEvent | None = None, **fields: Any
) -> InteractionStepRequest:
    values: dict[str, Any] = {}
    if event == "ask":
        values["new"] = facts()
    if event == "answer":
        values["result"] = {"values": {"name": ANSWER_SECRET}}
    if event in CODED:
        values["code"] = "interaction_dismissed"
    if call is not None:
        values["call_step"] = call_step(call)
    return InteractionStepRequest(interaction_id=ITEM, event=event, **(values | fields))


def run(
    conn: Connection, request: InteractionStepRequest, now: float = 1.0
) -> InteractionStepReply:
    return in_savepoint(conn, lambda c: ops.interaction_step(c, request, now, actor="router"))


def code_of(conn: Connection, request: InteractionStepRequest) -> ErrorCode:
    with pytest.raises(LineUpError) as caught:
        run(conn, request)
    return caught.value.code


def counts(conn: Connection) -> dict[str, int]:
    tables = ("interactions", "tool_calls", "outbox", "tool_call_outbox", "audit")
    found: dict[str, int] = {}
    for table in tables:
        [(count,)] = conn.execute(f"SELECT count(*) FROM {table}").fetchall()
        assert isinstance(count, int)
        found[table] = count
    return found


def asked(conn: Connection) -> InteractionStepReply:
    return run(conn, step("ask", call="ask"))


def answered(conn: Connection) -> InteractionStepReply:
    asked(conn)
    run(conn, step("present"))
    return run(conn, step("answer", call="submit"), 2.0)


# ---------------------------------------------------------------------------------- ask


def test_asking_writes_the_interaction_and_its_call_with_its_receipt_in_one_step(
    conn: Connection,
) -> None:
    reply = asked(conn)
    assert (reply.created, reply.changed, reply.before) == (True, True, None)
    assert reply.interaction.state == "pending"
    assert reply.interaction.request["title"] == SECRET
    assert reply.call is not None and reply.call.state == "running"
    assert reply.call.handling == "interactive" and reply.call.instance_id is None
    assert counts(conn) == {
        "interactions": 1, "tool_calls": 1, "outbox": 1, "tool_call_outbox": 1, "audit": 2,
    }  # fmt: skip


def test_a_repeated_ask_writes_nothing_and_does_not_step_the_call(conn: Connection) -> None:
    asked(conn)
    before = counts(conn)
    again = asked(conn)
    assert (again.created, again.changed, again.call) == (False, False, None)
    assert counts(conn) == before


def test_a_miniapp_asks_without_a_call(conn: Connection) -> None:
    new = facts(source="miniapp", owner_scope="task-dashboard", instance_id="td-1", call_id=None,
                parent_call_id="call-9", presentation="modal")  # fmt: skip
    reply = run(conn, InteractionStepRequest(interaction_id=ITEM, event="ask", new=new))
    assert reply.call is None
    got = ops.interaction_get(conn, InteractionGetRequest(interaction_id=ITEM), 1.0)
    assert got.interaction == reply.interaction
    assert (got.interaction.parent_call_id, got.interaction.presentation) == ("call-9", "modal")


# ---------------------------------------------------------------------------------- both or nothing


def test_a_refused_call_step_leaves_no_interaction(conn: Connection) -> None:
    # The call's receipt id is already taken: the call step is refused, and with it the ask.
    conn.execute(
        "INSERT INTO outbox (outbox_id, conversation_id, kind, body, created_at)"
        f" VALUES ('receipt:{CALL}:accepted', 'conv-1', 'k', '{{}}', 0)"
    )
    before = counts(conn)
    assert code_of(conn, step("ask", call="ask")) is ErrorCode.INVALID_ARGUMENTS
    assert counts(conn) == before


def test_a_failing_write_of_the_call_undoes_the_interactions_step(conn: Connection) -> None:
    asked(conn)
    run(conn, step("present"))
    conn.execute(
        "CREATE TEMP TRIGGER refuse_terminal BEFORE INSERT ON main.tool_call_outbox"
        " WHEN NEW.role = 'terminal' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
    )
    before = counts(conn)
    with pytest.raises(apsw.ConstraintError):  # SQLite's own refusal, in the middle of the step
        run(conn, step("answer", call="submit"))
    assert counts(conn) == before
    assert conn.execute("SELECT state, answer FROM interactions").fetchall() == [
        ("presented", None)
    ]
    assert conn.execute("SELECT state FROM tool_calls").fetchall() == [("running",)]


def test_a_failing_write_of_the_interaction_undoes_the_calls_step(conn: Connection) -> None:
    conn.execute(
        "CREATE TEMP TRIGGER refuse_audit BEFORE INSERT ON main.audit"
        " WHEN NEW.event LIKE 'store.interaction_step%'"
        " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
    )
    with pytest.raises(apsw.ConstraintError):
        asked(conn)
    assert set(counts(conn).values()) == {0}


def test_a_call_step_for_another_call_is_refused_before_anything_is_written(
    conn: Connection,
) -> None:
    asked(conn)
    before = counts(conn)
    other = step("cancel", call_step=call_step("cancel", call_id="call-2"))
    assert code_of(conn, other) is ErrorCode.INVALID_ARGUMENTS
    assert counts(conn) == before


# ---------------------------------------------------------------------------------- the race


def test_the_first_ending_wins_and_the_call_has_one_terminal_row(conn: Connection) -> None:
    reply = answered(conn)
    assert reply.interaction.state == "submitted"
    assert reply.interaction.result == {"values": {"name": ANSWER_SECRET}}
    assert reply.call is not None and reply.call.state == "submitted"
    before = counts(conn)
    # The expiry and the dismiss that come after it change nothing (a replayed answer: below).
    for late in (step("expire", call="expire"), step("cancel", call="cancel")):
        assert code_of(conn, late) is ErrorCode.INTERACTION_FINAL
    assert counts(conn) == before
    terminal = "SELECT count(*) FROM tool_call_outbox WHERE role = 'terminal'"
    assert conn.execute(terminal).fetchall() == [(1,)]


def test_a_replayed_answer_is_answered_with_the_first_and_writes_nothing(conn: Connection) -> None:
    first = answered(conn)
    before = counts(conn)
    other = step("answer", call="submit", result={"values": {"name": "else"}})
    again = run(conn, other, 3.0)
    assert (again.changed, again.call, again.before) == (False, None, "submitted")
    assert again.interaction == first.interaction
    assert counts(conn) == before


def test_an_expiry_first_makes_the_answer_lose(conn: Connection) -> None:
    asked(conn)
    expired = run(conn, step("expire", call="expire", code="expired"))
    assert (expired.interaction.state, expired.interaction.terminal_code) == ("expired", "expired")
    assert expired.call is not None and expired.call.state == "expired"
    assert code_of(conn, step("answer", call="submit")) is ErrorCode.INTERACTION_FINAL
    assert run(conn, step("expire", call="expire", code="expired")).changed is False


def test_a_present_after_the_answer_is_refused(conn: Connection) -> None:
    answered(conn)
    assert code_of(conn, step("present")) is ErrorCode.INTERACTION_FINAL


# ---------------------------------------------------------------------------------- ownership


@pytest.mark.parametrize(
    "expected",
    [{"expected_owner_scope": "task-dashboard"}, {"expected_instance_id": "td-1"}],
)
def test_another_owner_learns_nothing_not_even_that_it_is_final(
    conn: Connection, expected: dict[str, Any]
) -> None:
    asked(conn)
    before = counts(conn)
    assert code_of(conn, step("cancel", **expected)) is ErrorCode.INTERACTION_NOT_FOUND
    run(conn, step("cancel"))
    assert code_of(conn, step("cancel", **expected)) is ErrorCode.INTERACTION_NOT_FOUND
    assert code_of(conn, step("ask", **expected)) is ErrorCode.INTERACTION_NOT_FOUND
    assert counts(conn)["interactions"] == before["interactions"]


def test_an_unknown_interaction_is_not_found(conn: Connection) -> None:
    assert code_of(conn, step("present")) is ErrorCode.INTERACTION_NOT_FOUND


def test_asking_in_another_owners_name_is_a_misuse(conn: Connection) -> None:
    request = step("ask", expected_owner_scope="task-dashboard")
    assert code_of(conn, request) is ErrorCode.INVALID_ARGUMENTS
    assert counts(conn)["interactions"] == 0


# ---------------------------------------------------------------------------------- bounds, audit


def test_a_request_or_result_over_its_bounds_is_refused_and_nothing_is_written(
    conn: Connection,
) -> None:
    big = step("ask", new=facts(request={"title": "x" * (64 * 1024)}))
    assert code_of(conn, big) is ErrorCode.INVALID_ARGUMENTS
    assert counts(conn)["interactions"] == 0
    asked(conn)
    huge = step("answer", result={"values": {"name": "x" * (64 * 1024)}})
    assert code_of(conn, huge) is ErrorCode.INVALID_ARGUMENTS
    assert code_of(conn, step("answer", result={"x": float("nan")})) is ErrorCode.INVALID_ARGUMENTS
    assert conn.execute("SELECT state FROM interactions").fetchall() == [("pending",)]


def test_the_audit_holds_ids_states_and_codes_never_the_question_or_the_answer(
    conn: Connection,
) -> None:
    answered(conn)
    run(conn, step("fail", code="internal_error"), 3.0)
    rows = conn.execute(
        "SELECT event, actor, peer, code, message_type, subject_id FROM audit"
        " WHERE event LIKE 'store.interaction_step%' ORDER BY id"
    ).fetchall()
    assert rows == [
        ("store.interaction_step.pending", "router", "interaction", None, "ask", ITEM),
        ("store.interaction_step.presented", "router", "interaction", None, "present", ITEM),
        ("store.interaction_step.submitted", "router", "interaction", None, "answer", ITEM),
        ("store.interaction_step.failed", "router", "interaction", "internal_error", "fail", ITEM),
    ]
    everything = str(conn.execute("SELECT * FROM audit").fetchall())
    assert SECRET not in everything and ANSWER_SECRET not in everything


def test_an_interaction_that_fails_after_its_answer_keeps_no_result(conn: Connection) -> None:
    answered(conn)
    failed = run(conn, step("fail", code="internal_error"), 3.0)
    assert (failed.interaction.state, failed.interaction.result) == ("failed", None)
    assert failed.interaction.terminal_code == "internal_error"


# ---------------------------------------------------------------------------------- settling


def test_the_acknowledged_result_completes_the_call_and_its_interaction_together(
    conn: Connection,
) -> None:
    answered(conn)
    ack = OutboxAckRequest(outbox_id=f"final:{CALL}")
    assert in_savepoint(conn, lambda c: outbox.outbox_ack(c, ack, 4.0, actor="transport")).acked
    assert conn.execute("SELECT state FROM tool_calls").fetchall() == [("completed",)]
    got = ops.interaction_get(conn, InteractionGetRequest(call_id=CALL), 4.0).interaction
    assert got is not None
    assert (got.state, got.result) == ("completed", {"values": {"name": ANSWER_SECRET}})
    # A second acknowledgement changes nothing.
    before = counts(conn)
    assert not in_savepoint(conn, lambda c: outbox.outbox_ack(c, ack, 5.0, actor="transport")).acked
    assert counts(conn) == before


def test_a_result_refused_for_good_fails_the_call_and_its_interaction(conn: Connection) -> None:
    answered(conn)
    refused = OutboxFailRequest(outbox_id=f"final:{CALL}", code="appserver_refused")
    in_savepoint(conn, lambda c: outbox.outbox_fail(c, refused, 4.0, actor="transport"))
    assert conn.execute("SELECT state, error_code FROM tool_calls").fetchall() == [
        ("failed", "appserver_refused")
    ]
    assert conn.execute("SELECT state, terminal_code, answer FROM interactions").fetchall() == [
        ("failed", "appserver_refused", None)
    ]


def test_the_acknowledged_receipt_leaves_the_interaction_as_it_is(conn: Connection) -> None:
    asked(conn)
    ack = OutboxAckRequest(outbox_id=f"receipt:{CALL}:accepted")
    in_savepoint(conn, lambda c: outbox.outbox_ack(c, ack, 4.0, actor="transport"))
    assert conn.execute("SELECT state FROM interactions").fetchall() == [("pending",)]


# ---------------------------------------------------------------------------------- reads


def _ask(conn: Connection, item: str, *, at: float, **fields: Any) -> None:
    new = facts(interaction_id=item, call_id=None, **fields)
    run(conn, InteractionStepRequest(interaction_id=item, event="ask", new=new), at)


def test_the_list_holds_every_open_one_then_the_newest_final_ones(conn: Connection) -> None:
    for i in range(5):
        _ask(conn, f"ia-{i}", at=float(i), app_session_id="s-1" if i % 2 else None)
    for i in (0, 1, 2):
        end = InteractionStepRequest(interaction_id=f"ia-{i}", event="cancel", code="app_closed")
        run(conn, end, 10.0 + i)

    def listed(**fields: Any) -> list[str]:
        reply = ops.interaction_list(conn, InteractionListRequest(**fields), 20.0)
        return [row.interaction_id for row in reply.interactions]

    assert listed() == ["ia-3", "ia-4", "ia-2", "ia-1", "ia-0"]
    assert listed(recent=2) == ["ia-3", "ia-4", "ia-2", "ia-1"]
    assert listed(open_only=True) == ["ia-3", "ia-4"]
    assert listed(app_session_id="s-1") == ["ia-3", "ia-1"]
    assert listed(instance_id="td-9") == []


def test_get_finds_by_id_or_call_and_nothing_for_an_unknown_one(conn: Connection) -> None:
    asked(conn)
    by_id = ops.interaction_get(conn, InteractionGetRequest(interaction_id=ITEM), 1.0)
    by_call = ops.interaction_get(conn, InteractionGetRequest(call_id=CALL), 1.0)
    assert by_id == by_call and by_id.interaction is not None
    unknown = ops.interaction_get(conn, InteractionGetRequest(call_id="call-x"), 1.0)
    assert unknown.interaction is None


@pytest.mark.parametrize(
    "fields",
    [
        {"event": "ask"},  # no facts
        {"event": "present", "new": facts()},
        {"event": "answer"},  # no result
        {"event": "present", "result": {"x": 1}},
        {"event": "cancel"},  # no code
        {"event": "present", "code": "x"},
        {"event": "ask", "new": facts(interaction_id="ia-other")},
        {"event": "settle", "call_step": call_step("cancel")},
    ],
)
def test_a_malformed_step_is_refused_by_its_model(fields: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError):
        InteractionStepRequest(interaction_id=ITEM, **fields)


def test_get_names_one_key() -> None:
    keys: list[dict[str, Any]] = [{}, {"interaction_id": ITEM, "call_id": CALL}]
    for fields in keys:
        with pytest.raises(pydantic.ValidationError):
            InteractionGetRequest(**fields)


# ---------------------------------------------------------------------------------- the bus


async def test_the_router_steps_and_reads_interactions_through_the_store(
    store: StoreHarness,
) -> None:
    reply = await store.ask(step("ask", call="ask"), InteractionStepReply)
    assert reply.created and reply.call is not None
    got = await store.ask(InteractionGetRequest(call_id=CALL), InteractionGetReply)
    assert got.interaction == reply.interaction
    assert await refusal(store, step("present", expected_owner_scope="x")) is (
        ErrorCode.INTERACTION_NOT_FOUND
    )
    with trio.fail_after(5):
        late = await store.ask(step("present"), InteractionStepReply)
    assert late.interaction.state == "presented"


async def test_through_the_committer_a_refused_call_step_commits_nothing_of_the_step(
    committer: Committer, db: Database
) -> None:
    # The production path: the step is one op in one savepoint of a group-committed batch.
    db.conn.execute(
        "INSERT INTO outbox (outbox_id, conversation_id, kind, body, created_at)"
        f" VALUES ('receipt:{CALL}:accepted', 'conv-1', 'k', '{{}}', 0)"
    )
    request = step("ask", call="ask")
    with pytest.raises(LineUpError) as caught, trio.fail_after(5):
        await committer.submit(lambda c: ops.interaction_step(c, request, 1.0, actor="router"))
    assert caught.value.code is ErrorCode.INVALID_ARGUMENTS
    with trio.fail_after(5):
        left = await committer.submit(
            lambda c: [counts(c)["interactions"], counts(c)["tool_calls"]], write=False
        )
    assert left == [0, 0]
