"""Which refusals at the Shell's socket become audit rows, and log lines: a bounded number per
window.

Any local process can reach the socket and send what the server refuses (frames outside the
protocol, handshakes without the token, bytes h11 cannot parse), as fast as it likes; one row or
one log line each would let it flood the audit table or the log. Per kind of refusal (its audit
event), the first `max_rows` of a window become rows and the rest are only counted; once a
window with drops is over, one counter row says how many were dropped (`RefusalLedger`, no I/O:
the caller passes the time). The log gets one line per kind per `LOG_WINDOW`, never a traceback,
and the count of the lines it left out with the next one (`RefusalLog`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

__all__ = ["LOG_WINDOW", "RefusalLedger", "RefusalLog"]

WINDOW: Final = 2.0  # seconds
MAX_ROWS_PER_WINDOW: Final = 20  # per kind of refusal
LOG_WINDOW: Final = 10.0  # seconds per log line of one kind


@dataclass
class RefusalLedger:
    window: float = WINDOW
    max_rows: int = MAX_ROWS_PER_WINDOW
    _opened: dict[str, float] = field(default_factory=dict)
    _rows: dict[str, int] = field(default_factory=dict)
    _dropped: dict[str, int] = field(default_factory=dict)

    def admit(self, kind: str, now: float) -> bool:
        """One refusal of `kind` at `now`: True if it gets its own row. Call `due` first, so
        a window that is over is reported before a new one opens."""
        if kind not in self._opened:
            self._opened[kind], self._rows[kind], self._dropped[kind] = now, 0, 0
        if self._rows[kind] < self.max_rows:
            self._rows[kind] += 1
            return True
        self._dropped[kind] += 1
        return False

    def due(self, now: float) -> list[tuple[str, int]]:
        """The windows that are over, forgotten: (kind, refusals dropped) for each that dropped
        any, for its counter row."""
        out: list[tuple[str, int]] = []
        for kind, opened in list(self._opened.items()):
            if now - opened >= self.window:
                if self._dropped[kind]:
                    out.append((kind, self._dropped[kind]))
                del self._opened[kind], self._rows[kind], self._dropped[kind]
        return out


class RefusalLog:
    """Log refusals by kind (`event` and its fields: a class name, a check that failed; never
    content), one line per kind per `window`. The lines left out are counted, and the count is
    logged once that kind's window is over and it is refused again."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        window: float = LOG_WINDOW,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._clock = clock
        self._ledger = RefusalLedger(window=window, max_rows=1)

    def refused(self, event: str, **fields: object) -> None:
        now = self._clock()
        for kind, dropped in self._ledger.due(now):
            self._logger.warning("%s suppressed=%d", kind, dropped)
        kind = " ".join([event, *(f"{name}={value}" for name, value in fields.items())])
        if self._ledger.admit(kind, now):
            self._logger.warning("%s", kind)
