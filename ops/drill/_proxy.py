"""The link between the transport and the AppServer, as a loopback HTTP proxy the drill controls.

Theory of operation: the runtime is started with `--appserver-via` this proxy, so every request
the transport makes passes here (the load Agent talks to the AppServer directly). Each
connection is parsed with h11 and each request forwarded with one shared httpx client. Four
link faults are switched on and off by the drill while traffic flows:

- `cut()`: every open connection is dropped mid-flight and new ones are closed on arrival,
  until `restore()` — what a dead Wi-Fi looks like to the transport;
- `slow(delay)`: every request waits `delay` before it is forwarded;
- `fail(rate)`: a `rate` fraction of requests is answered 503 `unavailable` without reaching the
  AppServer, and as many again are forwarded but answered 502 (the AppServer stored it, the
  answer was lost), so the transport's retries must rely on its idempotency keys;
- `garbage(kind)`: every request is answered, without reaching the AppServer, with something
  that is not the AppServer's answer: `html` (a captive portal's `200 text/html` page),
  `shape` (`200 application/json` of the wrong shape), `redirect` (a `302` to a login page);
- `restore()` ends all of them.

Nothing here logs or keeps a request's body.
"""

from __future__ import annotations

import logging
import random
import socket
from dataclasses import dataclass, field
from typing import Any, Final

import h11
import httpx
import trio

from ._one_shot_body import with_one_shot_body

__all__ = ["GARBAGE", "LinkProxy"]

log = logging.getLogger("lineup.drill.proxy")

_HOP_BY_HOP: Final = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"transfer-encoding",
        b"te",
        b"trailer",
        b"upgrade",
        b"host",
        b"content-length",
    }
)
_READ: Final = 64 * 1024
_PORTAL: Final = (
    b"<!doctype html><html><head><title>Welcome</title></head>"
    b"<body><form action='/accept'>Accept the terms to use the Wi-Fi</form></body></html>"
)
# What a network answers instead of the AppServer (see `garbage`).
GARBAGE: Final[dict[str, tuple[int, list[tuple[bytes, bytes]], bytes]]] = {
    "html": (200, [(b"content-type", b"text/html; charset=utf-8")], _PORTAL),
    "shape": (200, [(b"content-type", b"application/json")], b'{"hello": ["world"]}'),
    "redirect": (302, [(b"location", b"http://portal.invalid/login")], b""),
}
_UPSTREAM_TIMEOUT_S: Final = 60.0  # above the longest long poll the transport asks for


@dataclass
class ProxyCounts:
    forwarded: int = 0
    refused_cut: int = 0
    dropped_cut: int = 0
    failed_before: int = 0  # 503 without reaching the AppServer
    failed_after: int = 0  # 502 after the AppServer answered: a lost reply
    garbage: int = 0  # answered with something that is not the AppServer's answer
    upstream_errors: int = 0
    by_second: dict[int, int] = field(default_factory=dict)


