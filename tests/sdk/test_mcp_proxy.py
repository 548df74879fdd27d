"""The CONNECT proxy of an MCP app's adapter (`lineup.sdk._mcp_proxy`), against a fake runtime:
it speaks CONNECT only, answers a refusal with the runtime's code, and a connection that
breaks touches no other."""

from __future__ import annotations

import socket
import struct
from typing import Any

import trio

from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.sdk import protocol as p
from lineup.sdk._mcp_proxy import McpProxy


class _Runtime:
    """Grants `mcp.network`, refuses every open with `mcp_network_undeclared`."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def call(self, peer: str, request: Message, expect: type[Any]) -> Any:
        self.asked.append(request.TYPE)
        if isinstance(request, p.CapabilityRequest):
            return p.CapabilityResult(
                request_id=request.request_id, capability=request.capability, status="completed"
            )
        raise LineUpError(ErrorCode.MCP_NETWORK_UNDECLARED, "mcp.network")


async def _exchange(port: int, data: bytes) -> bytes:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(data)
        answer = b""
        while chunk := await stream.receive_some(1024):
            answer += chunk
        return answer


async def test_a_refusal_is_a_403_with_the_code_and_a_broken_client_harms_no_other() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    runtime = _Runtime()
    proxy = McpProxy(runtime.call, "inst-1", listener.detach())
    async with trio.open_nursery() as nursery:
        nursery.start_soon(proxy.run)
        # A client that resets its connection (RST) before it says anything.
        rude = await trio.open_tcp_stream("127.0.0.1", port)
        rude.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        rude.socket.close()
        not_connect = await _exchange(port, b"GET http://example.com/ HTTP/1.1\r\n\r\n")
        refused = await _exchange(port, b"CONNECT api.example.com:443 HTTP/1.1\r\n\r\n")
        nursery.cancel_scope.cancel()
    assert not_connect.startswith(b"HTTP/1.1 403 ")
    assert b"LineUp-Error: invalid_arguments\r\n" in not_connect
    assert refused.startswith(b"HTTP/1.1 403 ")
    assert b"LineUp-Error: mcp_network_undeclared\r\n" in refused
    assert runtime.asked == ["gateway.sdk.capability.request", "gateway.sdk.mcp_net.open"]
