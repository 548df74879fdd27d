"""What the sandbox and the SDK's MCP adapter share of an MCP server's network (no I/O; see
`lineup.sdk.mcp_network`)."""

from __future__ import annotations

from typing import Final

__all__ = ["PROXY_FD_ENV"]

# `FD:PORT`: the proxy's listening socket the sandbox made in the server's network namespace,
# for the adapter (`lineup.supervisor._sandbox`, `lineup.sdk._mcp_host`).
PROXY_FD_ENV: Final = "LINEUP_MCP_PROXY_FD"
