"""The devserver's HTTP/1.1 server: trio and h11, what DESIGN §12's JSON endpoints need.

Theory of operation
-------------------
The reference AppServer sits on the IM path twice per message: an Agent's POST comes in, and
the runtime's long poll goes out with it. A general ASGI stack (hypercorn under Starlette) cost
about 0.5 ms of one core per exchange on top of h11 (a task, a stream object and an ASGI
message queue per request, routing, a `Request` and a `Response`), which was most of what an
Agent's message waited for between its POST and the runtime's long poll. Here a connection is
one task that reads a request, awaits the app and writes its answer, in a loop:

- **One exchange at a time per connection** (HTTP/1.1 keep-alive, no pipelining ahead of an
  answer). A request whose body the app did not read to the end, or any protocol error, ends
  the connection after its answer, so no stray bytes are taken for the next request.
- **Bounded**: a request's head by h11 (`MAX_HEAD_BYTES`); its body by the app, as it reads it
  (`HttpRequest.read(limit)` refuses past `limit`, and before reading when the declared length
  is already past it); a request must arrive whole within `REQUEST_TIMEOUT_S`; an idle
  kept-alive connection is closed after `KEEP_ALIVE_S`.
- **Graceful stop**: once `shutdown` is set nothing new is accepted, idle connections close,
  and the requests in flight get `graceful_timeout` to finish (the app ends its long polls
  itself); then whatever is left is cancelled.

The app is one coroutine, `HttpRequest -> HttpAnswer`; nothing here knows the endpoints.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import parse_qsl

import h11
import trio

__all__ = [
    "KEEP_ALIVE_S",
    "MAX_HEAD_BYTES",
    "REQUEST_TIMEOUT_S",
    "BodyTooLarge",
    "HttpAnswer",
    "HttpRequest",
    "serve_http",
]

log = logging.getLogger("lineup.devserver.http")

MAX_HEAD_BYTES: Final = 16 * 1024  # a request line and headers (as hypercorn's h11 bound)
KEEP_ALIVE_S: Final = 5.0  # an idle kept-alive connection is closed after this (as hypercorn)
REQUEST_TIMEOUT_S: Final = 30.0  # a request, head and body, once its first byte came
# A body the app did not read (a refusal before it, or one too large) is read past, up to
# this, so that the client, which sends it whole before reading the answer, gets the answer.
DRAIN_BYTES: Final = 1024 * 1024
_READ: Final = 64 * 1024

App = Callable[["HttpRequest"], Awaitable["HttpAnswer"]]


class BodyTooLarge(Exception):
    """The request's body is (or says it is) longer than the reader's limit."""


class _Closed(Exception):
    """The peer closed or broke the connection, or broke the protocol: no answer is owed."""


@dataclass(frozen=True, slots=True)
class HttpAnswer:
    status: int
    body: bytes  # JSON
    content_type: bytes = b"application/json"


@dataclass(slots=True)
class HttpRequest:
    """One request's head; its body is read on demand (`read`), bounded by the caller."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names lower-cased; the first of a repeated header
    _conn: _Connection
    _done: bool = field(default=False)

    async def read(self, limit: int) -> bytes:
        """The whole body; `BodyTooLarge` as soon as it is (or is declared) over `limit`."""
        declared = self.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise BodyTooLarge
        chunks: list[bytes] = []
        size = 0
        async for chunk in self._conn.body():
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge
            chunks.append(chunk)
        self._done = True
        return b"".join(chunks)


