"""The supervisor's side of the seccomp filter: answer each denied call, audit it, within bounds.

Theory of operation
-------------------
A sandboxed MiniApp's filter notifies instead of failing a denied call in the kernel (see
`_seccomp`); the supervisor holds the listener. For each notification it answers with the same
errno the kernel would have given (the app cannot tell the difference) and, within limits,
writes an audit row naming the app and the system call, never its arguments.

Two bounds keep a hostile app that calls a denied syscall in a loop from flooding the audit
table or starving the supervisor:

- `DenialLedger` (no I/O): the first denial of each system call per app per window becomes a
  row, and at most `MAX_ROWS_PER_WINDOW` rows per window; the rest are only counted (logged).
- `DenialPacer` (no I/O): a token bucket on the answers. Past its rate, the answer waits, and the
  app's calling thread with it (it is blocked in the denied call): the flood slows the app, not
  the supervisor, which spends a bounded time per second on it.

The allowed calls never come here: they are decided in the kernel.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import trio

from lineup.actors.kernel import AuditRecord

from . import _seccomp

__all__ = ["DENIED", "DenialLedger", "DenialPacer", "answer_denials"]

log = logging.getLogger("lineup.sandbox")

DENIED: Final = "sandbox.denied"  # the audit event; its code names the system call
AUDIT_WINDOW: Final = 1.0  # seconds: one row per system call per app per window
MAX_ROWS_PER_WINDOW: Final = 16  # per app, whatever mix of calls it tries
ANSWER_RATE: Final = 500.0  # answers per second per app, once the burst is spent
ANSWER_BURST: Final = 100.0


@dataclass
class DenialLedger:
    """Which denials become audit rows (see the module's docstring)."""

    window: float = AUDIT_WINDOW
    max_rows: int = MAX_ROWS_PER_WINDOW
    _started: float = -float("inf")
    _seen: set[str] = field(default_factory=set)
    suppressed: int = 0  # denials in the current window that got no row

    def note(self, syscall: str, now: float) -> tuple[bool, int]:
        """Record one denial. Returns (write a row for it?, denials the previous window left
        without a row, reported once when a new window opens)."""
        left_over = 0
        if now - self._started >= self.window:
            left_over, self.suppressed = self.suppressed, 0
            self._started = now
            self._seen.clear()
        if syscall in self._seen or len(self._seen) >= self.max_rows:
            self.suppressed += 1
            return False, left_over
        self._seen.add(syscall)
        return True, left_over


@dataclass
class DenialPacer:
    """A token bucket: how long to hold the next answer back (0.0: answer now)."""

    rate: float = ANSWER_RATE
    burst: float = ANSWER_BURST
    _tokens: float = ANSWER_BURST
    _at: float = -float("inf")

    def __post_init__(self) -> None:
        self._tokens = self.burst

    def delay(self, now: float) -> float:
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        wait = (1.0 - self._tokens) / self.rate
        self._tokens -= 1.0  # spent in advance: the next caller waits behind this one
        return wait


async def answer_denials(
    listener: int, app: str, audit: Callable[[AuditRecord], None], *, clock: Callable[[], float]
) -> None:
    """Answer the denied calls of one sandboxed process until it exits; owns and closes
    `listener`. Cancelling it is safe: unanswered calls then fail with ENOSYS when it closes."""
    ledger = DenialLedger()
    pacer = DenialPacer()
    poller = select.poll()
    poller.register(listener, select.POLLIN)
    try:
        while True:
            await trio.lowlevel.wait_readable(listener)
            events = dict(poller.poll(0)).get(listener, 0)
            if not events & select.POLLIN:
                if events & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                    return  # every task of the filter has exited
                continue
            notification = _seccomp.read_notification(listener)  # pending: does not block
            if notification is None:
                continue  # the caller was interrupted or killed meanwhile
            notification_id, _pid, nr = notification
            delay = pacer.delay(clock())
            if delay > 0:
                await trio.sleep(delay)
            _seccomp.answer(listener, notification_id)
            syscall = _seccomp.syscall_name(nr)
            write, left_over = ledger.note(syscall, clock())
            if left_over:
                log.warning("sandbox.denials_not_audited app=%s count=%d", app, left_over)
            if write:
                record = AuditRecord(event=DENIED, actor="supervisor", peer=app, code=syscall)
                audit(record)
    finally:
        if ledger.suppressed:
            log.warning("sandbox.denials_not_audited app=%s count=%d", app, ledger.suppressed)
        with contextlib.suppress(OSError):
            trio.lowlevel.notify_closing(listener)
        os.close(listener)
