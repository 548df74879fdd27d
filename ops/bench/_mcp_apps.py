"""An MCP server run as a LineUp app (issue 31), measured beside the same server without LineUp.

- A tool call: the Agent → AppServer → runtime → the app's adapter → the sandboxed server →
  the result committed and seen by the Agent, beside the same tool called by the official MCP
  client straight to the same server over stdio, unsandboxed, in the same run; one at a time,
  alternated, so both see the same machine. The difference is LineUp's cost for durability,
  audit and the sandbox.
- A start: the server started in its sandbox until its first `tools/list` is answered (what
  `lineup run --dev-mcp` does once: a fresh interpreter confines itself, starts the server,
  lists), beside a fresh interpreter starting the same server with the official client, no
  sandbox, until the same answer.

The server is the suite's own (`tests/support/mcp_server`, the official SDK's `MCPServer`), its
tool `add`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

import trio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

import lineup
from lineup.ops.agent import AgentClient
from lineup.supervisor._mcp_probe import dev_mcp

from ._linked import start_embedded
from ._mcp import _revision, _terminal

__all__ = ["mcp_app_calls", "mcp_app_starts"]

SERVER: Final = Path(lineup.__file__).parent / "tests" / "support" / "mcp_server"
COMMAND: Final = [sys.executable, "server.py"]
WAIT_S: Final = 30.0
AGENT, SECRET, CONVERSATION = "demo-agent", "demo-secret", "conv-demo"
# A fresh interpreter, the official client, the server unsandboxed, until its tools are listed.
PLAIN_START: Final = """
import sys
import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

async def main():
    params = StdioServerParameters(command=sys.executable, args=["server.py"], cwd=sys.argv[1])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()

anyio.run(main, backend="trio")
"""


async def mcp_app_calls(rounds: int) -> tuple[list[float], list[float]]:
    """(through LineUp, straight to the server) call latencies in seconds, `rounds` each."""
    with tempfile.TemporaryDirectory(prefix="lineup-bench-mcp-app-") as tmp:
        data_dir = Path(tmp) / "rt"
        data_dir.mkdir(mode=0o700)
        entry = await trio.to_thread.run_sync(dev_mcp, SERVER, COMMAND, data_dir)
        tool = f"{entry['app_scope']}.add"
        async with trio.open_nursery() as nursery:
            plan = await start_embedded(nursery, data_dir, (entry,))
            try:
                return await _measure(plan.appserver_url, tool, rounds)
            finally:
                nursery.cancel_scope.cancel()


async def _measure(url: str, tool: str, rounds: int) -> tuple[list[float], list[float]]:
    params = StdioServerParameters(command=COMMAND[0], args=COMMAND[1:], cwd=str(SERVER))
    through: list[float] = []
    straight: list[float] = []
    async with AgentClient(url) as client:
        await client.login(AGENT, SECRET)
        with open(os.devnull, "w") as errlog:  # noqa: ASYNC230 - the server's stderr, unread
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                with trio.fail_after(WAIT_S):
                    await session.initialize()
                    revision = await _revision(client)
                    cursor = ""
                    # The first call starts the app's process and its server: not timed.
                    sent = await client.call_tool(CONVERSATION, tool, {"a": 0, "b": 0}, revision)
                    _final, cursor = await _terminal(client, cursor, sent["call_id"])
                for n in range(rounds):
                    with trio.fail_after(WAIT_S):
                        start = time.perf_counter()
                        result = await session.call_tool("add", {"a": n, "b": 1})
                        straight.append(time.perf_counter() - start)
                        assert not result.is_error

                        args = {"a": n, "b": 1}
                        start = time.perf_counter()
                        sent = await client.call_tool(CONVERSATION, tool, args, revision)
                        final, cursor = await _terminal(client, cursor, sent["call_id"])
                        through.append(time.perf_counter() - start)
                        assert final["payload"].get("result") is not None, final
    return through, straight


def mcp_app_starts(rounds: int) -> tuple[list[float], list[float]]:
    """(sandboxed, plain) start → first tools/list answered, in seconds, `rounds` each,
    alternated."""
    sandboxed: list[float] = []
    plain: list[float] = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="lineup-bench-mcp-start-") as tmp:
            start = time.perf_counter()
            dev_mcp(SERVER, COMMAND, Path(tmp))
            sandboxed.append(time.perf_counter() - start)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", PLAIN_START, str(SERVER)],
            check=True,
            capture_output=True,
            timeout=WAIT_S,
        )
        plain.append(time.perf_counter() - start)
    return sandboxed, plain
