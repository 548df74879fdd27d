"""Group commit on its own: no actor, no bus (`actors/store/_committer.py`).

Most tests hold the database thread inside a *gate* operation, queue more operations behind it,
then open the gate: what was queued while the gate ran must form the next batch. Waiting for
the queue is `wait_all_tasks_blocked`, never a sleep. A gate needs the thread, so those tests
ask for it (`on_thread=True`); the inline mode (WAL, `synchronous=NORMAL`: the default) has its
own tests at the end, which queue operations before the committer starts instead.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path

import apsw
import pytest
import trio
import trio.testing

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store._committer import Committer
from lineup.actors.store._db import Database, open_database

WAIT = 5.0  # seconds any single wait in these tests may take before it counts as a hang


@pytest.fixture
async def committer(db: Database, nursery: trio.Nursery) -> Committer:
    committer = Committer(on_thread=True)
    await nursery.start(committer.run, db.conn)
    return committer


class Gate:
    """An operation that holds the database thread until the test opens it."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()

    def __call__(self, conn: apsw.Connection) -> str:
        self.entered.set()
        if not self.opened.wait(WAIT):
            raise TimeoutError("gate never opened")
        return "gate"

    async def hold(self, committer: Committer, nursery: trio.Nursery) -> None:
        """Submit the gate and return once the database thread is inside it."""
        nursery.start_soon(committer.submit, self)
        await trio.to_thread.run_sync(self.entered.wait, WAIT)
        assert self.entered.is_set()


def set_cursor(name: str) -> Callable[[apsw.Connection], str]:
    def op(conn: apsw.Connection) -> str:
        conn.execute("INSERT INTO cursors VALUES (?, 'v', 0)", (name,))
        return name

    return op


def cursor_names(path: Path) -> set[str]:
    """What an independent connection sees: only committed data."""
    other = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {str(name) for (name,) in other.execute("SELECT name FROM cursors").fetchall()}
    finally:
        other.close()


class Refused(LineUpError):
    pass


# A deferred foreign key is only checked by COMMIT: the one way to make COMMIT itself fail.
DEFERRED_FOREIGN_KEY = (
    "CREATE TABLE parent (id INTEGER PRIMARY KEY);"
    "CREATE TABLE child (parent_id INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)"
)


def orphan(conn: apsw.Connection) -> str:
    """Runs, but fails the COMMIT of its batch (under DEFERRED_FOREIGN_KEY)."""
    conn.execute("INSERT INTO child VALUES (42)")
    return "orphan"


def refused_after_writing(conn: apsw.Connection) -> str:
    conn.execute("INSERT INTO cursors VALUES ('refused', 'v', 0)")
    raise Refused(ErrorCode.INVALID_ARGUMENTS, "no")


async def record(
    outcomes: dict[str, object],
    committer: Committer,
    name: str,
    op: Callable[[apsw.Connection], str],
) -> None:
    """Submit `op`; keep what it answered under `name`: its result, or its error's code."""
    try:
        outcomes[name] = await committer.submit(op)
    except LineUpError as exc:
        outcomes[name] = exc.code


async def test_an_operation_returns_its_result_once_committed(
    committer: Committer, db: Database
) -> None:
    with trio.fail_after(WAIT):
        assert await committer.submit(set_cursor("a")) == "a"
    assert cursor_names(db.path) == {"a"}
    assert committer.stats.commits == 1


async def test_operations_queued_during_a_batch_share_the_next_transaction(
    committer: Committer, db: Database
) -> None:
    gate = Gate()
    results: list[str] = []

    async def append(name: str) -> None:
        results.append(await committer.submit(set_cursor(name)))

    with trio.fail_after(WAIT):
        async with trio.open_nursery() as nursery:
            await gate.hold(committer, nursery)
            for i in range(50):
                nursery.start_soon(append, f"c{i}")
            await trio.testing.wait_all_tasks_blocked()
            assert committer.queued == 50
            gate.opened.set()

    assert sorted(results) == sorted(f"c{i}" for i in range(50))
    assert committer.stats.commits == 2  # the gate's batch, then everything else
    assert committer.stats.max_batch == 50
    assert committer.stats.writes == 51
    assert len(cursor_names(db.path)) == 50


