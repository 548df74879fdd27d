"""A server nobody here wrote, unchanged (issue 31): `@modelcontextprotocol/server-everything`,
fetched pinned and integrity-checked (`tests/support/npm.py`), a Node server, listed inside the
`mcp` sandbox as `lineup run --dev-mcp` does (V8 under the profile's memory bound, offline),
and called by the Agent through the runtime: plain content, structured content checked against
its declared output schema, progress; Node itself confined as our own server is, and a SIGKILL
of it mid-call ending that call once, the next call answered. Real processes: the tree, the
adapter, Node."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import trio

from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.npm import NpmPackage, installed
from lineup.tests.support.process import wait_pid_gone
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
    """Over ten seconds on a fresh clone, by what it proves: the published everything server
    (Node, fetched from npm once a session) listed and run in the sandbox by a real tree, and
    a long-running operation of its own reporting progress."""
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

        # A SIGKILL of Node mid-call: that call ends once, and the next call gets a new server.
        await agent.client.call_tool(
            CONVERSATION,
            f"{SCOPE}.trigger-long-running-operation",
            {"duration": 60, "steps": 60},
            revision,
            call_id="long-2",
        )
        await agent.pull(
            "lineup.v1.tool.progress", lambda m: m["payload"].get("call_id") == "long-2"
        )
        adapter = runtime.supervisor.children[f"miniapp:{SCOPE}"].pid
        assert adapter is not None
        node = _child_of(adapter)
        # Node runs under the adapter's sandbox: its seccomp filter, no new privileges, and a
        # network namespace that is not ours (what it may read is Landlock's, proven with our
        # own server, which that same adapter starts the same way: `test_mcp_app.py`).
        status = Path(f"/proc/{node}/status").read_text()
        assert "\nSeccomp:\t2\n" in status and "\nNoNewPrivs:\t1\n" in status
        assert os.readlink(f"/proc/{node}/ns/net") != os.readlink("/proc/self/ns/net")
        os.kill(node, signal.SIGKILL)
        await wait_pid_gone(node)
        ended = await agent.terminal("long-2")
        assert (ended["type"], ended["payload"]["code"]) == (
            "lineup.v1.tool.error",
            "mcp_server_exited",
        )
        again = await call("echo-2", "echo", {"message": "again"})
        assert again == {"content": [{"type": "text", "text": "Echo: again"}]}
        await agent.settle()
        assert len(agent.of_call("long-2", RESULT, "lineup.v1.tool.error")) == 1
        nursery.cancel_scope.cancel()


def _child_of(parent: int) -> int:
    """The one process whose parent is `parent` (the adapter's server)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:  # it ended meanwhile
                continue
            if f"\nPPid:\t{parent}\n" in status:
                found.append(int(entry.name))
    assert len(found) == 1, found
    return found[0]