class LinkProxy:
    def __init__(self, upstream: str, *, seed: int) -> None:
        self._upstream = upstream.rstrip("/")
        self._rng = random.Random(seed)
        self._cut = False
        self._delay = 0.0
        self._fail_rate = 0.0
        self._garbage: str | None = None
        self._connections: set[trio.SocketStream] = set()
        self._http: httpx.AsyncClient | None = None
        self.counts = ProxyCounts()
        self.port = 0

    # ------------------------------------------------------------------ the drill's switches

    def cut(self) -> None:
        """Drop every open connection: its socket is shut down under it, so the transport
        sees a reset, while a request already on its way upstream finishes (or not) on its
        own — cancelling it mid-write would leave httpx's body stream half-iterated."""
        self._cut = True
        for stream in list(self._connections):
            try:
                stream.socket.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already gone
            self.counts.dropped_cut += 1

    def slow(self, delay_s: float) -> None:
        self._delay = delay_s

    def fail(self, rate: float) -> None:
        self._fail_rate = rate

    def garbage(self, kind: str) -> None:
        if kind not in GARBAGE:
            raise ValueError(f"unknown garbage kind {kind!r} (known: {', '.join(GARBAGE)})")
        self._garbage = kind

    def restore(self) -> None:
        self._cut, self._delay, self._fail_rate, self._garbage = False, 0.0, 0.0, None

    # ------------------------------------------------------------------ serving

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=16)
        http = httpx.AsyncClient(timeout=_UPSTREAM_TIMEOUT_S, limits=limits)
        self._http = http
        try:
            listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
            self.port = listeners[0].socket.getsockname()[1]
            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.serve_listeners, self._connection, listeners)
                task_status.started(self.port)
        finally:
            # Shielded: the proxy ends by cancellation, and a cancelled close would leave the
            # upstream pool's sockets open for the garbage collector.
            with trio.CancelScope(shield=True), trio.move_on_after(2.0):
                await http.aclose()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _connection(self, stream: trio.SocketStream) -> None:
        async with stream:
            if self._cut:
                self.counts.refused_cut += 1
                return
            self._connections.add(stream)
            try:
                await self._serve_requests(stream)
            except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
                pass  # cut, or the transport went away: its retry comes on a new connection
            finally:
                self._connections.discard(stream)

    async def _serve_requests(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            request, body = await _read_request(conn, stream)
            if request is None:
                return
            status, headers, payload = await self._answer(request, body)
            await _send(conn, stream, status, headers, payload)
            if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                return
            try:
                conn.start_next_cycle()
            except h11.LocalProtocolError:
                return

    async def _answer(
        self, request: h11.Request, body: bytes
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        if self._delay:
            await trio.sleep(self._delay)
        if self._garbage is not None:
            self.counts.garbage += 1
            return GARBAGE[self._garbage]
        draw = self._rng.random()
        if draw < self._fail_rate:
            self.counts.failed_before += 1
            return _error(503, b"unavailable")
        assert self._http is not None
        headers = [(k, v) for k, v in request.headers if k.lower() not in _HOP_BY_HOP]
        try:
            # Streamed in a context so a cut (which cancels this mid-read) closes the response
            # at once, rather than leaving its stream to the garbage collector.
            upstream = self._http.build_request(
                request.method.decode(),
                self._upstream + request.target.decode(),
                headers=headers,
                content=body,
            )
            response = await self._http.send(with_one_shot_body(upstream), stream=True)
            try:
                await response.aread()
            finally:
                with trio.CancelScope(shield=True):
                    await response.aclose()
        except httpx.HTTPError:
            self.counts.upstream_errors += 1
            return _error(502, b"bad_gateway")
        if draw < 2 * self._fail_rate:
            self.counts.failed_after += 1
            return _error(502, b"bad_gateway")
        self.counts.forwarded += 1
        second = int(trio.current_time())
        self.counts.by_second[second] = self.counts.by_second.get(second, 0) + 1
        out = [(k.encode(), v.encode()) for k, v in response.headers.items()]
        out = [(k, v) for k, v in out if k.lower() not in _HOP_BY_HOP]
        return response.status_code, out, response.content


def _error(status: int, code: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    return status, [(b"content-type", b"application/json")], b'{"error": "' + code + b'"}'


async def _read_request(
    conn: h11.Connection, stream: trio.SocketStream
) -> tuple[h11.Request | None, bytes]:
    request: h11.Request | None = None
    body = bytearray()
    while True:
        event: Any = conn.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive_some(_READ)
            conn.receive_data(data)  # b"" at EOF: h11 turns it into ConnectionClosed
            continue
        if isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            return request, bytes(body)
        elif isinstance(event, h11.ConnectionClosed):
            return None, b""


async def _send(
    conn: h11.Connection,
    stream: trio.SocketStream,
    status: int,
    headers: list[tuple[bytes, bytes]],
    payload: bytes,
) -> None:
    headers = [*headers, (b"content-length", str(len(payload)).encode())]
    data = conn.send(h11.Response(status_code=status, headers=headers))
    assert data is not None
    data += conn.send(h11.Data(data=payload)) or b""
    data += conn.send(h11.EndOfMessage()) or b""
    await stream.send_all(data)
