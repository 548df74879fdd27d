"""A link a bench can cut: a loopback TCP relay that copies bytes, and nothing more.

The IM benches need an outage (the transport's link down, then back) and otherwise a link that
costs nothing, so that what they time is the runtime and the AppServer, not the link. The
drill's `LinkProxy` parses every request with h11 and forwards it with httpx, to inject HTTP
faults: two more HTTP ends per request, in the bench's own process, which the baseline (POSTs
straight to the AppServer) does not pay. This relay copies each connection's bytes both ways.

`cut()` shuts every relayed connection down (the transport sees a reset) and refuses new ones
until `restore()`: what a dead Wi-Fi looks like to the transport. `hold_answers()` lets every
request through but keeps what the AppServer answers until `release()` (a test's way to catch
the transport between a POST the AppServer took and its answer). With `record`, `sent` keeps
every byte the client side sent, for a test to count its requests.
"""

from __future__ import annotations

import socket
from typing import Final

import trio

__all__ = ["LinkRelay"]

_READ: Final = 64 * 1024


class LinkRelay:
    def __init__(self, upstream_port: int, *, record: bool = False) -> None:
        self._upstream_port = upstream_port
        self._record = record
        self._cut = False
        self._sockets: set[trio.SocketStream] = set()
        self._released = trio.Event()
        self._released.set()
        self.sent = bytearray()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cut(self) -> None:
        self._cut = True
        for stream in list(self._sockets):
            try:
                stream.socket.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already gone

    def restore(self) -> None:
        self._cut = False

    def hold_answers(self) -> None:
        if self._released.is_set():
            self._released = trio.Event()

    def release(self) -> None:
        self._released.set()

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, self._connection, listeners)
            task_status.started(self.port)

    async def _connection(self, client: trio.SocketStream) -> None:
        async with client:
            if self._cut:
                return
            try:
                upstream = await trio.open_tcp_stream("127.0.0.1", self._upstream_port)
            except OSError:
                return  # the AppServer is not up (yet): the transport retries
            async with upstream:
                for stream in (client, upstream):
                    stream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._sockets |= {client, upstream}
                try:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(self._requests, client, upstream, nursery.cancel_scope)
                        nursery.start_soon(self._answers, upstream, client, nursery.cancel_scope)
                finally:
                    self._sockets -= {client, upstream}

    async def _requests(
        self, client: trio.SocketStream, upstream: trio.SocketStream, both: trio.CancelScope
    ) -> None:
        try:
            while data := await client.receive_some(_READ):
                if self._record:
                    self.sent += data
                await upstream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        both.cancel()  # either side ended or broke: so does the other direction

    async def _answers(
        self, upstream: trio.SocketStream, client: trio.SocketStream, both: trio.CancelScope
    ) -> None:
        try:
            while data := await upstream.receive_some(_READ):
                await self._released.wait()
                await client.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        both.cancel()
