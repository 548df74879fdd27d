"""The gateway's side of an MCP server's connections (`_mcp_net`): a declared name must resolve
to a public address, an IP literal is dialled as declared, and a grant taken back ends the
app's connections at once. The relay's events go to a fake bus here; the whole path, through
real processes, is tests/e2e/test_mcp_network.py."""

from __future__ import annotations

from typing import cast

import pytest
import trio

from lineup.actors.gateway._mcp_net import McpConnections, NotPublic, _address_of
from lineup.actors.kernel import AuditRecord, Bus, ErrorCode, LineUpError, Message
from lineup.sdk import protocol as p


async def test_a_declared_name_that_resolves_to_this_computer_is_refused() -> None:
    with pytest.raises(NotPublic):
        await _address_of("localhost", 443)


async def test_an_ip_literal_is_dialled_as_declared() -> None:
    assert await _address_of("127.0.0.1", 443) == "127.0.0.1"
    assert await _address_of("[::1]", 443) == "::1"


class _Bus:
    def __init__(self) -> None:
        self.audited: list[AuditRecord] = []
        self.told: list[Message] = []

    def audit(self, record: AuditRecord) -> None:
        self.audited.append(record)

    async def tell(self, peer: str, body: Message, *, timeout: float) -> None:
        self.told.append(body)


async def test_taking_the_grant_back_ends_open_connections_and_refuses_the_next() -> None:
    bus = _Bus()
    connections = McpConnections(cast(Bus, bus), "gateway")
    async with trio.open_nursery() as nursery:
        listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
        port = listener.socket.getsockname()[1]
        declared = (f"127.0.0.1:{port}",)
        asked = p.McpNetOpenRequest(instance_id="i-1", host="127.0.0.1", port=port)
        connections.grant("net", "i-1")
        opened = await connections.open("net", asked, declared, nursery)
        async with listener, await listener.accept() as host_side:
            connections.revoke("net")
            with trio.fail_after(5):
                assert await host_side.receive_some(10) == b""  # ended by the runtime
            with pytest.raises(LineUpError) as refused:
                await connections.open("net", asked, declared, nursery)
        nursery.cancel_scope.cancel()
    assert bus.told == [p.McpNetClosedEvent(connection_id=opened.connection_id)]
    assert refused.value.code is ErrorCode.PERMISSION_DENIED
    assert [(r.event, r.code) for r in bus.audited] == [
        ("gateway.mcp_net_opened", None),
        ("gateway.mcp_net_refused", "permission_denied"),
    ]
