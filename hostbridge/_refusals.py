"""Which refusals at the Shell's socket become audit rows: a bounded number per window.

Any local process can reach the socket and send frames the protocol refuses, as fast as it
likes; one row each would let it flood the audit table. Per kind of refusal (its audit event),
the first `max_rows` of a window become rows and the rest are only counted; once a window with
drops is over, one counter row says how many were dropped. No I/O: the caller passes the time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

__all__ = ["RefusalLedger"]

WINDOW: Final = 2.0  # seconds
MAX_ROWS_PER_WINDOW: Final = 20  # per kind of refusal


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
