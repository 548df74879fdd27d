"""The drill's MCP server (the official SDK's `MCPServer` over stdio), run as an MCP app in the
drilled tree (`lineup run --dev-mcp`, `ops/drill/_mcp_apps.py`). It imports only the `mcp` SDK
and the standard library, as a server a user brings would: `echo` answers the number it is
given at once, `nap` after a short sleep (so that a kill finds calls in flight).
"""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

server = MCPServer("drillmcp")


class Numbered(BaseModel):
    n: int


@server.tool(description="Answer the number at once.")
def echo(n: int) -> Numbered:
    return Numbered(n=n)


@server.tool(description="Answer the number after `ms` milliseconds.")
async def nap(n: int, ms: int) -> Numbered:
    await anyio.sleep(min(max(ms, 0), 5000) / 1000)
    return Numbered(n=n)


if __name__ == "__main__":
    server.run("stdio")
