"""An MCP `tools/call` of a `direct` tool end to end (MCP client → `lineup mcp` → AppServer →
runtime → MiniApp → back), beside the same call made with the plain `AgentClient` in the same
run: the difference is the bridge's own cost.

A real runtime (embedded AppServer, no demo Agent) with the bench app runs in this process's
trio loop; `python -m lineup mcp` runs in its own, reached over stdio by the official client.
The two kinds of call alternate, one at a time, so both see the same machine.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

import lineup
from lineup import wire
from lineup.ops.agent import AgentClient
from lineup.sdk.manifest import manifest_json
from lineup.sdk.tools import manifest_of

from ._actors import BenchApp
from ._linked import start_embedded

__all__ = ["mcp_vs_agent"]

WAIT_S = 30.0
AGENT, SECRET, CONVERSATION = "demo-agent", "demo-secret", "conv-demo"
# Where `lineup` is importable from, for the bridge's process (the link, not its target).
ROOT = str(Path(lineup.__file__).parent.parent)


async def _terminal(client: AgentClient, cursor: str, call_id: str) -> tuple[dict[str, Any], str]:
    while True:
        page, cursor = await client.sync(cursor, timeout_ms=5_000)
        for message in page:
            if message.get("type") in (wire.RESULT, wire.TOOL_ERROR) and (
                message["payload"].get("call_id") == call_id
            ):
                return message, cursor


async def mcp_vs_agent(rounds: int) -> tuple[list[float], list[float]]:
    """(MCP call latencies, plain AgentClient call latencies), in seconds, `rounds` each."""
    with tempfile.TemporaryDirectory(prefix="lineup-bench-mcp-") as tmp:
        data_dir = Path(tmp) / "rt"
        data_dir.mkdir(mode=0o700)
        manifest = Path(tmp) / "bench.json"
        manifest.write_text(manifest_json(manifest_of(BenchApp)))
        app = {
            "app_scope": "bench",
            "manifest": str(manifest),
            "entry": "lineup.ops.bench._actors:BenchApp",
            "title": "Bench",
        }
        async with trio.open_nursery() as nursery:
            plan = await start_embedded(nursery, data_dir, (app,))
            try:
                return await _measure(plan.appserver_url, data_dir, rounds)
            finally:
                nursery.cancel_scope.cancel()


async def _measure(url: str, data_dir: Path, rounds: int) -> tuple[list[float], list[float]]:
    env = {**os.environ, "PYTHONPATH": ROOT}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "lineup", "mcp", "--data-dir", str(data_dir)],
        env=env,
    )
    mcp_times: list[float] = []
    agent_times: list[float] = []
    async with AgentClient(url) as client:
        await client.login(AGENT, SECRET)
        with open(os.devnull, "w") as errlog:  # noqa: ASYNC230 - the bridge's stderr, unread
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                with trio.fail_after(WAIT_S):
                    await session.initialize()
                    await session.list_tools()
                    # An instance for the direct tool to reach.
                    await _opened(session)
                cursor = ""
                page, cursor = await client.sync(cursor, timeout_ms=0)
                while page:
                    page, cursor = await client.sync(cursor, timeout_ms=0)
                revision = await _revision(client)
                for n in range(rounds):
                    with trio.fail_after(WAIT_S):
                        start = time.perf_counter()
                        result = await session.call_tool("bench.echo", {"text": f"m{n}"})
                        mcp_times.append(time.perf_counter() - start)
                        assert not result.is_error

                        start = time.perf_counter()
                        sent = await client.call_tool(
                            CONVERSATION, "bench.echo", {"text": f"a{n}"}, revision
                        )
                        _final, cursor = await _terminal(client, cursor, sent["call_id"])
                        agent_times.append(time.perf_counter() - start)
    return mcp_times, agent_times


async def _opened(session: ClientSession) -> None:
    async with trio.open_nursery() as nursery:
        # The launch tool answers at once (bench.open returns its input).
        nursery.start_soon(session.call_tool, "bench.open", {"text": "x"})


async def _revision(client: AgentClient) -> str:
    cursor, revision = "", None
    while True:
        page, cursor = await client.sync(cursor, timeout_ms=0)
        for message in page:
            if message.get("type") == wire.INVENTORY:
                revision = message["payload"]["revision"]
        if not page:
            assert revision is not None
            return str(revision)
