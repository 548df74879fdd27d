"""A link a bench can cut: a loopback TCP relay that copies bytes, and nothing more.

The IM benches need an outage (the transport's link down, then back) and otherwise a link that
costs nothing, so that what they time is the runtime and the AppServer, not the link. The
drill's `LinkProxy` parses every request with h11 and forwards it with httpx, to inject HTTP
faults: two more HTTP ends per request, in the bench's own process, which the baseline (POSTs
straight to the AppServer) does not pay. This relay copies each connection's bytes both ways.

`cut()` shuts every relayed connection down (the transport sees a reset) and refuses new ones
until `restore()`: what a dead Wi-Fi looks like to the transport.
"""

from __future__ import annotations

import socket
from typing import Final

import trio

__all__ = ["LinkRelay"]

_READ: Final = 64 * 1024


class LinkRelay:
    def __init__(self, upstream_port: int) -> None:
        self._upstream_port = upstream_port
        self._cut = False
        self._sockets: set[trio.SocketStream] = set()
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
                        nursery.start_soon(self._copy, client, upstream, nursery.cancel_scope)
                        nursery.start_soon(self._copy, upstream, client, nursery.cancel_scope)
                finally:
                    self._sockets -= {client, upstream}

    @staticmethod
    async def _copy(
        source: trio.SocketStream, sink: trio.SocketStream, both: trio.CancelScope
    ) -> None:
        """Copy until either side ends or breaks; then end the other direction too."""
        try:
            while data := await source.receive_some(_READ):
                await sink.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        both.cancel()
