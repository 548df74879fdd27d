"""The event store of `lineup mcp --http`: a dropped Streamable HTTP stream resumes.

Theory of operation
-------------------
The SDK's transport stores every SSE event it sends (and a priming event at the start of each
stream) here, under the stream it belongs to, and sends its id with it. A client whose stream
drops reconnects with `Last-Event-ID`; `replay_events_after` sends it again what that stream
carried after that event, in order, and the transport carries on with the stream's later
messages (a call's result included) on the new connection.

Event ids are random (an id names its stream: one client cannot guess another's). The store is
bounded: at most `MAX_EVENTS` events and `MAX_BYTES` of their JSON, the oldest dropped first;
an id no longer held replays nothing (the client then gets what the transport does for an
unknown id). It lives in memory: a restarted `lineup mcp` has no streams to resume.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from typing import Final

from mcp.server.streamable_http import (
    EventCallback,
    EventId,
    EventMessage,
    EventStore,
    StreamId,
)
from mcp_types import JSONRPCMessage

__all__ = ["MAX_BYTES", "MAX_EVENTS", "MemoryEventStore"]

MAX_EVENTS: Final = 4096
MAX_BYTES: Final = 32 * 1024 * 1024  # of the events' JSON


class MemoryEventStore(EventStore):
    """The events of every stream of one `lineup mcp`, oldest first (bounded)."""

    def __init__(self, *, max_events: int = MAX_EVENTS, max_bytes: int = MAX_BYTES) -> None:
        self._events: OrderedDict[EventId, tuple[StreamId, JSONRPCMessage | None, int]] = (
            OrderedDict()
        )
        self._bytes = 0
        self._max_events = max_events
        self._max_bytes = max_bytes

    @property
    def held(self) -> int:
        """How many events it holds (not `__len__`: the SDK tests the store for truth)."""
        return len(self._events)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        size = 0 if message is None else len(message.model_dump_json(by_alias=True))
        event_id = secrets.token_urlsafe(12)
        self._events[event_id] = (stream_id, message, size)
        self._bytes += size
        while self._events and (
            len(self._events) > self._max_events or self._bytes > self._max_bytes
        ):
            _, (_, _, dropped) = self._events.popitem(last=False)
            self._bytes -= dropped
        return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        held = self._events.get(last_event_id)
        if held is None:
            return None
        stream_id = held[0]
        after = False
        for event_id, (stream, message, _) in list(self._events.items()):
            if after and stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
            after = after or event_id == last_event_id
        return stream_id
