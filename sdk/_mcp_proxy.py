"""The HTTP CONNECT proxy an MCP server reaches its declared hosts through (step 2 of
`lineup.sdk.mcp_network`'s design).

Theory of operation
-------------------
The sandbox made the listening socket in the server's network namespace, the only port the
server may connect to (`$LINEUP_MCP_PROXY_FD`); the adapter (`_mcp_host`) starts the server
with `HTTPS_PROXY` and its kin pointing there, and runs `McpProxy` on it. Each connection
speaks HTTP CONNECT only: one head of at most `MAX_HEAD` bytes within `HEAD_TIMEOUT`,
`CONNECT host:port HTTP/1.x`. The proxy decides nothing: the first connection asks the
runtime for the capability `mcp.network` (the user's prompt, or the host's policy), and each
asks the gateway to open the connection, which checks it against the manifest and the grant
and dials out (`actors/gateway/_mcp_net`). A refusal is `HTTP/1.1 403` with the runtime's code
in `LineUp-Error`; an opening, `200`, and then the bytes go both ways until either side ends:
the server's as `send` requests (each answered once written: backpressure), the host's as
events, queued here up to `QUEUE` chunks (past that the connection is cut, never grows).
"""

from __future__ import annotations

import base64
import logging
import re
import socket
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import trio

from lineup.actors.kernel import ErrorCode, LineUpError, Message

from . import protocol as p

__all__ = ["HEAD_TIMEOUT", "MAX_HEAD", "McpProxy", "proxy_env"]

log = logging.getLogger("lineup.sdk.mcp")

MAX_HEAD: Final = 8 * 1024
HEAD_TIMEOUT: Final = 10.0
QUEUE: Final = 64  # chunks from the host not yet written to the server
_CONNECT: Final = re.compile(
    rb"^CONNECT ([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5}) HTTP/1\.[01]\r\n"
)
PURPOSE: Final = "Its MCP server connects to the hosts its manifest declares."

M = TypeVar("M", bound=Message)
Call = Callable[[str, Message, type[M]], Awaitable[M]]


