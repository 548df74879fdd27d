"""The capability requests that wait on the user or a provider, kept in the store so that each
ends once, with one final audit row, even if the gateway is SIGKILLed while it waits (issue 27).

Theory of operation. A request that passed its checks opens its row (`store.capability_request
.open`) before the runtime's prompt is shown or a provider is told, and ends it with its result;
the store writes the end and the final audit row in one transaction, and only for a row still
open, so there is never a second one. A request that ends transiently (a peer restarting) leaves
its row open: its requester asks again under the same id and the retry adopts the row, or
nobody does and it is ended `failed actor_restarted` when its requester has stopped waiting.

A gateway that starts reads the rows (`restore`): those ended lately answer a repeat the same
(the `ResultCache`), and those left open by a killed gateway are orphans, each ended `failed
actor_restarted` once its requester could no longer ask again for it: at its deadline, or
`orphan_grace_s` after the start (`CapabilityConfig`), whichever comes first (a requester that
is still there asks again within seconds of the restart). Requests wait for `restore`, so none
is decided from a memory that forgot what the store holds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import trio

from lineup.actors.kernel import Bus, Message
from lineup.actors.kernel.errors import ErrorCode, LineUpError
from lineup.actors.store import messages as store
from lineup.sdk.protocol import CapabilityResult

from ._capability_state import ResultCache

__all__ = ["Journal"]

log = logging.getLogger("lineup.gateway")

STORE_TIMEOUT: Final = 10.0
RETRY_S: Final = 1.0  # a store that did not answer is asked again this much later
ORPHAN_EVENT: Final = "gateway.capability.failed"
Key = tuple[str, str]  # who asked, the request id
M = TypeVar("M", bound=Message)


def _result(row: store.CapabilityRequestRow) -> CapabilityResult:
    return CapabilityResult(
        request_id=row.request_id,
        capability=row.capability,
        status=row.status,  # written from a CapabilityResult
        code=row.code,
        output=row.output,
    )


class Journal:
    """The open rows of this gateway's waiting requests, and the orphans of a killed one."""

    def __init__(
        self,
        bus: Bus,
        results: ResultCache,
        soon: Callable[[Callable[[], Awaitable[None]]], None],
        grace_s: float,
    ) -> None:
        self.bus = bus
        self._grace_s = grace_s
        self._results = results
        self._soon = soon
        self._open: set[Key] = set()  # rows this gateway opened or adopted, not yet ended
        self._orphans: dict[Key, float] = {}  # open rows nobody holds → when to end them
        self.restored = trio.Event()

    async def restore(self) -> None:
        """Read the rows (retried until the store answers); then requests are served."""
        while True:
            try:
                reply = await self._store(
                    store.CapabilityRequestListRequest(ended_since=time.time() - store.RETAINED_S),
                    store.CapabilityRequestListReply,
                )
                break
            except LineUpError as exc:
                log.info("gateway.journal_unread code=%s", exc.code.value)
                await trio.sleep(RETRY_S)
        grace = trio.current_time() + self._grace_s
        for row in reversed(reply.rows):  # oldest first: the newest stay in the cache
            key = (row.asker, row.request_id)
            if row.state == "ended":
                self._results.put(key, _result(row))
            else:
                self._orphan(key, min(grace, self._trio_time(row.deadline_at)))
        if self._orphans:
            log.info("gateway.journal_orphans count=%d", len(self._orphans))
        self.restored.set()

    def holds(self, key: Key) -> bool:
        return key in self._open

    async def open(
        self, key: Key, app_scope: str, capability: str, deadline: float
    ) -> CapabilityResult | None:
        """Open (or adopt) the request's row before anyone is asked; the result it already has
        if it ended in an earlier life of the gateway (answered from it, never decided again)."""
        if key in self._open:
            return None
        reply = await self._store(
            store.CapabilityRequestOpenRequest(
                asker=key[0],
                request_id=key[1],
                app_scope=app_scope,
                capability=capability,
                deadline_at=time.time() + max(0.0, deadline - trio.current_time()),
            ),
            store.CapabilityRequestOpenReply,
        )
        self._orphans.pop(key, None)  # adopted: its requester asked again
        if reply.row.state == "ended":
            return _result(reply.row)
        self._open.add(key)
        return None

    async def end(self, key: Key, result: CapabilityResult, event: str) -> CapabilityResult:
        """End the row with `result` and its final audit row (`event`); the result to answer:
        `result`, or the one the row already had. Raises `LineUpError` if the store did not
        answer: the row stays open (`orphan` it)."""
        row = await self._end(key, result.status, result.code, result.output, event)
        return _result(row) if row is not None else result

    async def _end(
        self, key: Key, status: str, code: str | None, output: dict[str, Any] | None, event: str
    ) -> store.CapabilityRequestRow | None:
        reply = await self._store(
            store.CapabilityRequestEndRequest(
                asker=key[0],
                request_id=key[1],
                status=status,
                code=code,
                output=output,
                event=event,
            ),
            store.CapabilityRequestEndReply,
        )
        self._open.discard(key)
        return reply.row if reply.row is not None and reply.row.state == "ended" else None

    def orphan(self, key: Key, deadline: float) -> None:
        """Leave the row open (a transient end): its requester's retry adopts it, or it is
        ended `actor_restarted` at `deadline` (trio clock), when nobody can ask again."""
        self._open.discard(key)
        self._orphan(key, deadline)

    def _orphan(self, key: Key, when: float) -> None:
        self._orphans[key] = when

        async def end_when_due() -> None:
            await trio.sleep_until(when)
            while self._orphans.get(key) == when:
                try:
                    row = await self._end(
                        key, "failed", ErrorCode.ACTOR_RESTARTED.value, None, ORPHAN_EVENT
                    )
                except LineUpError:
                    await trio.sleep(RETRY_S)
                    continue
                if self._orphans.get(key) == when:
                    del self._orphans[key]
                    if row is not None:
                        self._results.put(key, _result(row))
                return

        self._soon(end_when_due)

    @staticmethod
    def _trio_time(wall: float) -> float:
        return trio.current_time() + (wall - time.time())

    async def _store(self, request: Message, expect: type[M]) -> M:
        return await self.bus.request(
            "store", request, expect=expect, timeout=STORE_TIMEOUT, retry=True
        )
