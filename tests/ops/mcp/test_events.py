"""The event store, without I/O: a stream's later events replay in order after an id it
holds, never another stream's; an unknown id replays nothing; it is bounded."""

from __future__ import annotations

from mcp.server.streamable_http import EventMessage
from mcp_types import JSONRPCMessage, JSONRPCNotification

from lineup.ops.mcp._events import MemoryEventStore


def _note(n: int) -> JSONRPCMessage:
    return JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"n": n})


async def test_a_streams_later_events_replay_in_order_and_no_other_streams() -> None:
    store = MemoryEventStore()
    assert store  # the SDK tests the store for truth: an empty one is still a store
    priming = await store.store_event("s1", None)
    await store.store_event("s1", _note(1))
    await store.store_event("s2", _note(99))
    last = await store.store_event("s1", _note(2))
    sent: list[EventMessage] = []

    async def send(event: EventMessage) -> None:
        sent.append(event)

    assert await store.replay_events_after(priming, send) == "s1"
    assert [e.message.params for e in sent] == [{"n": 1}, {"n": 2}]  # type: ignore[union-attr]
    assert sent[-1].event_id == last
    assert await store.replay_events_after("unknown", send) is None


async def test_the_store_keeps_its_newest_events_within_its_bounds() -> None:
    store = MemoryEventStore(max_events=3)
    ids = [await store.store_event("s", _note(n)) for n in range(5)]
    assert store.held == 3
    sent: list[EventMessage] = []

    async def send(event: EventMessage) -> None:
        sent.append(event)

    assert await store.replay_events_after(ids[0], send) is None  # dropped
    assert await store.replay_events_after(ids[2], send) == "s"
    assert [e.event_id for e in sent] == ids[3:]
    small = MemoryEventStore(max_bytes=1)
    await store.store_event("s", _note(1))
    await small.store_event("s", _note(1))
    assert small.held == 0
