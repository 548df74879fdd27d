"""Tool call operations run directly (`actors/store/_tool_calls.py`): every request is ONE
transaction, and any sequence of requests leaves at most one terminal state and one terminal
outbox row per call.

The atomicity tests use the committer on a real database with a TEMP trigger that makes one
statement fail in the middle of a request: SQLite itself refuses, nothing is mocked. The property
test drives the operations on an in-memory database against a model built from the state table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import apsw
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store import _tool_calls as t
from lineup.actors.store import _tool_states as table
from lineup.actors.store._committer import Committer
from lineup.actors.store._db import Connection, Database
from lineup.actors.store.messages import (
    ToolCallFinalState,
    ToolCallFinishRequest,
    ToolCallProgressRequest,
    ToolCallRecordRequest,
    ToolCallState,
    ToolCallStep,
    ToolCallTransitionRequest,
)
from lineup.tests.actors.store._harness import WAIT, in_savepoint, memory_database

T = TypeVar("T")

SCOPE = "task-dashboard"
INSTANCE = "td-1"
STEPS: tuple[ToolCallStep, ...] = ("routing", "waiting_for_app", "running", "submitted")
FINALS: tuple[ToolCallFinalState, ...] = ("completed", "failed", "cancelled", "expired", "rejected")


def record(**fields: Any) -> ToolCallRecordRequest:
    values: dict[str, Any] = {
        "call_id": "call-1", "tool": "task-dashboard.open", "inventory_revision": "inv-7",
        "app_scope": SCOPE, "conversation_id": "conv-1", "handling": "launch",
        "input": {"title": "plan"}, "timeout_ms": 60_000,
    }  # fmt: skip
    return ToolCallRecordRequest(**(values | fields))


def transition(to_state: ToolCallStep) -> ToolCallTransitionRequest:
    instance = INSTANCE if to_state == "running" else None
    return ToolCallTransitionRequest(call_id="call-1", to_state=to_state, instance_id=instance)


def finish(to_state: ToolCallFinalState, outbox_id: str) -> ToolCallFinishRequest:
    outcome: dict[str, Any] = {"result": {"n": 1}} if to_state == "completed" else {"code": "x"}
    return ToolCallFinishRequest(
        call_id="call-1", to_state=to_state, outbox_id=outbox_id,
        wire={"type": "lineup.v1.tool.result", "payload": {}}, **outcome,
    )  # fmt: skip


def progress(outbox_id: str) -> ToolCallProgressRequest:
    return ToolCallProgressRequest(
        call_id="call-1", progress={"n": outbox_id}, outbox_id=outbox_id,
        wire={"type": "lineup.v1.tool.progress"}, expected_app_scope=SCOPE,
        expected_instance_id=INSTANCE,
    )  # fmt: skip


# ---------------------------------------------------------------------------------- atomicity


async def run(committer: Committer, op: Callable[[Connection], T]) -> T:
    with trio.fail_after(WAIT):
        return await committer.submit(op)


async def query(committer: Committer, sql: str) -> list[tuple[object, ...]]:
    with trio.fail_after(WAIT):
        return await committer.submit(lambda conn: conn.execute(sql).fetchall(), write=False)


async def refuse_writes_to(committer: Committer, table_name: str) -> None:
    sql = (
        f"CREATE TEMP TRIGGER refuse_{table_name} BEFORE INSERT ON main.{table_name}"
        " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
    )
    await run(committer, lambda conn: conn.execute(sql))


async def op_code(committer: Committer, op: Callable[[Connection], object]) -> ErrorCode:
    with pytest.raises(LineUpError) as caught:
        await run(committer, op)
    return caught.value.code


async def running_call(committer: Committer) -> None:
    await run(committer, lambda conn: t.tool_call_record(conn, record(), 1.0))
    for request in (transition("routing"), transition("running")):
        await run(committer, lambda conn, r=request: t.tool_call_transition(conn, r, 1.0))


@pytest.mark.parametrize("table_name", ["outbox", "tool_call_outbox", "audit"])
async def test_a_finish_whose_outbox_or_audit_insert_fails_leaves_the_call_running(
    committer: Committer, table_name: str
) -> None:
    await running_call(committer)
    await refuse_writes_to(committer, table_name)

    done = finish("completed", "o-1")
    code = await op_code(committer, lambda conn: t.tool_call_finish(conn, done, 2.0))

    assert code is ErrorCode.STORE_UNAVAILABLE
    assert await query(committer, "SELECT state, result, error_code FROM tool_calls") == [
        ("running", None, None)
    ]
    assert await query(committer, "SELECT count(*) FROM outbox") == [(0,)]
    assert await query(committer, "SELECT count(*) FROM tool_call_outbox") == [(0,)]


async def test_a_progress_whose_outbox_insert_fails_leaves_the_progress_as_it_was(
    committer: Committer,
) -> None:
    await running_call(committer)
    await refuse_writes_to(committer, "outbox")

    code = await op_code(committer, lambda conn: t.tool_call_progress(conn, progress("p-1"), 2.0))

    assert code is ErrorCode.STORE_UNAVAILABLE
    assert await query(committer, "SELECT progress FROM tool_calls") == [(None,)]


async def test_a_rejected_record_whose_outbox_insert_fails_records_no_call(
    committer: Committer,
) -> None:
    await refuse_writes_to(committer, "outbox")
    rejected = record(state="rejected", code="tool_not_advertised", outbox_id="r-1",
                      wire={"type": "lineup.v1.tool.receipt"})  # fmt: skip

    code = await op_code(committer, lambda conn: t.tool_call_record(conn, rejected, 1.0))

    assert code is ErrorCode.STORE_UNAVAILABLE
    assert await query(committer, "SELECT count(*) FROM tool_calls") == [(0,)]


async def test_values_that_are_not_strict_json_are_refused_before_anything_is_written(
    db: Database,
) -> None:
    conn = db.conn
    with pytest.raises(LineUpError) as caught:
        in_savepoint(conn, lambda c: t.tool_call_record(c, record(input={"x": float("nan")}), 1.0))
    assert caught.value.code is ErrorCode.INVALID_ARGUMENTS

    in_savepoint(conn, lambda c: t.tool_call_record(c, record(), 1.0))
    in_savepoint(conn, lambda c: t.tool_call_transition(c, transition("routing"), 1.0))
    in_savepoint(conn, lambda c: t.tool_call_transition(c, transition("running"), 1.0))
    bad = finish("completed", "o-1").model_copy(update={"result": {"x": float("inf")}})
    with pytest.raises(LineUpError) as caught:
        in_savepoint(conn, lambda c: t.tool_call_finish(c, bad, 2.0))
    assert caught.value.code is ErrorCode.INVALID_ARGUMENTS
    assert conn.execute("SELECT state FROM tool_calls").fetchall() == [("running",)]


async def test_the_database_itself_refuses_a_second_terminal_row_for_a_call(db: Database) -> None:
    conn = db.conn
    in_savepoint(conn, lambda c: t.tool_call_record(c, record(), 1.0))
    conn.execute(
        "INSERT INTO outbox (outbox_id, conversation_id, kind, body, created_at)"
        " VALUES ('a', 'conv-1', 'k', '{}', 1), ('b', 'conv-1', 'k', '{}', 1);"
        "INSERT INTO tool_call_outbox VALUES ('a', 'call-1', 'terminal', 'completed')"
    )
    with pytest.raises(apsw.ConstraintError):
        conn.execute("INSERT INTO tool_call_outbox VALUES ('b', 'call-1', 'terminal', 'failed')")


# ---------------------------------------------------------------------------------- property

Action = tuple[str, str, str]  # (kind, target state or "", outbox id)

_transitions = st.tuples(st.just("transition"), st.sampled_from(STEPS), st.just(""))
_finishes = st.tuples(st.just("finish"), st.sampled_from(FINALS), st.sampled_from(["o-1", "o-2"]))
_progress = st.tuples(st.just("progress"), st.just(""), st.sampled_from(["p-1", "p-2", "o-1"]))
actions = st.one_of(_transitions, _transitions, _progress, _progress, _finishes)


def apply(conn: Connection, action: Action) -> None:
    kind, target, outbox_id = action
    if kind == "transition":
        request = transition(target)  # type: ignore[arg-type]
        in_savepoint(conn, lambda c: t.tool_call_transition(c, request, 2.0))
    elif kind == "finish":
        done = finish(target, outbox_id)  # type: ignore[arg-type]
        in_savepoint(conn, lambda c: t.tool_call_finish(c, done, 2.0))
    else:
        reported = progress(outbox_id)
        in_savepoint(conn, lambda c: t.tool_call_progress(c, reported, 2.0))


def attempt(conn: Connection, action: Action) -> ErrorCode | None:
    """Apply `action`; the code it was refused with, or None."""
    try:
        apply(conn, action)
    except LineUpError as exc:
        return exc.code
    return None


def expected(
    state: ToolCallState, bound: bool, action: Action, links: dict[str, tuple[str, Any]]
) -> tuple[ToolCallState, ErrorCode | None]:
    """What the model says: the state after `action`, and the code it is refused with (None
    when it is accepted). `bound`: the call has its instance (it reached `running`)."""
    kind, target, outbox_id = action
    if kind == "transition":
        try:
            return table.step(state, target)[0], None  # type: ignore[arg-type]
        except LineUpError as exc:
            return state, exc.code
    if kind == "finish":
        if state in table.FINAL:
            replay = state == target and links.get(outbox_id) == ("terminal", state)
            return state, None if replay else ErrorCode.CALL_ALREADY_FINAL
        try:
            after = table.next_state(state, table.EVENT_TO[target])  # type: ignore[index]
        except LineUpError as exc:
            return state, exc.code
        return state if outbox_id in links else after, (
            ErrorCode.INVALID_ARGUMENTS if outbox_id in links else None
        )
    if not bound:  # progress names its instance, which the call has only once it ran
        return state, ErrorCode.APP_INSTANCE_NOT_FOUND
    if outbox_id in links:
        return state, None if links[outbox_id][0] == "progress" else ErrorCode.INVALID_ARGUMENTS
    return state, ErrorCode.CALL_ALREADY_FINAL if state in table.FINAL else None


@settings(deadline=None, max_examples=150)
@given(ahead=st.integers(0, len(STEPS)), steps=st.lists(actions, max_size=25))
def test_any_sequence_of_requests_ends_a_call_at_most_once_with_one_terminal_row(
    ahead: int, steps: list[Action]
) -> None:
    # `ahead` first moves the call that many steps along the happy path, so that every state is
    # where the random requests start from about as often.
    steps = [("transition", target, "") for target in STEPS[:ahead]] + steps
    conn = memory_database()
    try:
        in_savepoint(conn, lambda c: t.tool_call_record(c, record(), 1.0))
        state: ToolCallState = "received"
        bound = False
        links: dict[str, tuple[str, Any]] = {}  # outbox_id -> (role, status)
        for action in steps:
            after, code = expected(state, bound, action, links)
            refused = attempt(conn, action)
            assert refused is code, (state, action)
            if code is None:
                kind, _, outbox_id = action
                if kind == "finish" and after != state:
                    links[outbox_id] = ("terminal", after)
                elif kind == "progress":
                    links.setdefault(outbox_id, ("progress", None))
            assert state not in table.FINAL or after == state  # a final call never moves
            state = after
            bound = bound or state == "running"
            stored = conn.execute("SELECT state FROM tool_calls").fetchall()
            assert stored == [(state,)]
        terminal = conn.execute(
            "SELECT count(*) FROM tool_call_outbox WHERE role = 'terminal'"
        ).fetchall()
        assert terminal == [(1 if state in table.FINAL else 0,)]
        assert conn.execute("SELECT count(*) FROM outbox").fetchall() == [(len(links),)]
    finally:
        conn.close()
