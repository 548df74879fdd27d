"""A server nobody here wrote, unchanged (issue 31): `@modelcontextprotocol/server-everything`,
fetched pinned and integrity-checked (`tests/support/npm.py`), a Node server, listed inside the
`mcp` sandbox as `lineup run --dev-mcp` does (V8 under the profile's memory bound, offline),
and called by the Agent through the runtime: plain content, structured content checked against
its declared output schema, progress. Real processes: the tree, the adapter, Node."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.npm import NpmPackage, installed
from lineup.tests.support.runtime import CONVERSATION, agent_client, start_runtime
from lineup.tests.support.session_builds import shared_dev_mcp

EVERYTHING = NpmPackage(
    "@modelcontextprotocol/server-everything",
    "2026.8.31",
    "sha512-5U3OZh8Xq0Li4nA26l6uNvV9/1suMDuWSn+NjLZIhzinhMY6N3A4DCrxVecBGPf2PsNFKTEv5krxGPRwzxc7jQ==",
)
ENTRY = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
SCOPE = "mcp-servers-everything"  # its serverInfo.name, `mcp-servers/everything`
RESULT = "lineup.v1.tool.result"
pytestmark = [
    pytest.mark.timeout(300),
]


def everything_entry(factory: pytest.TempPathFactory, data_dir: Path) -> dict[str, str]:
    """The everything server's registry entry in `data_dir / "rt"`, as `lineup run --dev-mcp`
    makes it (its listing, in the sandbox, once per session: `shared_dev_mcp`)."""
    installed(EVERYTHING)
    rt = data_dir / "rt"
    rt.mkdir(mode=0o700, parents=True)
    return shared_dev_mcp(factory, EVERYTHING.folder, ["node", ENTRY, "stdio"], rt)


async def test_the_everything_server_runs_sandboxed_and_answers_the_agent(
    data_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    rt = data_dir / "rt"
    entry = await trio.to_thread.run_sync(everything_entry, tmp_path_factory, data_dir)
    async with trio.open_nursery() as nursery:
        runtime = await start_runtime(nursery, rt, extra_apps=(entry,), demo_agent=False)
        agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=60.0)
        revision = await agent.revision_with(f"{SCOPE}.echo")

        async def call(call_id: str, tool: str, args: dict[str, object]) -> dict[str, object]:
            await agent.client.call_tool(
                CONVERSATION, f"{SCOPE}.{tool}", args, revision, call_id=call_id
            )
            done = await agent.terminal(call_id)
            assert done["type"] == RESULT, done
            result: dict[str, object] = done["payload"]["result"]
            return result

        echoed = await call("echo-1", "echo", {"message": "hi"})
        assert echoed == {"content": [{"type": "text", "text": "Echo: hi"}]}
        weather = await call("weather-1", "get-structured-content", {"location": "Chicago"})
        assert {"temperature", "conditions", "humidity"} <= set(weather)
        await call("long-1", "trigger-long-running-operation", {"duration": 1, "steps": 2})
        steps = agent.of_call("long-1", "lineup.v1.tool.progress")
        progressed = [m["payload"]["progress"]["progress"] for m in steps]
        # The router writes a call's reports at most PROGRESS_RATE a second, the latest held
        # meanwhile and dropped by the outcome (`_app_calls`): the first always reaches the
        # Agent, and what follows comes in order. Both, or the first alone, is the machine's pace.
        assert progressed in ([1, 2], [1]), progressed
        await agent.settle()
        for call_id in ("echo-1", "weather-1", "long-1"):
            assert len(agent.of_call(call_id, RESULT, "lineup.v1.tool.error")) == 1
        nursery.cancel_scope.cancel()
