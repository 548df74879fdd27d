"""The gateway's address rule for an MCP server's declared host (`_mcp_net`): a declared name
must resolve to a public address; an IP literal is dialled as declared."""

from __future__ import annotations

import pytest

from lineup.actors.gateway._mcp_net import NotPublic, _address_of


async def test_a_declared_name_that_resolves_to_this_computer_is_refused() -> None:
    with pytest.raises(NotPublic):
        await _address_of("localhost", 443)


async def test_an_ip_literal_is_dialled_as_declared() -> None:
    assert await _address_of("127.0.0.1", 443) == "127.0.0.1"
    assert await _address_of("[::1]", 443) == "::1"
