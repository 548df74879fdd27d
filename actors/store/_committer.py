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

Only when COMMIT has returned are the results handed back: **persist, then acknowledge**. An op
that raises fails only its own request (its savepoint is rolled back). If COMMIT itself fails,
or the transaction breaks underneath (a savepoint can no longer be rolled back), the whole batch
is rolled back and every op in it fails with `store_unavailable`; the handlers are idempotent,
so the callers simply retry. A batch of reads only is run in a plain `BEGIN` and is not counted
as a commit.

While one batch is on the thread the next one accumulates in the queue, so the number of
transactions grows with the arrival *rate* divided by the batch size, not with the number of
requests: under load, one commit (one WAL append, one fsync with `synchronous=FULL`) pays for
up to `max_batch` requests.

Threading: all database work runs through `trio.to_thread.run_sync` under a `CapacityLimiter(1)`
owned by the committer, and only the committer loop submits work, so at most one thread uses the
connection at any time (SQLite connections may move between threads as long as use is
serialised). apsw releases the GIL while SQLite works, so the event loop keeps serving frames.
A thread call is never abandoned on cancellation: a running batch always finishes (commits or
rolls back) and its results are delivered before the committer stops.

This module knows nothing of actors or the bus; it is tested on its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

import trio

from lineup.actors.kernel.errors import ErrorCode, LineUpError

from ._db import Connection, as_lineup_error, rollback_quietly

__all__ = ["DEFAULT_MAX_BATCH", "DEFAULT_QUEUE_SIZE", "CommitStats", "Committer", "Operation"]

log = logging.getLogger("lineup.store.committer")

DEFAULT_MAX_BATCH: Final = 256  # ops per transaction; bounds how long one COMMIT holds results
DEFAULT_QUEUE_SIZE: Final = 1024  # ops waiting for a batch before submitters block

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
        self, *, max_batch: int = DEFAULT_MAX_BATCH, queue_size: int = DEFAULT_QUEUE_SIZE
    ) -> None:
        if max_batch < 1 or queue_size < 1:
            raise ValueError("max_batch and queue_size must be positive")
        self.max_batch = max_batch
        self.stats = CommitStats()
        self._send, self._recv = trio.open_memory_channel[_Job[Any]](queue_size)
        self._limiter = trio.CapacityLimiter(1)
        self._closed = False

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
            await self._send.send(job)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise LineUpError(ErrorCode.SHUTTING_DOWN, "store committer stopped") from exc
        try:
            await job.done.wait()
        finally:
            if not job.done.is_set():
                job.abandoned = True
        if job.error is not None:
            raise job.error
        return job.result  # type: ignore[return-value]  # set whenever error is None

    async def run(
        self, conn: Connection, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Commit batches until cancelled; then fail whatever is still queued."""
        task_status.started()
        try:
            while True:
                batch = await self._next_batch()
                if not batch:
                    continue
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
        finally:
            self._stop()

    async def _next_batch(self) -> list[_Job[Any]]:
        batch = [await self._recv.receive()]
        while len(batch) < self.max_batch:
            try:
                batch.append(self._recv.receive_nowait())
            except trio.WouldBlock:
                break
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


def _unavailable(cause: BaseException) -> LineUpError:
    # One fresh exception per job: an exception object must not be raised in two tasks.
    err = LineUpError(ErrorCode.STORE_UNAVAILABLE, "transaction rolled back")
    err.__cause__ = cause
    return err