class _Connection:
    """One client's connection: its h11 state, the stream under it, and the deadline of what
    it is reading now (a request's head or body)."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        self.deadline = trio.current_time() + KEEP_ALIVE_S

    async def next_event(self) -> h11.Event | type[h11.PAUSED] | type[h11.ConnectionClosed]:
        """The next event of the request; `_Closed` for a broken, late or malformed one."""
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise _Closed from exc
            if event is not h11.NEED_DATA:
                return event  # type: ignore[return-value]  # h11's sentinels are classes
            if self.h11.they_are_waiting_for_100_continue:
                await self._send(h11.InformationalResponse(status_code=100, headers=[]))
            with trio.move_on_at(self.deadline) as late:
                try:
                    data = await self.stream.receive_some(_READ)
                except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                    raise _Closed from exc
            if late.cancelled_caught:
                raise _Closed
            self.h11.receive_data(data)  # b"" marks the peer's end

    async def body(self) -> AsyncIterator[bytes]:
        while True:
            event = await self.next_event()
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                return
            else:  # the peer closed mid-body
                raise _Closed

    async def drain(self, limit: int) -> bool:
        """Read past what is left of a request's body (a client sends it whole before it
        reads the answer): whether it ended within `limit` bytes."""
        size = 0
        async for chunk in self.body():
            size += len(chunk)
            if size > limit:
                return False
        return True

    async def answer(self, answer: HttpAnswer, *, close: bool) -> None:
        headers = [
            (b"content-type", answer.content_type),
            (b"content-length", str(len(answer.body)).encode()),
        ]
        if close:
            headers.append((b"connection", b"close"))
        response = h11.Response(status_code=answer.status, headers=headers)
        await self._send(response, h11.Data(data=answer.body), h11.EndOfMessage())

    async def _send(self, *events: h11.Event) -> None:
        try:
            data = b"".join(self.h11.send(event) or b"" for event in events)
            await self.stream.send_all(data)
        except (h11.LocalProtocolError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise _Closed from exc


class _Server:
    def __init__(self, app: App, error: HttpAnswer) -> None:
        self.app = app
        self.error = error  # the answer to a request the app failed on
        self.closing = False
        self.idle: set[trio.CancelScope] = set()  # connections waiting for a next request
        self.open = 0
        self.all_closed = trio.Event()

    def close_idle(self) -> None:
        self.closing = True
        for scope in self.idle:
            scope.cancel()

    async def connection(self, stream: trio.SocketStream) -> None:
        self.open += 1
        try:
            async with stream:
                conn = _Connection(stream)
                while not self.closing and await self._exchange(conn):
                    conn.h11.start_next_cycle()
        except _Closed:
            pass
        finally:
            self.open -= 1
            if self.open == 0:
                self.all_closed.set()
                self.all_closed = trio.Event()

    async def _exchange(self, conn: _Connection) -> bool:
        """Read one request, answer it; whether the connection may serve another."""
        conn.deadline = trio.current_time() + KEEP_ALIVE_S
        with trio.CancelScope() as idle:  # cancelled by a graceful stop
            self.idle.add(idle)
            try:
                event = await conn.next_event()
            except _Closed:
                await self._refuse(conn)
                return False
            finally:
                self.idle.discard(idle)
        if idle.cancelled_caught or not isinstance(event, h11.Request):
            return False  # stopping, or the peer closed between requests
        conn.deadline = trio.current_time() + REQUEST_TIMEOUT_S  # for its body
        target = event.target.decode("ascii", "replace")
        path, _, query = target.partition("?")
        headers: dict[str, str] = {}
        for name, value in event.headers:
            headers.setdefault(name.decode("ascii").lower(), value.decode("latin-1"))
        request = HttpRequest(
            method=event.method.decode("ascii", "replace"),
            path=path,
            query=dict(parse_qsl(query, keep_blank_values=True)),
            headers=headers,
            _conn=conn,
        )
        try:
            answer = await self.app(request)
        except Exception as exc:  # a bug in an endpoint: answered, logged by its class
            if isinstance(exc, _Closed):
                raise
            log.error("devserver.http_failed error=%s", type(exc).__name__)
            answer = self.error
        close = self.closing
        await conn.answer(answer, close=close)
        if not request._done and not await conn.drain(DRAIN_BYTES):
            return False  # a body too long to read past: the connection goes with it
        return not close and conn.h11.our_state is h11.DONE

    async def _refuse(self, conn: _Connection) -> None:
        """A request h11 could not parse: a 400, if an answer may still be sent."""
        state = conn.h11
        if state.their_state is h11.ERROR and state.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            bad = HttpAnswer(400, b'{"error":"invalid_request"}')
            try:
                await conn.answer(bad, close=True)
            except _Closed:
                pass


async def serve_http(
    app: App,
    host: str,
    port: int,
    *,
    error: HttpAnswer,
    graceful_timeout: float,
    shutdown: trio.Event | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve `app` on `host`:`port` until cancelled or `shutdown` is set (then gracefully).
    Reports `http://HOST:PORT` (the bound port) once it accepts connections. Raises `OSError`
    if the address cannot be bound. `error` answers a request the app raised on."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound = listeners[0].socket.getsockname()
    where = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    server = _Server(app, error)
    async with trio.open_nursery() as nursery:
        accepting = trio.CancelScope()

        async def accept(task_status: trio.TaskStatus[object]) -> None:
            with accepting:  # connections run in `nursery`: a stop of this leaves them be
                await trio.serve_listeners(
                    server.connection, listeners, handler_nursery=nursery, task_status=task_status
                )

        await nursery.start(accept)
        task_status.started(f"http://{where}:{bound[1]}")
        if shutdown is None:
            await trio.sleep_forever()
        assert shutdown is not None
        await shutdown.wait()
        accepting.cancel()  # nothing new
        server.close_idle()
        with trio.move_on_after(graceful_timeout):
            while server.open:
                await server.all_closed.wait()
        nursery.cancel_scope.cancel()
