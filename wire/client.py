"""An HTTP/1.1 client on trio and h11: what an AppServer client needs, and nothing more.

Theory of operation
-------------------
Talking to an AppServer is a few JSON exchanges: a login, a long poll, a send. A general
client (httpx: its pool, HTTP/2, its command line) cost every process that loaded it ~100 ms
of imports, on the start's critical path; h11 is the HTTP/1.1 state machine httpx itself runs
on, and costs ~5 ms. What is left is a loop of reads and writes, written out here:

- **One exchange at a time per connection**, on a kept-alive connection when one is idle
  (the newest first), else on a new one. A connection goes back to the idle list only when
  both sides have finished the exchange cleanly; one cut, cancelled or refused mid-way is
  closed, never reused. An idle connection with anything to read (the server closed it, or
  sent what nobody asked for) is dropped before reuse.
- **Bounded reads.** The answer's head is bounded by h11 (16 KiB); its body by the caller's
  `max_bytes`: past it the connection is closed and nothing more is read. An answer with a
  `Content-Encoding` (a compressed body could be a bomb no byte limit sees coming) is refused
  before its body is read: every request asks for `identity`.
- **Nothing implicit**: no redirect is followed, no cookie kept, no proxy or `.netrc` read
  from the environment; the caller sees the status and decides.
- **Deadlines are the caller's** (`trio.move_on_after` around a call), but a connect has its
  own bound, so an unreachable host is told apart from a slow answer.

Whatever goes wrong is one `HttpError`: `Unreachable` (refused, reset, cut mid-answer, bad
framing, TLS), `ConnectTimeout`, or `AnswerRefused` (too large, encoded: with its status).
"""

from __future__ import annotations

import json as jsonlib
import select
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlencode, urlsplit

import h11
import trio

__all__ = [
    "AnswerRefused",
    "ConnectTimeout",
    "HttpAnswer",
    "HttpClient",
    "HttpError",
    "Unreachable",
    "verifying_context",
]

CONNECT_TIMEOUT: Final = 3.0
MAX_IDLE: Final = 4  # kept-alive connections: a long poll and a send or two at a time
_READ_SIZE: Final = 64 * 1024
_USER_AGENT: Final = b"lineup"


class HttpError(Exception):
    """An exchange that gave no answer to read. `status` is the answer's, if one began."""

    status: int | None = None


class Unreachable(HttpError):
    """Refused, reset, cut mid-answer, answered in something that is not HTTP/1.1, or TLS
    failed."""


class ConnectTimeout(HttpError):
    """No connection within the connect bound."""


