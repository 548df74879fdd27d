"""Progress coalescing: per call, the latest progress wins, at most PROGRESS_RATE a second.

Theory of operation
-------------------
A MiniApp may report progress as often as it likes; the Agent gets at most one progress message
per call per `interval` (the outbox and the wire are not a firehose). The first report of a
quiet call goes out at once. One that comes sooner is *held*: it replaces whatever was held for
that call, and the one held at the end of the window goes out then (a report followed by a
long quiet is not lost; it is late by at most one interval). A call that ends drops what it
held: its result supersedes it.

No I/O here: `offer` says what to do with a report, `take` hands over the held one when its
window is over; the router does the writing and the sleeping.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final, Generic, TypeVar

__all__ = ["PROGRESS_INTERVAL", "PROGRESS_RATE", "SEND_NOW", "ProgressCoalescer"]

PROGRESS_RATE: Final = 4.0  # progress messages per call per second, at most
PROGRESS_INTERVAL: Final = 1.0 / PROGRESS_RATE
SEND_NOW: Final = 0.0
MAX_CALLS: Final = 10_000  # calls whose last send is remembered (the oldest are forgotten)

T = TypeVar("T")


class ProgressCoalescer(Generic[T]):
    def __init__(self, interval: float = PROGRESS_INTERVAL, max_calls: int = MAX_CALLS) -> None:
        self.interval = interval
        self._max_calls = max_calls
        self._sent_at: OrderedDict[str, float] = OrderedDict()  # call_id -> last send
        self._held: dict[str, T] = {}  # call_id -> the latest report not sent yet
        self.coalesced = 0  # reports replaced by a later one (never sent)

    def offer(self, call_id: str, report: T, now: float) -> float | None:
        """One report of `call_id`'s at `now`. Returns SEND_NOW (send it: its window is
        open), the time its held report is due (a report is now held: flush it then), or
        None (it replaced the held one, whose flush is already due)."""
        if call_id in self._held:
            self._held[call_id] = report
            self.coalesced += 1
            return None
        last = self._sent_at.get(call_id)
        if last is None or now - last >= self.interval:
            self._sent(call_id, now)
            return SEND_NOW
        self._held[call_id] = report
        return last + self.interval

    def take(self, call_id: str, now: float) -> T | None:
        """The report held for `call_id` (its window is over), counted as sent at `now`;
        None if there is none (the call ended meanwhile)."""
        report = self._held.pop(call_id, None)
        if report is not None:
            self._sent(call_id, now)
        return report

    def drop(self, call_id: str) -> None:
        """The call ended: what it held is superseded, and its window forgotten."""
        if self._held.pop(call_id, None) is not None:
            self.coalesced += 1
        self._sent_at.pop(call_id, None)

    def held(self) -> int:
        return len(self._held)

    def _sent(self, call_id: str, now: float) -> None:
        self._sent_at[call_id] = now
        self._sent_at.move_to_end(call_id)
        if len(self._sent_at) > self._max_calls:
            oldest, _ = self._sent_at.popitem(last=False)
            self._held.pop(oldest, None)