async def test_a_failing_operation_fails_only_its_own_request(
    committer: Committer, db: Database
) -> None:
    gate = Gate()
    outcomes: dict[str, object] = {}

    def broken_sql(conn: apsw.Connection) -> str:
        conn.execute("INSERT INTO cursors VALUES ('broken', 'v', 0)")
        conn.execute("INSERT INTO cursors VALUES ('broken', 'again', 0)")  # primary key clash
        return "unreachable"

    run = partial(record, outcomes, committer)

    with trio.fail_after(WAIT):
        async with trio.open_nursery() as nursery:
            await gate.hold(committer, nursery)
            nursery.start_soon(run, "a", set_cursor("a"))
            nursery.start_soon(run, "refused", refused_after_writing)
            nursery.start_soon(run, "broken", broken_sql)
            nursery.start_soon(run, "b", set_cursor("b"))
            await trio.testing.wait_all_tasks_blocked()
            gate.opened.set()

    assert outcomes == {
        "a": "a",
        "b": "b",
        "refused": ErrorCode.INVALID_ARGUMENTS,
        "broken": ErrorCode.STORE_UNAVAILABLE,
    }
    assert cursor_names(db.path) == {"a", "b"}  # the failed ops' partial writes are undone
    assert committer.stats.commits == 2
    assert committer.stats.writes == 3  # the gate, a and b


async def test_a_failed_commit_fails_every_operation_of_its_batch_and_keeps_none_of_them(
    committer: Committer, db: Database
) -> None:
    db.conn.execute(DEFERRED_FOREIGN_KEY)
    gate = Gate()
    codes: list[ErrorCode] = []

    async def run(op: Callable[[apsw.Connection], str]) -> None:
        with pytest.raises(LineUpError) as caught:
            await committer.submit(op)
        codes.append(caught.value.code)

    with trio.fail_after(WAIT):
        async with trio.open_nursery() as nursery:
            await gate.hold(committer, nursery)
            nursery.start_soon(run, set_cursor("a"))
            nursery.start_soon(run, orphan)
            nursery.start_soon(run, set_cursor("b"))
            await trio.testing.wait_all_tasks_blocked()
            gate.opened.set()
        # The committer carries on with the next batch.
        assert await committer.submit(set_cursor("c")) == "c"

    assert codes == [ErrorCode.STORE_UNAVAILABLE] * 3
    assert cursor_names(db.path) == {"c"}
    assert committer.stats.failed_batches == 1


async def test_a_batch_never_holds_more_than_max_batch_operations(
    db: Database, nursery: trio.Nursery
) -> None:
    committer = Committer(max_batch=4, on_thread=True)
    await nursery.start(committer.run, db.conn)
    gate = Gate()

    with trio.fail_after(WAIT):
        async with trio.open_nursery() as inner:
            await gate.hold(committer, inner)
            for i in range(10):
                inner.start_soon(committer.submit, set_cursor(f"c{i}"))
            await trio.testing.wait_all_tasks_blocked()
            gate.opened.set()

    assert committer.stats.max_batch == 4
    assert committer.stats.commits == 1 + 3  # the gate, then 4 + 4 + 2
    assert len(cursor_names(db.path)) == 10


async def test_a_batch_of_reads_only_is_not_counted_as_a_commit(committer: Committer) -> None:
    def count(conn: apsw.Connection) -> object:
        return conn.execute("SELECT count(*) FROM cursors").fetchall()[0][0]

    with trio.fail_after(WAIT):
        assert await committer.submit(count, write=False) == 0
    assert committer.stats.batches == 1
    assert committer.stats.commits == 0


