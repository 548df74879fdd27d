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


@server.tool(description="Through $HTTPS_PROXY: CONNECT host:port, send a line, read one.")
def fetch(host: str, port: int) -> dict[str, str]:
    proxy = os.environ.get("HTTPS_PROXY", "")
    if not proxy.startswith("http://"):
        return {"status": "no-proxy", "error": "", "echo": ""}
    where, _, proxy_port = proxy.removeprefix("http://").rstrip("/").rpartition(":")
    try:
        with socket.create_connection((where, int(proxy_port)), timeout=10) as conn:
            conn.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            reader = conn.makefile("rb")
            status = reader.readline().decode().split(" ")[1]
            error = ""
            while (line := reader.readline().decode().strip()) != "":
                name, _, value = line.partition(":")
                if name.lower() == "lineup-error":
                    error = value.strip()
            if status != "200":
                return {"status": status, "error": error, "echo": ""}
            conn.sendall(b"ping\n")
            return {"status": status, "error": "", "echo": reader.readline().decode().strip()}
    except OSError as exc:
        return {"status": "failed", "error": type(exc).__name__, "echo": ""}


if __name__ == "__main__":
    server.run("stdio")
