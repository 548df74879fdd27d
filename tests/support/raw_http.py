"""A loopback HTTP server that answers anything at all, byte for byte: an AppServer as a captive
portal, a frozen proxy or a flood would, for the tests of the clients that talk to one.

Each request is read with h11; the handler answers with the bytes to write (`answer` builds a
well-formed HTTP/1.1 answer), or `None` to cut the connection without a word, or writes to the
stream itself and returns when it is done with it. A connection stays open for the next
request after an answer of bytes, as a kept-alive one does.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Final

import h11
import trio

__all__ = ["TLS_CERTIFICATE", "Handler", "RawServer", "Seen", "answer", "raw_server", "tls_server"]

# A self-signed certificate for 127.0.0.1 and localhost, made for these tests (its key is no
# secret): a client that trusts it alone talks TLS to `raw_server(…, tls=tls_server())`.
TLS_CERTIFICATE: Final = Path(__file__).parent / "tls" / "localhost.pem"
_TLS_KEY: Final = Path(__file__).parent / "tls" / "localhost.key"


def tls_server() -> ssl.SSLContext:
    """The server side of TLS with `TLS_CERTIFICATE`."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(TLS_CERTIFICATE, _TLS_KEY)
    return context


@dataclass(frozen=True)
class Seen:
    """One request as it arrived."""

    method: str
    path: str
    query: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    connection: int  # which connection carried it, counted from 1


Handler = Callable[[Seen, trio.abc.Stream], Awaitable[bytes | None]]


def answer(
    status: int,
    body: bytes | Any = b"",
    content_type: str = "application/json",
    headers: dict[str, str] | None = None,
) -> bytes:
    """A well-formed HTTP/1.1 answer: `body` as is if bytes, else as JSON."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    lines = [f"HTTP/1.1 {status} Whatever", f"content-type: {content_type}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    lines.append(f"content-length: {len(raw)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + raw


@dataclass
class RawServer:
    url: str
    seen: list[Seen] = field(default_factory=list)
    connections: int = 0


@asynccontextmanager
async def raw_server(
    handler: Handler, tls: ssl.SSLContext | None = None
) -> AsyncIterator[RawServer]:
    """Serve `handler` on 127.0.0.1 until the block ends; over TLS with `tls` (`TLS_SERVER`)."""
    async with trio.open_nursery() as nursery:
        server = RawServer(url="")

        async def serve(stream: trio.abc.Stream) -> None:
            server.connections += 1
            number = server.connections
            try:
                while (seen := await _read_request(stream, number)) is not None:
                    server.seen.append(seen)
                    reply = await handler(seen, stream)
                    if reply is None:
                        return
                    await stream.send_all(reply)
            except (
                trio.BrokenResourceError,
                trio.ClosedResourceError,
                h11.ProtocolError,
                ssl.SSLError,
            ):
                return  # the client went away, or sent what is not HTTP: not the test's point
            finally:
                await trio.aclose_forcefully(stream)

        if tls is None:
            listeners = await nursery.start(partial(trio.serve_tcp, serve, 0, host="127.0.0.1"))
        else:
            listeners = await nursery.start(
                partial(trio.serve_ssl_over_tcp, serve, 0, tls, host="127.0.0.1")
            )
        port = listeners[0].transport_listener.socket.getsockname()[1] if tls else None
        port = port or listeners[0].socket.getsockname()[1]
        server.url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
        yield server
        nursery.cancel_scope.cancel()


async def _read_request(stream: trio.abc.Stream, connection: int) -> Seen | None:
    """The next request on `stream`, or None when the client closed it."""
    parser = h11.Connection(h11.SERVER)
    request: h11.Request | None = None
    body = b""
    while True:
        event = parser.next_event()
        if event is h11.NEED_DATA:
            parser.receive_data(bytes(await stream.receive_some(65536)))
        elif isinstance(event, h11.ConnectionClosed):
            return None
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            assert request is not None
            path, _, query = request.target.decode().partition("?")
            headers = {name.decode(): value.decode() for name, value in request.headers}
            return Seen(request.method.decode(), path, query, headers, body, connection)
