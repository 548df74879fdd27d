"""`lineup mcp`: any MCP client can be LineUp's Agent.

An MCP server (the official `mcp` SDK) on the Agent's side of the AppServer: the inventory is
its tools, a `tools/call` is a `lineup.v1.tool.call`, the conversation is two tools and a
resource. The runtime keeps talking to the AppServer alone, as with any other Agent.
"""

from __future__ import annotations

from ._bridge import refusal_code
from ._server import KEEPALIVE_S, Link, McpBridge
from .cli import config_snippet, main

__all__ = ["KEEPALIVE_S", "Link", "McpBridge", "config_snippet", "main", "refusal_code"]
