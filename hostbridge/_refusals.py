"""Which refusals at the Shell's socket become log lines: one per kind per window.

Any local process can reach the socket and send what the server refuses (frames outside the
protocol, handshakes without the token, bytes h11 cannot parse), as fast as it likes; one log
line each would let it flood the log. The log gets one line per kind per `LOG_WINDOW`, never a
traceback, and the count of the lines it left out with that kind's next line, by the kernel's
`RefusalLedger` (the one that bounds every actor's refusal rows in the audit: the hostbridge's
go through `Bus.audit_refusal`, offender `user`).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import Final

from lineup.actors.kernel.audit import RefusalLedger

__all__ = ["LOG_WINDOW", "RefusalLog"]

LOG_WINDOW: Final = 10.0  # seconds per log line of one kind


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
        self._ledger = RefusalLedger(window=window, rows=1, stop_after=sys.maxsize)

    def refused(self, event: str, **fields: object) -> None:
        kind = " ".join([event, *(f"{name}={value}" for name, value in fields.items())])
        verdict = self._ledger.note(kind, "", None, self._clock())
        if verdict.left_over is not None:
            self._logger.warning("%s suppressed=%d", kind, verdict.left_over.count)
        if verdict.write:
            self._logger.warning("%s", kind)