def proxy_env(port: int) -> dict[str, str]:
    """The variables that point the server's HTTP clients at the proxy."""
    url = f"http://127.0.0.1:{port}"
    env = {name: url for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")}
    env |= {name.lower(): url for name in env}
    env["NODE_USE_ENV_PROXY"] = "1"  # Node's own fetch honours HTTPS_PROXY with this (v24+)
    return env


class _Refused(Exception):
    def __init__(self, code: str) -> None:
        self.code = code


class McpProxy:
    """One MCP app's proxy (the module's docstring)."""

    def __init__(self, call: Call[Any], instance_id: str, fd: int) -> None:
        self._call = call
        self._instance_id = instance_id
        listening = trio.socket.from_stdlib_socket(socket.socket(fileno=fd))
        self._listener = trio.SocketListener(listening)
        self._inbound: dict[str, trio.MemorySendChannel[bytes | None]] = {}
        self._granted = False
        self._asking = trio.Lock()

    async def run(self) -> None:
        await trio.serve_listeners(self._serve, [self._listener])

    def data(self, msg: p.McpNetDataEvent) -> None:
        self._deliver(msg.connection_id, base64.b64decode(msg.data))

    def closed(self, msg: p.McpNetClosedEvent) -> None:
        self._deliver(msg.connection_id, None)

    def _deliver(self, connection_id: str, chunk: bytes | None) -> None:
        inbound = self._inbound.get(connection_id)
        if inbound is None:
            return  # a late event of a connection already ended
        try:
            inbound.send_nowait(chunk)
        except trio.WouldBlock:  # the server reads slower than the host sends: cut it
            self._inbound.pop(connection_id, None)
            inbound.close()

    async def _serve(self, stream: trio.SocketStream) -> None:
        try:
            await self._serve_one(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the server hung up on its own connection: nothing else is touched
        except Exception as exc:  # one connection's failure ends that connection, not the app
            log.warning("sdk.mcp_net_failed error=%s", type(exc).__name__)

    async def _serve_one(self, stream: trio.SocketStream) -> None:
        async with stream:
            try:
                with trio.fail_after(HEAD_TIMEOUT):
                    host, port, rest = await _read_connect(stream)
                await self._ensure_grant()
                opened = await self._call(
                    "gateway",
                    p.McpNetOpenRequest(instance_id=self._instance_id, host=host, port=port),
                    p.McpNetOpenReply,
                )
            except _Refused as refused:
                await _answer(stream, f"403 Forbidden\r\nLineUp-Error: {refused.code}")
                return
            except LineUpError as exc:
                if exc.code is ErrorCode.PERMISSION_DENIED:
                    self._granted = False  # taken back: the next connection asks again
                await _answer(stream, f"403 Forbidden\r\nLineUp-Error: {exc.code.value}")
                return
            except trio.TooSlowError:
                await _answer(stream, "408 Request Timeout")
                return
            await self._relay(stream, opened.connection_id, rest)

    async def _ensure_grant(self) -> None:
        async with self._asking:  # one prompt at a time; a grant is kept for this process
            if self._granted:
                return
            result = await self._call(
                "gateway",
                p.CapabilityRequest(
                    request_id=f"net-{uuid.uuid4().hex}",
                    instance_id=self._instance_id,
                    capability="mcp.network",
                    purpose=PURPOSE,
                    input={},
                ),
                p.CapabilityResult,
            )
            if result.status != "completed":
                raise _Refused(result.code or result.status)
            self._granted = True

    async def _relay(self, stream: trio.SocketStream, connection_id: str, rest: bytes) -> None:
        inbound_send, inbound = trio.open_memory_channel[bytes | None](QUEUE)
        self._inbound[connection_id] = inbound_send
        try:
            await stream.send_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            async with trio.open_nursery() as nursery:

                async def upstream() -> None:
                    if rest:  # what the server sent right behind its CONNECT
                        await self._send(connection_id, rest)
                    while data := await stream.receive_some(p.MAX_NET_CHUNK):
                        await self._send(connection_id, data)
                    nursery.cancel_scope.cancel()  # the server closed: so does the connection

                nursery.start_soon(upstream)
                async for chunk in inbound:
                    if chunk is None:
                        break
                    await stream.send_all(chunk)
                nursery.cancel_scope.cancel()
        except (trio.BrokenResourceError, trio.ClosedResourceError, LineUpError) as exc:
            log.info("sdk.mcp_net_ended connection=%s error=%s", connection_id, type(exc).__name__)
        finally:
            self._inbound.pop(connection_id, None)
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                try:
                    close = p.McpNetCloseRequest(connection_id=connection_id)
                    await self._call("gateway", close, p.McpNetSent)
                except LineUpError:
                    pass  # ended there already

    async def _send(self, connection_id: str, data: bytes) -> None:
        for start in range(0, len(data), p.MAX_NET_CHUNK):
            chunk = base64.b64encode(data[start : start + p.MAX_NET_CHUNK]).decode()
            request = p.McpNetSendRequest(connection_id=connection_id, data=chunk)
            await self._call("gateway", request, p.McpNetSent)


async def _read_connect(stream: trio.SocketStream) -> tuple[str, int, bytes]:
    head = b""
    while b"\r\n\r\n" not in head:
        if len(head) > MAX_HEAD:
            raise _Refused(ErrorCode.INVALID_ARGUMENTS.value)
        data = await stream.receive_some(MAX_HEAD)
        if not data:
            raise _Refused(ErrorCode.INVALID_ARGUMENTS.value)
        head += data
    head, _, rest = head.partition(b"\r\n\r\n")
    found = _CONNECT.match(head + b"\r\n")
    if found is None or not 0 < int(found.group(2)) < 65536:
        raise _Refused(ErrorCode.INVALID_ARGUMENTS.value)  # CONNECT host:port only
    return found.group(1).decode().lower(), int(found.group(2)), rest


async def _answer(stream: trio.SocketStream, status: str) -> None:
    try:
        await stream.send_all(f"HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n".encode())
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