class AnswerRefused(HttpError):
    """An answer read no further: its body is over the limit, or encoded."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status


@dataclass(frozen=True, slots=True)
class HttpAnswer:
    status: int
    headers: Mapping[str, str]  # lower-case names; a repeated header's last value
    body: bytes

    @property
    def content_type(self) -> str:
        """The media type alone, lower-case (`application/json` of `…; charset=utf-8`)."""
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()


class HttpClient(trio.abc.AsyncResource):
    """HTTP/1.1 exchanges with one origin (`base_url`: `http[s]://host[:port][/prefix]`). Use
    as `async with HttpClient(url) as client`; `aclose` closes every connection."""

    def __init__(
        self,
        base_url: str,
        *,
        ssl_context: ssl.SSLContext | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        url = urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self._tls = url.scheme == "https"
        self._host = url.hostname
        self._port = url.port or (443 if self._tls else 80)
        self._authority = url.netloc.rpartition("@")[2].encode()  # never credentials
        self._prefix = url.path.rstrip("/")
        self._ssl = ssl_context  # for https: made at the first connect, not before
        self._connect_timeout = connect_timeout
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()

    async def aclose(self) -> None:
        """Close every connection, idle or in use (an exchange under way fails). Never blocks."""
        self._idle.clear()
        while self._open:
            await self._open.pop().close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        max_bytes: int,
    ) -> HttpAnswer:
        """One exchange: `method` on the prefix + `path` (+ `params` as its query), `json` as
        its body if given. The answer whatever its status; its body at most `max_bytes`."""
        target = self._prefix + path + (f"?{urlencode(params)}" if params else "")
        body = b"" if json is None else jsonlib.dumps(json, separators=(",", ":")).encode()
        head = [
            (b"host", self._authority),
            (b"user-agent", _USER_AGENT),
            (b"accept", b"*/*"),
            (b"accept-encoding", b"identity"),
            *((name.lower().encode(), value.encode()) for name, value in (headers or {}).items()),
        ]
        if json is not None:
            head.append((b"content-type", b"application/json"))
        if json is not None or method in ("POST", "PUT", "PATCH"):
            head.append((b"content-length", str(len(body)).encode()))
        request = h11.Request(method=method, target=target.encode(), headers=head)
        connection = await self._reusable() or await self._connect()
        try:
            answer = await connection.exchange(request, body, max_bytes)
        except BaseException:
            self._open.discard(connection)
            await connection.close()
            raise
        if connection.reusable():
            connection.next_cycle()
            self._idle.append(connection)
            while len(self._idle) > MAX_IDLE:
                await self._drop(self._idle.pop(0))
        else:
            await self._drop(connection)
        return answer

    async def _reusable(self) -> _Connection | None:
        while self._idle:
            connection = self._idle.pop()
            if connection.quiet():
                return connection
            await self._drop(connection)
        return None

    async def _drop(self, connection: _Connection) -> None:
        self._open.discard(connection)
        await connection.close()

    async def _connect(self) -> _Connection:
        try:
            with trio.fail_after(self._connect_timeout):
                tcp = await trio.open_tcp_stream(self._host, self._port)
                stream: trio.abc.Stream = tcp
                if self._tls:
                    self._ssl = self._ssl or verifying_context()
                    tls = trio.SSLStream(tcp, self._ssl, server_hostname=self._host)
                    try:
                        await tls.do_handshake()
                    except BaseException:
                        await trio.aclose_forcefully(tcp)
                        raise
                    stream = tls
        except trio.TooSlowError:
            raise ConnectTimeout("connect") from None
        except (OSError, trio.BrokenResourceError, ssl.SSLError) as exc:
            raise Unreachable(type(exc).__name__) from exc
        connection = _Connection(stream, tcp.socket.fileno())
        self._open.add(connection)
        return connection


def verifying_context() -> ssl.SSLContext:
    """TLS as httpx verified it: certificates against certifi's CA bundle (the system's where
    certifi is missing), host names checked. Loading the bundle costs ~40 ms, so a plain-http
    client never makes one."""
    try:
        import certifi
    except ImportError:  # pragma: no cover - certifi comes with httpx, a dependency
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


class _Connection:
    """One socket and its h11 state."""

    def __init__(self, stream: trio.abc.Stream, fd: int) -> None:
        self._stream = stream
        self._fd = fd  # the TCP socket's, under TLS too
        self._h11 = h11.Connection(h11.CLIENT)
        self._cut = False  # the send broke: never used again, whatever h11 says

    async def exchange(self, request: h11.Request, body: bytes, max_bytes: int) -> HttpAnswer:
        try:
            data = self._h11.send(request) or b""
            if body:
                data += self._h11.send(h11.Data(data=body)) or b""
            data += self._h11.send(h11.EndOfMessage()) or b""
            try:
                await self._stream.send_all(data)
            except (OSError, trio.BrokenResourceError) as cut:
                # A server may answer before it has read the whole body (a 413 by its
                # Content-Length) and close: that answer is the one to return, if it came.
                self._cut = True
                cut_error: BaseException | None = cut
            else:
                cut_error = None
            try:
                response = await self._next()
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
                if cut_error is not None:
                    raise cut_error from None
                raise
            while isinstance(response, h11.InformationalResponse):  # 100 Continue: not ours
                response = await self._next()
            if not isinstance(response, h11.Response):
                raise Unreachable("no answer")
            headers = {
                name.decode("latin-1"): value.decode("latin-1") for name, value in response.headers
            }
            status = response.status_code
            if headers.get("content-encoding", "identity").strip().lower() != "identity":
                raise AnswerRefused(status, "encoded")
            chunks: list[bytes] = []
            size = 0
            while True:
                event = await self._next()
                if isinstance(event, h11.EndOfMessage):
                    return HttpAnswer(status, headers, b"".join(chunks))
                if not isinstance(event, h11.Data):
                    raise Unreachable("cut")
                size += len(event.data)
                if size > max_bytes:
                    raise AnswerRefused(status, "too large")
                chunks.append(bytes(event.data))
        except h11.ProtocolError as exc:
            raise Unreachable("framing") from exc
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError) as exc:
            raise Unreachable(type(exc).__name__) from exc

    async def _next(self) -> Any:
        while True:
            event = self._h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            self._h11.receive_data(bytes(await self._stream.receive_some(_READ_SIZE)))

    def reusable(self) -> bool:
        return (
            not self._cut and self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE
        )

    def next_cycle(self) -> None:
        self._h11.start_next_cycle()

    def quiet(self) -> bool:
        """An idle connection has nothing to read: readable means closed, or talked to out of
        turn. Either way it is not one to send on."""
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        return not poller.poll(0)

    async def close(self) -> None:
        await trio.aclose_forcefully(self._stream)
