"""An HTTP request body that is no async generator.

httpx wraps a body of bytes in a stream whose `__aiter__` is an async generator. When a send
fails mid-body (the peer resets the connection, a deadline cancels it), httpcore leaves that
generator suspended at its `yield`, the garbage collector finds it unexhausted, and trio
reports a `ResourceWarning` — at random, long after the failure. A class-based iterator has no
frame to leave suspended: the drill's link proxy sends its upstream bodies as this.
"""

from __future__ import annotations

from typing import Self

import httpx

__all__ = ["OneShotBody", "with_one_shot_body"]


def with_one_shot_body(request: httpx.Request) -> httpx.Request:
    """`request` (built by httpx, its body already read) with its body as a `OneShotBody`."""
    request.stream = OneShotBody(request.content)
    return request


class OneShotBody(httpx.AsyncByteStream):
    """Yields `data` once per iteration (a retry iterates again); closing is a no-op."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def __aiter__(self) -> _Once:  # an iterator, not a generator
        return _Once(self._data)

    async def aclose(self) -> None:
        return None


class _Once:
    def __init__(self, data: bytes) -> None:
        self._data: bytes | None = data

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> bytes:
        if self._data is None:
            raise StopAsyncIteration
        data, self._data = self._data, None
        return data
