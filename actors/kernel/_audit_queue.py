"""A process's audit rows on their way to the store: queued without blocking, written in
batches, and a peer's refusals kept within a bound per offender.

Theory of operation: `put` never blocks the code that audits (a handler, the bus's reader); a
row that finds the queue full is counted in `dropped` and logged, never waited for. `run`
drains the queue in batches of up to `AUDIT_BATCH` rows: to the store's
`kernel.audit.append`, retried a few times with backoff, or, in the store's own process, to
`audit_locally` (the store writes its own rows instead of sending them to itself). Refusals go
through `refusal`, which asks the `RefusalLedger` whether this one becomes a row, is counted,
or leaves a counter row at the end of its window (a peer that stopped sending, or was stopped,
writes no refusal that would carry it).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Final

import trio

from .audit import AuditAppendRequest, AuditRecord, RefusalLedger
from .errors import LineUpError

__all__ = ["AUDIT_BATCH", "AUDIT_BUFFER", "AUDIT_RETRY_DELAYS", "AuditQueue"]

log = logging.getLogger("lineup.bus")

AUDIT_BUFFER: Final = 1024  # audit records waiting for the store before new ones are dropped
AUDIT_BATCH: Final = 256
AUDIT_RETRY_DELAYS: Final = (0.0, 0.01, 0.05, 0.2, 1.0)


class AuditQueue:
    """The audit rows of the process whose bus is `me`. Start `run` in the bus's nursery.

    `to_store` sends one batch to the store (raising `LineUpError` when it is not taken);
    `audit_locally`, when set, writes a batch in this process instead.
    """

    def __init__(
        self,
        me: str,
        to_store: Callable[[AuditAppendRequest], Awaitable[object]],
        audit_locally: Callable[[list[AuditRecord]], Awaitable[None]] | None = None,
    ) -> None:
        self._me = me
        self._to_store = to_store
        self.audit_locally = audit_locally
        self.dropped = 0
        self._send, self._recv = trio.open_memory_channel[AuditRecord](AUDIT_BUFFER)
        self._refusals = RefusalLedger()
        self._nursery: trio.Nursery | None = None

    def put(self, record: AuditRecord) -> None:
        """Queue an audit row for the store. Never blocks; counts what it must drop."""
        if not record.at:
            record = record.model_copy(update={"at": time.time()})
        try:
            self._send.send_nowait(record)
        except trio.WouldBlock:
            self.dropped += 1
            log.error("bus.audit_dropped total=%d", self.dropped)

    def refusal(self, record: AuditRecord) -> bool:
        """Audit a refusal of `record.peer`'s (the offender) within the per-offender bound: the
        first few of a window as rows, the rest as one counter row at the window's end. Never
        blocks. Returns whether the offender keeps being refused (past the bound in one window:
        a MiniApp's bus then has it stopped)."""
        name = record.peer or ""
        verdict = self._refusals.note(name, record.code or "", record.message_type, _now())
        if verdict.left_over is not None:
            self.put(verdict.left_over.record(self._me, name))
        if verdict.write:
            self.put(record)
        elif verdict.first_suppressed and self._nursery is not None:
            self._nursery.start_soon(self._flush_refusals, name)
        return verdict.persistent

    async def _flush_refusals(self, name: str) -> None:
        """At the end of the window, the counter row for what it left without rows (a peer
        that stopped sending, or was stopped, writes no refusal that would carry it)."""
        await trio.sleep(self._refusals.window)
        left_over = self._refusals.take_suppressed(name)
        if left_over is not None:
            self.put(left_over.record(self._me, name))

    async def run(self) -> None:
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await self._drain()
        finally:
            self._nursery = None

    async def _drain(self) -> None:
        while True:
            batch = [await self._recv.receive()]
            while len(batch) < AUDIT_BATCH:
                try:
                    batch.append(self._recv.receive_nowait())
                except trio.WouldBlock:
                    break
            await self._write(batch)

    async def _write(self, batch: list[AuditRecord]) -> None:
        if self.audit_locally is not None:
            try:
                await self.audit_locally(batch)
            except Exception:  # the audit must never take the bus down with it
                self.dropped += len(batch)
                log.error("bus.audit_lost count=%d", len(batch))
            return
        for delay in AUDIT_RETRY_DELAYS:
            await trio.sleep(delay)
            try:
                await self._to_store(AuditAppendRequest(records=tuple(batch)))
                return
            except LineUpError:
                continue
        self.dropped += len(batch)
        log.error("bus.audit_lost count=%d pid=%d", len(batch), os.getpid())


def _now() -> float:
    """The trio clock, or the monotonic one outside a trio run (a handler tested alone)."""
    try:
        return trio.current_time()
    except RuntimeError:
        return time.monotonic()
