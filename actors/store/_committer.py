"""Group commit: many requests per transaction, each acknowledged only after its COMMIT.

Theory of operation
-------------------
Handlers never touch the connection. They `submit` an *operation* — a plain blocking function
`op(conn) -> result` — and await its result. Submissions queue in a bounded memory channel
(a full queue blocks the submitter: backpressure, never unbounded memory).

One committer task loops: it takes everything queued, up to `max_batch`, and hands the batch to
the database thread, which runs it as ONE transaction:

    BEGIN IMMEDIATE
      SAVEPOINT op; op1(conn); RELEASE op      -- op1 succeeded
      SAVEPOINT op; op2(conn) raises; ROLLBACK TO op; RELEASE op   -- only op2 is undone
      ...
    COMMIT

A batch of one op needs no savepoint (two statements of its ~ten, measured on a tool call's
step): the transaction is the op's, and an op that raises has it rolled back whole.

Only when COMMIT has returned are the results handed back: **persist, then acknowledge**. An op
that raises fails only its own request (its savepoint is rolled back). If COMMIT itself fails,
or the transaction breaks underneath (a savepoint can no longer be rolled back), the whole batch
is rolled back and every op in it fails with `store_unavailable`; the handlers are idempotent,
so the callers simply retry. A batch of reads only is run in a plain `BEGIN` and is not counted
as a commit.

While one batch runs the next one accumulates (in the queue, or unread in the channel), so the
number of transactions grows with the arrival *rate* divided by the batch size, not with the
number of requests: under load, one commit (one WAL append, one fsync with `synchronous=FULL`)
pays for up to `max_batch` requests.

Where a batch runs: a commit that fsyncs (`synchronous=FULL`, or no WAL) runs on the database
thread, through `trio.to_thread.run_sync` under a `CapacityLimiter(1)` owned by the committer,
so the event loop keeps serving frames while the disk works. A commit that only appends to the
WAL (`synchronous=NORMAL`, the default) costs tens of microseconds, less than handing it to a
thread and back (a wake-up each way, and the GIL shared with the loop for every SQLite call:
measured, ~1 ms a batch on a busy two-core machine), so it runs inline, in the committer task.
Inline, the one step that would touch the disk — the WAL checkpoint, which syncs — is taken off
the commit: SQLite's automatic checkpoint is replaced by a WAL hook that notes the WAL's size,
and the committer checkpoints on the database thread between batches once it has grown past
`CHECKPOINT_PAGES` (what SQLite's automatic one would do, only not on the loop). Durability
is the same either way: persist, then acknowledge.

A request that finds the committer idle (inline mode, nothing queued, no checkpoint due or on
the thread) need not wait for a batch: `run_now` runs it at once, as a batch of
its own, in the caller (the store's handler, inline in the bus's reader), and the reply goes out
with no task, no queue and no scheduler trip in between (three wake-ups a request fewer,
measured). It is the same transaction a batch of one would be, committed before it returns:
persist, then acknowledge. Requests that arrive together still group: the first finds the
committer idle, the next ones find what queued before them (`queue` queues in the handler's own
step) and queue behind it, to commit in the next batch.

Only the committer loop uses the connection, and never from two threads at once (SQLite
connections may move between threads as long as use is serialised). A thread call is never
abandoned on cancellation, and an inline batch cannot be interrupted: a running batch always
finishes (commits or rolls back) and its results are delivered before the committer stops.

This module knows nothing of actors or the bus; it is tested on its own.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

import trio

from lineup.actors.kernel.errors import ErrorCode, LineUpError

from ._db import Connection, as_lineup_error, rollback_quietly

__all__ = ["DEFAULT_MAX_BATCH", "DEFAULT_QUEUE_SIZE", "CommitStats", "Committer", "Operation"]

log = logging.getLogger("lineup.store.committer")

DEFAULT_MAX_BATCH: Final = 256  # ops per transaction; bounds how long one COMMIT holds results
DEFAULT_QUEUE_SIZE: Final = 1024  # ops waiting for a batch before submitters block
CHECKPOINT_PAGES: Final = 1000  # WAL pages before a checkpoint: SQLite's automatic default

T = TypeVar("T")
Operation = Callable[[Connection], T]  # op(conn) -> result; runs on the database thread


@dataclass(slots=True)
class CommitStats:
    commits: int = 0  # write transactions committed
    batches: int = 0  # batches run, reads included, failed ones included
    max_batch: int = 0
    writes: int = 0  # write ops acknowledged after a commit
    ops: int = 0  # every op run, reads and refused ones included: the store's requests
    failed_batches: int = 0
    checkpoints: int = 0  # WAL checkpoints the committer ran (inline mode only)


class _Job(Generic[T]):
    __slots__ = ("abandoned", "done", "error", "op", "result", "write")

    def __init__(self, op: Operation[T], write: bool) -> None:
        self.op = op
        self.write = write
        self.done = trio.Event()
        self.result: T | None = None
        self.error: LineUpError | None = None
        self.abandoned = False  # the submitter stopped waiting before the batch started


class _BatchBroken(Exception):
    """The transaction can no longer be trusted; the whole batch must roll back."""


class Committer:
    """Runs submitted operations in group-committed transactions on one database thread.

    Create it, `submit` from any task (submissions made before `run` starts simply queue),
    and run it with `await nursery.start(committer.run, conn)`.
    """

    def __init__(
        self,
        *,
        max_batch: int = DEFAULT_MAX_BATCH,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        on_thread: bool | None = None,
        checkpoint_pages: int = CHECKPOINT_PAGES,
    ) -> None:
        """`on_thread`: run every batch on the database thread (True) or inline (False);
        None decides in `run` from the connection: on the thread only if a commit fsyncs."""
        if max_batch < 1 or queue_size < 1 or checkpoint_pages < 1:
            raise ValueError("max_batch, queue_size and checkpoint_pages must be positive")
        self.max_batch = max_batch
        self.stats = CommitStats()
        self.on_thread = on_thread
        self.checkpoint_pages = checkpoint_pages
        self._send, self._recv = trio.open_memory_channel[_Job[Any]](queue_size)
        self._limiter = trio.CapacityLimiter(1)
        self._closed = False
        self._wal_pages = 0  # the WAL's size after the last commit (inline mode)
        self._conn: Connection | None = None  # while `run` runs inline: `run_now` may use it
        self._queued = 0  # jobs in the queue, not yet taken into a batch: `run_now` waits
        self._checkpointing = False  # the database thread has the connection

    @property
    def queued(self) -> int:
        """Operations waiting for a batch."""
        return self._send.statistics().current_buffer_used

    @property
    def blocked_submitters(self) -> int:
        """Submitters waiting for room in the full queue (backpressure in action)."""
        return self._send.statistics().tasks_waiting_send

    async def submit(self, op: Operation[T], *, write: bool = True) -> T:
        """Run `op(conn)` in the next batch; return its result once the batch has committed.

        Raises what `op` raised as a `LineUpError` (apsw errors become `store_unavailable`),
        `store_unavailable` if the batch's transaction failed, and `shutting_down` once the
        committer has stopped. Blocks while the queue is full. If the caller is cancelled, the
        op may still be applied later — which is why every write op must be idempotent.
        """
        if self._closed:
            raise LineUpError(ErrorCode.SHUTTING_DOWN, "store committer stopped")
        job: _Job[T] = _Job(op, write)
        try:
            try:
                # Room in the queue: no trip through the scheduler (`send` always takes one);
                # the wait for the result below is this call's checkpoint.
                self._send.send_nowait(job)
            except trio.WouldBlock:
                await self._send.send(job)  # full: wait for room (backpressure)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise LineUpError(ErrorCode.SHUTTING_DOWN, "store committer stopped") from exc
        self._queued += 1
        return await self._result(job)

    def queue(self, op: Operation[T], *, write: bool = True) -> Awaitable[T]:
        """`submit`, with the op queued now, in the caller's step, rather than once the returned
        awaitable first runs: a request handled next (`run_now`) then finds it queued and
        queues behind it, so that requests arriving together still commit together."""
        if self._closed:
            return self.submit(op, write=write)  # raises shutting_down
        job: _Job[T] = _Job(op, write)
        try:
            self._send.send_nowait(job)
        except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
            return self.submit(op, write=write)  # waits for room, or raises shutting_down
        self._queued += 1
        return self._result(job)

    async def _result(self, job: _Job[T]) -> T:
        try:
            await job.done.wait()
        finally:
            if not job.done.is_set():
                job.abandoned = True
        if job.error is not None:
            raise job.error
        return job.result  # type: ignore[return-value]  # set whenever error is None

    def run_now(self, op: Operation[T], *, write: bool = True) -> tuple[bool, T | None]:
        """Run `op(conn)` now, as a transaction of its own, if the committer is idle (inline
        mode, nothing queued, no checkpoint due or under way):
        `(True, result)` once it has committed. `(False, None)` if not, and nothing ran:
        `submit` it then. Raises what `submit` would (the op's error, `store_unavailable`)."""
        conn = self._conn
        if conn is None or self._queued or self._checkpointing or self._closed:
            return False, None
        if self._wal_pages >= self.checkpoint_pages:
            return False, None  # through the committer, which checkpoints after its batch
        job: _Job[T] = _Job(op, write)
        batch: list[_Job[Any]] = [job]
        self._count(batch, self._run_batch(conn, batch))
        if job.error is not None:
            raise job.error
        return True, job.result

    async def run(
        self, conn: Connection, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Commit batches until cancelled; then fail whatever is still queued."""
        if self.on_thread is None:
            self.on_thread = commits_fsync(conn)
        inline = not self.on_thread
        if inline:
            conn.set_wal_hook(self._wal_grew)  # replaces SQLite's automatic checkpoint
            self._conn = conn
        task_status.started()
        try:
            while True:
                batch = await self._next_batch()
                if not batch:
                    continue
                if inline:
                    committed = self._run_batch(conn, batch)
                else:
                    try:
                        # Not abandoned on cancel: once the thread has started, a cancellation
                        # waits for the batch to finish and the call returns normally, so its
                        # results are always delivered below.
                        committed = await trio.to_thread.run_sync(
                            self._run_batch, conn, batch, limiter=self._limiter
                        )
                    except BaseException:
                        # Cancelled before the thread started: nothing of the batch ran.
                        self._fail(batch)
                        raise
                self._count(batch, committed)
                for job in batch:
                    job.done.set()
                if inline and self._wal_pages >= self.checkpoint_pages:
                    await self._checkpoint(conn)
        finally:
            self._conn = None
            self._stop()
            if inline:
                _restore_autocheckpoint(conn)

    def _wal_grew(self, _conn: Connection, _db: str, pages: int) -> int:
        self._wal_pages = pages
        return 0  # SQLITE_OK

    async def _checkpoint(self, conn: Connection) -> None:
        """Checkpoint the WAL on the database thread (it syncs). Never raises: a checkpoint
        that fails, or finds the WAL in use by a reader, is simply tried again later."""
        self._wal_pages = 0
        self.stats.checkpoints += 1
        self._checkpointing = True
        try:
            await trio.to_thread.run_sync(_checkpoint_quietly, conn, limiter=self._limiter)
        finally:
            self._checkpointing = False

    async def _next_batch(self) -> list[_Job[Any]]:
        batch = [await self._recv.receive()]
        while len(batch) < self.max_batch:
            try:
                batch.append(self._recv.receive_nowait())
            except trio.WouldBlock:
                break
        # Taken: an inline batch runs to its end before any other task (a `run_now`) can run.
        self._queued -= len(batch)
        # Nobody waits for these any more; skipping them sheds load under overload.
        return [job for job in batch if not job.abandoned]

    def _count(self, batch: list[_Job[Any]], committed: bool) -> None:
        stats = self.stats
        stats.batches += 1
        stats.max_batch = max(stats.max_batch, len(batch))
        stats.ops += len(batch)
        writes = [job for job in batch if job.write]
        if not committed:
            stats.failed_batches += 1
        elif writes:
            stats.commits += 1
            stats.writes += sum(1 for job in writes if job.error is None)

    def _stop(self) -> None:
        self._closed = True
        while True:
            try:
                self._fail([self._recv.receive_nowait()])
            except (trio.WouldBlock, trio.EndOfChannel):
                break
        # Submitters blocked on a full queue now get BrokenResourceError -> shutting_down.
        self._recv.close()

    @staticmethod
    def _fail(jobs: list[_Job[Any]]) -> None:
        for job in jobs:
            job.error = LineUpError(ErrorCode.SHUTTING_DOWN, "store committer stopped")
            job.done.set()

    # ------------------------------------------------------------------ on the database thread

    def _run_batch(self, conn: Connection, batch: list[_Job[Any]]) -> bool:
        """Run one transaction. Returns whether it committed. Never raises."""
        try:
            conn.execute("BEGIN IMMEDIATE" if any(job.write for job in batch) else "BEGIN")
            if len(batch) == 1:
                # One op (most batches, and every `run_now`): its transaction is its savepoint.
                # If it raises, rolling all of it back undoes exactly its own writes.
                job = batch[0]
                try:
                    job.result = job.op(conn)
                except Exception as exc:
                    job.error = as_lineup_error(exc)
                    conn.execute("ROLLBACK")
                    return True  # nothing to commit: the op's refusal is its answer
            else:
                for job in batch:
                    self._run_one(conn, job)
            conn.execute("COMMIT")
        except Exception as exc:
            rollback_quietly(conn)
            log.warning("store.batch_failed size=%d error=%s", len(batch), type(exc).__name__)
            for job in batch:
                job.result = None
                job.error = _unavailable(exc)
            return False
        return True

    @staticmethod
    def _run_one(conn: Connection, job: _Job[Any]) -> None:
        conn.execute("SAVEPOINT op")
        try:
            job.result = job.op(conn)
        except Exception as exc:
            job.error = as_lineup_error(exc)
            try:
                conn.execute("ROLLBACK TO op")
            except Exception as broken:
                # SQLite may have rolled the whole transaction back (disk full, I/O error).
                raise _BatchBroken from broken
        conn.execute("RELEASE op")


def commits_fsync(conn: Connection) -> bool:
    """Whether a COMMIT on `conn` waits for the disk: anything but WAL with synchronous at
    NORMAL or below. Blocking (two pragmas), but fast."""
    mode = conn.execute("PRAGMA journal_mode").fetchall()[0][0]
    level = conn.execute("PRAGMA synchronous").fetchall()[0][0]
    return str(mode).lower() != "wal" or not isinstance(level, int) or level > 1


def _restore_autocheckpoint(conn: Connection) -> None:
    try:
        conn.set_wal_hook(None)
        conn.wal_autocheckpoint(CHECKPOINT_PAGES)
    except Exception as exc:  # a connection already closed needs neither
        log.warning("store.autocheckpoint_not_restored error=%s", type(exc).__name__)


def _checkpoint_quietly(conn: Connection) -> None:
    try:
        conn.wal_checkpoint()  # PASSIVE: never waits for, nor blocks, another connection
    except Exception as exc:
        log.warning("store.checkpoint_failed error=%s", type(exc).__name__)


def _unavailable(cause: BaseException) -> LineUpError:
    # One fresh exception per job: an exception object must not be raised in two tasks.
    err = LineUpError(ErrorCode.STORE_UNAVAILABLE, "transaction rolled back")
    err.__cause__ = cause
    return err
