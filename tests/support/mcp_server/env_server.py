"""A second small MCP server of our own, for what a server is given by the runtime: its
environment (an imported server's secrets, `lineup app import-mcp`). It answers whether a
variable is set and the SHA-256 of its value, never the value itself, so that no test output
ever holds a secret. Imports only the `mcp` SDK and the standard library.
"""

from __future__ import annotations

import hashlib
import os
import socket

from mcp.server.mcpserver import MCPServer

server = MCPServer("Our Env Server")


@server.tool(description="Whether the variable `name` is set here, and its value's SHA-256.")
def has_env(name: str) -> dict[str, str]:
    value = os.environ.get(name)
    if value is None:
        return {"set": "no", "sha256": ""}
    return {"set": "yes", "sha256": hashlib.sha256(value.encode()).hexdigest()}


@server.tool(description="Open a TCP connection to host:port; say how it went.")
def connect(host: str, port: int) -> dict[str, str]:
    try:
        with socket.create_connection((host, port), timeout=5):
            return {"connect": "ok"}
    except OSError as exc:
        return {"connect": type(exc).__name__}


if __name__ == "__main__":
    server.run("stdio")
