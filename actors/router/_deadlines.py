"""Deadlines by key, earliest first: what the tool pipeline (a call's `timeout_ms`) and the
interactions (a question's `expires_at`) wait for. No state of record: the store has the
deadlines, and each owner re-arms them from it at start. An armed key that was settled meanwhile
is simply expired for nothing (its owner's `expire` finds it decided and writes nothing)."""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Awaitable, Callable

import trio

__all__ = ["Deadlines"]


class Deadlines:
    """A heap of `(at, key)` (wall-clock seconds); `run` calls `expire(key)` for each, in order,
    once its time has come."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, str]] = []
        self._wakeup = trio.Event()

    def arm(self, at: float, key: str) -> None:
        earliest = self._heap[0][0] if self._heap else math.inf
        heapq.heappush(self._heap, (at, key))
        if at < earliest:
            self._wakeup.set()  # the waiting task sleeps until a later one: wake it

    async def run(self, expire: Callable[[str], Awaitable[None]]) -> None:
        while True:
            now = time.time()
            while self._heap and self._heap[0][0] <= now:
                _, key = heapq.heappop(self._heap)
                await expire(key)
            self._wakeup = trio.Event()
            wait = self._heap[0][0] - time.time() if self._heap else math.inf
            with trio.move_on_after(max(0.0, wait)):
                await self._wakeup.wait()
