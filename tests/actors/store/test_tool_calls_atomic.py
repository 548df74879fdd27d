"""Tool call operations run directly (`actors/store/tool_calls/operations.py`): every step is ONE
transaction, and any sequence of requests leaves at most one terminal state and one terminal
outbox row per call.

The atomicity tests use the committer on a real database with a TEMP trigger that makes one
statement fail in the middle of a request: SQLite itself refuses, nothing is mocked. The property
test drives the operations on an in-memory database against a model built from the machine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import apsw
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store._committer import Committer
from lineup.actors.store._db import Connection, Database
from lineup.actors.store.audit.messages import AuditRecord
from lineup.actors.store.audit.operations import audit_append
from lineup.actors.store.messages import (
    OutboxRowIn,
    ToolCallProgressRequest,
    ToolCallState,
    ToolCallStepRequest,
)
from lineup.actors.store.tool_calls import operations as t
from lineup.facts import tool_calls as machine
from lineup.facts.tool_calls import BIRTH, CODED, ROWS, TARGET, Row, ToolCallEvent
from lineup.tests.actors.store._harness import (
    WAIT,
    in_savepoint,
    memory_database,
    put_live_instances,
)
from lineup.tests.actors.store.test_tool_calls import BINDS, INSTANCE, SCOPE, facts
from lineup.tests.actors.store.test_tool_calls import birth as _birth
from lineup.tests.actors.store.test_tool_calls import step as _step

T = TypeVar("T")


def row_id(row: Row, terminal: str) -> str:
    return terminal if row == "terminal" else f"receipt:{row}"


def step(
    event: ToolCallEvent,
    terminal: str = "final",
    *,
    born: bool = False,
    instance: str = INSTANCE,
    **fields: Any,
) -> ToolCallStepRequest:
    """A well-formed step of call-1; its terminal row (if any) is `terminal`, its receipts keep
    one id each."""
    values: dict[str, Any] = {}
    if born:
        values["new"] = facts()
    if event in BINDS:
        values["instance_id"] = instance
    if event == "submit":
        values["result"] = {"n": 1}
    if event in CODED:
        values["code"] = "x"
    rows = tuple(
        OutboxRowIn(row=row, outbox_id=row_id(row, terminal), wire={"type": f"lineup.v1.{row}"})
        for row in ROWS[event]
    )
    return ToolCallStepRequest(call_id="call-1", event=event, rows=rows, **(values | fields))


def progress(outbox_id: str) -> ToolCallProgressRequest:
    return ToolCallProgressRequest(
        call_id="call-1", progress={"n": outbox_id}, outbox_id=outbox_id,
        wire={"type": "lineup.v1.tool.progress"}, expected_app_scope=SCOPE,
        expected_instance_id=INSTANCE,
    )  # fmt: skip


# ---------------------------------------------------------------------------------- atomicity


@pytest.fixture
async def committer(committer: Committer) -> Committer:
    """The committer, with the instances these tests give calls to recorded live."""
    await run(committer, lambda conn: put_live_instances(conn, SCOPE, INSTANCE, "td-2"))
    return committer


async def run(committer: Committer, op: Callable[[Connection], T]) -> T:
    with trio.fail_after(WAIT):
        return await committer.submit(op)


async def query(committer: Committer, sql: str) -> list[tuple[object, ...]]:
    with trio.fail_after(WAIT):
        return await committer.submit(lambda conn: conn.execute(sql).fetchall(), write=False)


async def refuse_writes_to(committer: Committer, table_name: str, when: str = "1") -> None:
    sql = (
        f"CREATE TEMP TRIGGER refuse_{table_name} BEFORE INSERT ON main.{table_name}"
        f" WHEN {when} BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
    )
    await run(committer, lambda conn: conn.execute(sql))


async def op_code(committer: Committer, op: Callable[[Connection], object]) -> ErrorCode:
    with pytest.raises(LineUpError) as caught:
        await run(committer, op)
    return caught.value.code


async def steps(committer: Committer, *requests: ToolCallStepRequest) -> None:
    for request in requests:
        await run(committer, partial(t.tool_call_step, req=request, now=1.0))


async def counts(committer: Committer) -> list[list[tuple[object, ...]]]:
    return [await query(committer, f"SELECT count(*) FROM {table}")
            for table in ("outbox", "tool_call_outbox", "audit")]  # fmt: skip


@pytest.mark.parametrize("table_name", ["outbox", "tool_call_outbox", "audit"])
async def test_a_submit_whose_outbox_or_audit_insert_fails_leaves_the_call_running(
    committer: Committer, table_name: str
) -> None:
    await steps(committer, step("hand_over", born=True), step("take"))
    before = await counts(committer)
    await refuse_writes_to(committer, table_name)

    done = step("submit")
    code = await op_code(committer, lambda conn: t.tool_call_step(conn, done, 2.0))

    assert code is ErrorCode.STORE_UNAVAILABLE
    assert await query(committer, "SELECT state, result, error_code FROM tool_calls") == [
        ("running", None, None)
    ]
    assert await counts(committer) == before


@pytest.mark.parametrize("table_name", ["tool_calls", "outbox", "tool_call_outbox", "audit"])
@pytest.mark.parametrize("event", ["hand_over", "refuse"])
async def test_a_birth_whose_any_insert_fails_records_no_call_and_no_row(
    committer: Committer, table_name: str, event: ToolCallEvent
) -> None:
    before = await counts(committer)
    await refuse_writes_to(committer, table_name)

    born = step(event, born=True)
    code = await op_code(committer, lambda conn: t.tool_call_step(conn, born, 1.0))

    assert code is ErrorCode.STORE_UNAVAILABLE
    assert await query(committer, "SELECT count(*) FROM tool_calls") == [(0,)]
    assert await counts(committer) == before


@pytest.mark.parametrize("table_name", ["outbox", "tool_call_outbox"])
async def test_a_launch_failure_whose_terminal_row_fails_writes_not_even_its_receipt(
    committer: Committer, table_name: str
) -> None:
    await steps(committer, step("admit", born=True), step("activate"))
    before = await counts(committer)
    # Only the second row of the step is refused: its first, the receipt, is written first.
    column = "kind = 'lineup.v1.terminal'" if table_name == "outbox" else "role = 'terminal'"
    await refuse_writes_to(committer, table_name, f"NEW.{column}")

    ended = step("launch_failed")
    code = await op_code(committer, lambda conn: t.tool_call_step(conn, ended, 2.0))

    assert code is ErrorCode.STORE_UNAVAILABLE
    assert await query(committer, "SELECT state, error_code FROM tool_calls") == [("routing", None)]
    assert await counts(committer) == before
    assert await query(committer, "SELECT outbox_id FROM outbox ORDER BY seq") == [
        ("receipt:accepted",), ("receipt:starting",),
    ]  # fmt: skip


async def test_a_progress_whose_outbox_insert_fails_leaves_the_progress_as_it_was(
    committer: Committer,
) -> None:
    await steps(committer, step("hand_over", born=True), step("take"))
    await refuse_writes_to(committer, "outbox")

    code = await op_code(committer, lambda conn: t.tool_call_progress(conn, progress("p-1"), 2.0))

    assert code is ErrorCode.STORE_UNAVAILABLE
    assert await query(committer, "SELECT progress FROM tool_calls") == [(None,)]


async def test_an_ack_whose_settling_fails_leaves_the_call_submitted(
    committer: Committer,
) -> None:
    await steps(committer, step("hand_over", born=True), step("take"), step("submit"))
    await refuse_writes_to(committer, "audit")

    code = await op_code(
        committer, lambda conn: t.settle_terminal(conn, "final", None, 3.0, actor="transport")
    )

    assert code is ErrorCode.STORE_UNAVAILABLE
    assert await query(committer, "SELECT state FROM tool_calls") == [("submitted",)]
    links = "SELECT status FROM tool_call_outbox WHERE role = 'terminal'"
    assert await query(committer, links) == [("submitted",)]


async def test_values_that_are_not_strict_json_are_refused_before_anything_is_written(
    db: Database,
) -> None:
    conn = db.conn
    put_live_instances(conn, SCOPE, INSTANCE)
    nan = step("admit", born=True, new=facts(input={"x": float("nan")}))
    with pytest.raises(LineUpError) as caught:
        in_savepoint(conn, lambda c: t.tool_call_step(c, nan, 1.0))
    assert caught.value.code is ErrorCode.INVALID_ARGUMENTS
    assert conn.execute("SELECT count(*) FROM tool_calls").fetchall() == [(0,)]

    for request in (step("hand_over", born=True), step("take")):
        in_savepoint(conn, partial(t.tool_call_step, req=request, now=1.0))
    bad = step("submit").model_copy(update={"result": {"x": float("inf")}})
    with pytest.raises(LineUpError) as caught:
        in_savepoint(conn, lambda c: t.tool_call_step(c, bad, 2.0))
    assert caught.value.code is ErrorCode.INVALID_ARGUMENTS
    assert conn.execute("SELECT state FROM tool_calls").fetchall() == [("running",)]
    assert conn.execute("SELECT count(*) FROM outbox").fetchall() == [(1,)]


async def test_the_database_itself_refuses_a_second_terminal_row_for_a_call(db: Database) -> None:
    conn = db.conn
    in_savepoint(conn, lambda c: t.tool_call_step(c, step("admit", born=True), 1.0))
    conn.execute(
        "INSERT INTO outbox (outbox_id, conversation_id, kind, body, created_at)"
        " VALUES ('a', 'conv-1', 'k', '{}', 1), ('b', 'conv-1', 'k', '{}', 1);"
        "INSERT INTO tool_call_outbox VALUES ('a', 'call-1', 'terminal', 'completed')"
    )
    with pytest.raises(apsw.ConstraintError):
        conn.execute("INSERT INTO tool_call_outbox VALUES ('b', 'call-1', 'terminal', 'failed')")


# ---------------------------------------------------------------------------------- property

# The events a request may carry (the AppServer's word arrives by the outbox: `ack` below).
EVENTS: tuple[ToolCallEvent, ...] = tuple(
    e for e in TARGET if e not in ("settle", "settle_refused")
)
TERMINALS = ("t-1", "t-2")
HAPPY: tuple[ToolCallEvent, ...] = ("admit", "activate", "activated", "take", "submit")

# (kind, event, terminal or progress id, with facts, instance)
Action = tuple[str, ToolCallEvent, str, bool, str]

_steps = st.tuples(
    st.just("step"), st.sampled_from(EVENTS), st.sampled_from(TERMINALS), st.booleans(),
    st.sampled_from([INSTANCE, INSTANCE, "td-2"]),
)  # fmt: skip
_progress = st.tuples(
    st.just("progress"), st.just("take"), st.sampled_from(["p-1", "p-2", "t-1"]),
    st.just(False), st.just(INSTANCE),
)  # fmt: skip
_acks = st.tuples(
    st.sampled_from(["ack", "ack_refused"]), st.just("take"), st.sampled_from(TERMINALS),
    st.just(False), st.just(INSTANCE),
)  # fmt: skip
actions = st.one_of(_steps, _steps, _steps, _progress, _acks)


def request_of(action: Action) -> ToolCallStepRequest | None:
    """The step request `action` stands for, or None where the request model refuses it."""
    _, event, terminal, born, instance = action
    if born and event not in BIRTH:
        return None
    if not born and event in ("admit", "ask", "refuse"):  # births only
        return None
    return step(event, terminal, born=born, instance=instance)


def apply(conn: Connection, action: Action) -> tuple[bool, bool]:
    """Apply `action`: (whether it wrote anything, whether the reply said so)."""
    kind, _, outbox_id, _, _ = action
    if kind == "step":
        request = request_of(action)
        assert request is not None
        reply = in_savepoint(conn, lambda c: t.tool_call_step(c, request, 2.0))
        return reply.changed, reply.changed
    if kind == "progress":
        reported = progress(outbox_id)
        made = in_savepoint(conn, lambda c: t.tool_call_progress(c, reported, 2.0))
        return made.created, made.created
    code = None if kind == "ack" else "appserver_refused"
    moved = in_savepoint(
        conn, lambda c: t.settle_terminal(c, outbox_id, code, 3.0, actor="transport")
    )
    return moved is not None, moved is not None


@dataclass
class Model:
    """What the store should hold for call-1."""

    state: ToolCallState | None = None
    instance: str | None = None
    links: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # id -> role, status
    audits: int = 0

    def mine(self, outbox_id: str, role: str, status: str | None) -> bool | None:
        """Whether `outbox_id` is already this row of the call (None: not used at all; raises
        for an id used otherwise)."""
        link = self.links.get(outbox_id)
        if link is None:
            return None
        if link[0] != role or (role == "receipt" and link[1] != status):
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "outbox id already used")
        return True

    def step(self, action: Action) -> bool:
        """Apply `action` to the model as the documented order of checks says; True if it
        changes anything. Raises as the store should."""
        _, event, terminal, born, instance = action
        rows = [(row, row_id(row, terminal)) for row in ROWS[event]]
        roles = [("terminal" if row == "terminal" else "receipt", row) for row in ROWS[event]]
        if self.state is None:
            if not born:
                raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "no such tool call")
        else:
            if born:
                return False  # another arrival of the same call
            if event in BINDS and self.instance not in (None, instance):
                raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "another instance")
            if self.state == TARGET[event]:
                for (_, outbox_id), (role, status) in zip(rows, roles, strict=True):
                    if not self.mine(outbox_id, role, status):
                        break
                else:
                    return False  # a repeat
        after = machine.move(self.state, event).to
        new: dict[str, tuple[str, str | None]] = {}  # all or nothing
        for (_, outbox_id), (role, status) in zip(rows, roles, strict=True):
            if self.state is not None and self.mine(outbox_id, role, status):
                continue  # a receipt an earlier step wrote
            if outbox_id in self.links:
                raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "outbox id already used")
            new[outbox_id] = (role, after if role == "terminal" else status)
        self.links |= new
        self.state = after
        if event in BINDS:
            self.instance = instance
        self.audits += 1
        return True

    def progress(self, outbox_id: str) -> bool:
        if self.state is None:
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "no such tool call")
        if self.instance != INSTANCE:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, "not this instance's")
        link = self.links.get(outbox_id)
        if link is not None:
            if link[0] != "progress":
                raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "outbox id already used")
            return False
        if self.state in machine.FINAL:
            raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, "final")
        self.links[outbox_id] = ("progress", None)
        return True

    def ack(self, outbox_id: str, refused: bool) -> bool:
        if self.links.get(outbox_id, ("", None))[0] != "terminal" or self.state != "submitted":
            return False
        self.state = machine.move(self.state, "settle_refused" if refused else "settle").to
        self.links[outbox_id] = ("terminal", self.state)
        self.audits += 1
        return True

    def apply(self, action: Action) -> bool:
        kind, _, outbox_id, _, _ = action
        if kind == "step":
            return self.step(action)
        if kind == "progress":
            return self.progress(outbox_id)
        return self.ack(outbox_id, kind == "ack_refused")


def outcome(run: Callable[[], tuple[bool, bool]]) -> tuple[bool, ErrorCode | None]:
    try:
        changed, _ = run()
    except LineUpError as exc:
        return False, exc.code
    return changed, None


def stored(conn: Connection) -> tuple[object, ...]:
    return (
        conn.execute("SELECT state, instance_id FROM tool_calls").fetchall(),
        sorted(conn.execute("SELECT outbox_id, role, status FROM tool_call_outbox").fetchall()),
        conn.execute("SELECT count(*) FROM outbox").fetchall(),
        conn.execute("SELECT count(*) FROM audit WHERE event LIKE 'tool_call.%'").fetchall(),
    )


@settings(deadline=None, max_examples=200)
@given(ahead=st.integers(0, len(HAPPY)), later=st.lists(actions, max_size=25))
def test_any_sequence_of_requests_ends_a_call_at_most_once_with_one_terminal_row(
    ahead: int, later: list[Action]
) -> None:
    """200 examples of up to 25 random requests each, every one checked against the model:
    what the property needs to reach every state from every other. (It took 16–20 s in the
    loaded suite while each example migrated a database of its own; each now copies one.)"""
    # `ahead` first moves the call that many steps along a launch's happy path, so that every
    # state is where the random requests start from about as often.
    happy: list[Action] = [("step", event, "t-1", event == "admit", INSTANCE)
                           for event in HAPPY[:ahead]]  # fmt: skip
    conn = memory_database()
    put_live_instances(conn, SCOPE, INSTANCE, "td-2")
    model = Model()
    try:
        for action in happy + later:
            if action[0] == "step" and request_of(action) is None:
                continue
            before = stored(conn)
            prior = model.state
            expected = outcome(lambda: (model.apply(action), True))  # noqa: B023
            got = outcome(lambda: apply(conn, action))  # noqa: B023
            assert got == expected, (prior, action)
            after = stored(conn)
            if not got[0]:
                assert after == before, (prior, action)  # a refusal, a repeat: nothing written
            # A call only moves forward, and a final one never moves.
            if prior is not None:
                assert model.state is not None
                order = list(machine.TABLE)
                assert order.index(model.state) >= order.index(prior)
                assert prior not in machine.FINAL or model.state == prior
            state = model.state
            assert after[0] == ([] if state is None else [(state, model.instance)])
            assert after[1] == sorted((i, role, status) for i, (role, status) in
                                      model.links.items())  # fmt: skip
            assert after[2] == [(len(model.links),)]  # every outbox row is one of the call's
            assert after[3] == [(model.audits,)]  # one audit row per change, none otherwise
        terminal = conn.execute(
            "SELECT count(*) FROM tool_call_outbox WHERE role = 'terminal'"
        ).fetchall()
        assert terminal == [(1 if model.state in machine.DECIDED else 0,)]
    finally:
        conn.close()


# ---------------------------------------------------------------------------------- cost


def test_a_step_that_keeps_the_calls_instance_writes_its_row_and_no_index_of_it(
    db: Database,
) -> None:
    """A call's steps after its birth rewrite no index entry of the call (issue 32: each is a
    B-tree page in every commit): `take` writes the call's row and its audit row, nothing more.
    Counted in WAL pages, against an audit row written alone."""
    conn = db.conn
    pages = [0]

    def grew(_conn: Connection, _name: str, count: int) -> int:
        pages[0] = count
        return 0

    conn.wal_autocheckpoint(0)
    conn.set_wal_hook(grew)

    def written(op: Callable[[], object]) -> int:
        before = pages[0]
        conn.execute("BEGIN IMMEDIATE")
        op()
        conn.execute("COMMIT")
        return pages[0] - before

    try:
        written(lambda: put_live_instances(conn, SCOPE, INSTANCE))
        for call_id in ("call-1", "call-2"):
            written(partial(t.tool_call_step, conn, _birth("hand_over", call_id), 1.0))
        audit = written(
            lambda: audit_append(conn, [AuditRecord(event="probe", actor="store")], 2.0)
        )
        take = written(lambda: t.tool_call_step(conn, _step("take", "call-2"), 2.0))
    finally:
        conn.set_wal_hook(None)
    assert take == audit + 1
