"""An MCP App's log lines, from its Surface to its app's own log (issue 30).

Theory of operation
-------------------
A Surface's `notifications/message` is checked by the Shell's bridge (a level of MCP's, its
`data` as text cut to `MAX_VIEW_LOG_CHARS`, at most a few a second) and comes as a
`surface.log` frame. `ViewLogRelay` takes it only for an instance whose current view is a
Surface (`SurfaceBook`, which knows that instance's app), within a rate per instance
(`LINES_PER_S`, burst `LINES_BURST`), and tells the supervisor (`AppViewLogEvent`), which writes
it to `<data dir>/logs/<app_scope>.log`, marked `view` with its level, escaped and cut as the
app's own output is: `lineup logs APP_SCOPE` shows it. The text is the app's: it is never
written to the runtime's log or the audit; a line refused (`surface_not_found`,
`rate_limited`) or not delivered is audited by its code and the instance only.
"""

from __future__ import annotations

from typing import Final

import trio

from lineup.actors.kernel import Bus, ErrorCode
from lineup.actors.kernel.control import AppViewLogEvent

from ._audit import user_record
from ._surface_book import SurfaceBook
from .shell_protocol import SurfaceLogFrame

__all__ = ["LINES_BURST", "LINES_PER_S", "VIEW_LOG_REFUSED", "ViewLogRelay"]

VIEW_LOG_REFUSED: Final = "hostbridge.view_log_refused"
LINES_PER_S: Final = 5.0  # one instance's log lines, sustained
LINES_BURST: Final = 20
TELL_TIMEOUT: Final = 2.0
MAX_INSTANCES: Final = 256  # instances whose rate is remembered


class ViewLogRelay:
    """What the hostbridge does with a Surface's log line (see the module's docstring)."""

    def __init__(self, bus: Bus, book: SurfaceBook) -> None:
        self._bus = bus
        self._book = book
        self._buckets: dict[str, tuple[float, float]] = {}  # instance → (tokens, at)

    def _within_rate(self, instance_id: str) -> bool:
        now = trio.current_time()
        tokens, at = self._buckets.pop(instance_id, (float(LINES_BURST), now))
        tokens = min(float(LINES_BURST), tokens + (now - at) * LINES_PER_S)
        allowed = tokens >= 1.0
        self._buckets[instance_id] = (tokens - 1.0 if allowed else tokens, now)
        while len(self._buckets) > MAX_INSTANCES:
            del self._buckets[next(iter(self._buckets))]
        return allowed

    async def relay(self, frame: SurfaceLogFrame) -> ErrorCode | None:
        """Into the instance's app's log; None once told, else the refusal's code (audited)."""
        scope = self._book.app_scope(frame.instance_id)
        if scope is None:
            code: ErrorCode | None = ErrorCode.SURFACE_NOT_FOUND
        elif not self._within_rate(frame.instance_id):
            code = ErrorCode.RATE_LIMITED
        else:
            event = AppViewLogEvent(app_scope=scope, level=frame.level, text=frame.text)
            code = await self._bus.tell("supervisor", event, timeout=TELL_TIMEOUT)
        if code is not None:
            record = user_record(
                VIEW_LOG_REFUSED, frame.type, code=code.value, subject_id=frame.instance_id
            )
            self._bus.audit_refusal(record)
        return code