async def test_a_full_queue_makes_submitters_wait_for_room(
    db: Database, nursery: trio.Nursery
) -> None:
    committer = Committer(max_batch=1, queue_size=2, on_thread=True)
    await nursery.start(committer.run, db.conn)
    gate = Gate()

    with trio.fail_after(WAIT):
        async with trio.open_nursery() as inner:
            await gate.hold(committer, inner)
            for i in range(3):
                inner.start_soon(committer.submit, set_cursor(f"c{i}"))
            await trio.testing.wait_all_tasks_blocked()
            assert (committer.queued, committer.blocked_submitters) == (2, 1)
            gate.opened.set()

    assert len(cursor_names(db.path)) == 3


async def test_an_operation_whose_caller_gave_up_before_its_batch_is_never_run(
    committer: Committer, db: Database
) -> None:
    gate = Gate()
    abandoned = trio.CancelScope()

    async def give_up() -> None:
        with abandoned:
            await committer.submit(set_cursor("abandoned"))

    with trio.fail_after(WAIT):
        async with trio.open_nursery() as nursery:
            await gate.hold(committer, nursery)
            nursery.start_soon(committer.submit, set_cursor("kept"))
            nursery.start_soon(give_up)
            await trio.testing.wait_all_tasks_blocked()
            abandoned.cancel()
            await trio.testing.wait_all_tasks_blocked()
            gate.opened.set()

    assert cursor_names(db.path) == {"kept"}


async def test_a_running_batch_finishes_and_answers_when_the_committer_is_cancelled(
    db: Database,
) -> None:
    committer = Committer(on_thread=True)
    gate = Gate()
    stop = trio.CancelScope()
    results: list[str] = []

    async def run_committer(*, task_status: trio.TaskStatus[None]) -> None:
        with stop:
            await committer.run(db.conn, task_status=task_status)

    async def submit_gate() -> None:
        results.append(await committer.submit(gate))

    with trio.fail_after(WAIT):
        async with trio.open_nursery() as nursery:
            await nursery.start(run_committer)
            nursery.start_soon(submit_gate)
            await trio.to_thread.run_sync(gate.entered.wait, WAIT)
            stop.cancel()  # while the batch is on the database thread
            gate.opened.set()

    assert results == ["gate"]
    assert committer.stats.commits == 1


async def test_a_batch_taken_but_not_started_when_the_committer_stops_fails_with_shutting_down(
    db: Database,
) -> None:
    committer = Committer(on_thread=True)
    stop = trio.CancelScope()
    codes: list[ErrorCode] = []

    async def run_committer(*, task_status: trio.TaskStatus[None]) -> None:
        with stop:
            await committer.run(db.conn, task_status=task_status)

    async def submit() -> None:
        with pytest.raises(LineUpError) as caught:
            await committer.submit(set_cursor("never"))
        codes.append(caught.value.code)

    with trio.fail_after(WAIT):
        async with trio.open_nursery() as nursery:
            await nursery.start(run_committer)
            # Hold the database thread's limiter (a private seam) so the committer blocks
            # after taking the batch and before its thread starts.
            async with committer._limiter:
                nursery.start_soon(submit)
                await trio.testing.wait_all_tasks_blocked()
                assert committer.queued == 0  # taken off the queue
                stop.cancel()
                await trio.testing.wait_all_tasks_blocked()

    assert codes == [ErrorCode.SHUTTING_DOWN]
    assert cursor_names(db.path) == set()


async def test_operations_still_queued_when_the_committer_stops_fail_with_shutting_down(
    db: Database,
) -> None:
    committer = Committer()
    codes: list[ErrorCode] = []

    async def submit(name: str) -> None:
        with pytest.raises(LineUpError) as caught:
            await committer.submit(set_cursor(name))
        codes.append(caught.value.code)

    with trio.fail_after(WAIT):
        async with trio.open_nursery() as nursery:
            for i in range(3):
                nursery.start_soon(submit, f"c{i}")
            await trio.testing.wait_all_tasks_blocked()
            with trio.CancelScope() as scope:
                scope.cancel()  # stop before taking a single batch
                await committer.run(db.conn)

        with pytest.raises(LineUpError) as late:
            await committer.submit(set_cursor("late"))

    assert codes == [ErrorCode.SHUTTING_DOWN] * 3
    assert late.value.code is ErrorCode.SHUTTING_DOWN
    assert cursor_names(db.path) == set()


# ------------------------------------------------------------------------------ inline mode


def wal_frames(path: Path) -> int:
    """Frames in the WAL file as another connection would find them (0 once checkpointed and
    reset, or absent)."""
    wal = path.with_name(path.name + "-wal")
    size = wal.stat().st_size if wal.exists() else 0
    return max(0, (size - 32) // (4096 + 24))


@pytest.mark.parametrize(
    ("config", "on_thread"), [({}, False), ({"sqlite_synchronous": "full"}, True)]
)
async def test_a_batch_runs_on_the_thread_only_where_its_commit_waits_for_the_disk(
    tmp_path: Path, nursery: trio.Nursery, config: dict[str, str], on_thread: bool
) -> None:
    database = open_database(tmp_path, config)
    try:
        committer = Committer()
        scope = trio.CancelScope()

        async def run(*, task_status: trio.TaskStatus[None]) -> None:
            with scope:
                await committer.run(database.conn, task_status=task_status)

        await nursery.start(run)
        assert committer.on_thread is on_thread
        ran_on: list[int] = []

        def op(conn: apsw.Connection) -> str:
            ran_on.append(threading.get_ident())
            return set_cursor("a")(conn)

        with trio.fail_after(WAIT):
            assert await committer.submit(op) == "a"
        assert (ran_on[0] != threading.get_ident()) is on_thread
        assert cursor_names(database.path) == {"a"}
        scope.cancel()
        await trio.testing.wait_all_tasks_blocked()
    finally:
        database.close()


async def test_inline_what_queued_while_the_committer_was_busy_shares_one_transaction(
    db: Database, nursery: trio.Nursery
) -> None:
    committer = Committer()
    results: list[str] = []

    async def append(name: str) -> None:
        results.append(await committer.submit(set_cursor(name)))

    with trio.fail_after(WAIT):
        async with trio.open_nursery() as inner:
            for i in range(50):
                inner.start_soon(append, f"c{i}")
            await trio.testing.wait_all_tasks_blocked()
            assert committer.queued == 50
            await nursery.start(committer.run, db.conn)

    assert committer.on_thread is False
    assert sorted(results) == sorted(f"c{i}" for i in range(50))
    assert (committer.stats.commits, committer.stats.max_batch) == (1, 50)
    assert len(cursor_names(db.path)) == 50


async def test_inline_a_failing_operation_or_commit_fails_what_it_must_and_nothing_more(
    db: Database, nursery: trio.Nursery
) -> None:
    db.conn.execute(DEFERRED_FOREIGN_KEY)
    committer = Committer()
    outcomes: dict[str, object] = {}

    run = partial(record, outcomes, committer)

    with trio.fail_after(WAIT):
        async with trio.open_nursery() as inner:
            inner.start_soon(run, "a", set_cursor("a"))
            inner.start_soon(run, "refused", refused_after_writing)
            await trio.testing.wait_all_tasks_blocked()
            await nursery.start(committer.run, db.conn)
        assert outcomes == {"a": "a", "refused": ErrorCode.INVALID_ARGUMENTS}
        async with trio.open_nursery() as inner:
            inner.start_soon(run, "b", set_cursor("b"))
            inner.start_soon(run, "orphan", orphan)
        assert await committer.submit(set_cursor("c")) == "c"

    assert outcomes["b"] is outcomes["orphan"] is ErrorCode.STORE_UNAVAILABLE
    assert cursor_names(db.path) == {"a", "c"}
    assert committer.stats.failed_batches >= 1


async def test_inline_the_wal_is_checkpointed_by_the_committer_once_it_grows_past_its_limit(
    db: Database, nursery: trio.Nursery
) -> None:
    committer = Committer(checkpoint_pages=8)
    await nursery.start(committer.run, db.conn)
    blob = "x" * 3000  # about a page a row

    def big(i: int) -> Callable[[apsw.Connection], None]:
        def op(conn: apsw.Connection) -> None:
            conn.execute("INSERT INTO cursors VALUES (?, ?, 0)", (f"r{i}", blob))

        return op

    before = wal_frames(db.path)  # the migrations' frames
    with trio.fail_after(WAIT):
        for i in range(40):
            await committer.submit(big(i))
    assert committer.stats.checkpoints >= 2
    # SQLite's automatic checkpoint is off (the hook replaced it): only the committer's let
    # the WAL start over, instead of growing by a frame or more for every row.
    assert wal_frames(db.path) - before < 40
    assert len(cursor_names(db.path)) == 40


# ---------------------------------------------------------------------- at once, when idle


async def test_run_now_on_an_idle_committer_commits_before_it_returns(
    db: Database, nursery: trio.Nursery
) -> None:
    committer = Committer()
    await nursery.start(committer.run, db.conn)
    assert committer.run_now(set_cursor("a")) == (True, "a")
    assert cursor_names(db.path) == {"a"}  # persisted, then answered
    assert (committer.stats.commits, committer.stats.ops) == (1, 1)


async def test_run_now_refuses_while_something_is_queued_which_then_runs_first(
    db: Database, nursery: trio.Nursery
) -> None:
    committer = Committer()
    await nursery.start(committer.run, db.conn)
    waiting = committer.queue(set_cursor("first"))  # queued now, in this step
    assert committer.run_now(set_cursor("second")) == (False, None)  # nothing ran
    with trio.fail_after(WAIT):
        assert await waiting == "first"
    assert cursor_names(db.path) == {"first"}
    assert committer.run_now(set_cursor("second")) == (True, "second")


async def test_run_now_of_a_failing_operation_raises_its_code_and_keeps_none_of_its_writes(
    db: Database, nursery: trio.Nursery
) -> None:
    committer = Committer()
    await nursery.start(committer.run, db.conn)
    with pytest.raises(Refused) as refused:
        committer.run_now(refused_after_writing)
    assert refused.value.code is ErrorCode.INVALID_ARGUMENTS
    assert cursor_names(db.path) == set()


async def test_run_now_never_runs_where_commits_go_to_the_thread_or_before_the_committer(
    committer: Committer, db: Database
) -> None:
    assert committer.run_now(set_cursor("a")) == (False, None)  # on the thread (fixture)
    assert Committer().run_now(set_cursor("b")) == (False, None)  # not running yet
    assert cursor_names(db.path) == set()


async def test_run_now_leaves_a_due_checkpoint_to_the_committer(
    db: Database, nursery: trio.Nursery
) -> None:
    committer = Committer(checkpoint_pages=2)
    await nursery.start(committer.run, db.conn)
    blob = "x" * 3000

    def big(conn: apsw.Connection) -> str:
        conn.execute("INSERT INTO cursors VALUES (?, ?, 0)", (f"r{len(blob)}", blob * 3))
        return "big"

    assert committer.run_now(big) == (True, "big")  # the WAL is past its limit now
    assert committer.run_now(set_cursor("a")) == (False, None)
    with trio.fail_after(WAIT):
        assert await committer.submit(set_cursor("a")) == "a"  # its batch, then the checkpoint
        assert await committer.submit(lambda conn: "read", write=False) == "read"  # after it
    assert committer.stats.checkpoints == 1
    assert committer.run_now(set_cursor("b")) == (True, "b")


async def test_a_lone_operation_needs_no_savepoint_and_a_refused_one_leaves_nothing(
    db: Database, nursery: trio.Nursery
) -> None:
    committer = Committer()
    await nursery.start(committer.run, db.conn)
    statements: list[str] = []

    def trace(_cursor: apsw.Cursor, sql: str, _bindings: object) -> bool:
        statements.append(sql.split(maxsplit=1)[0].upper())
        return True

    db.conn.exec_trace = trace
    try:
        assert committer.run_now(set_cursor("a")) == (True, "a")
        with pytest.raises(Refused):
            committer.run_now(refused_after_writing)
        assert committer.run_now(set_cursor("b")) == (True, "b")  # not left in a transaction
    finally:
        db.conn.exec_trace = None
    assert "SAVEPOINT" not in statements
    assert statements.count("ROLLBACK") == 1
    assert cursor_names(db.path) == {"a", "b"}
