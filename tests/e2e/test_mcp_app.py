"""An MCP server run as a LineUp app (issue 31): our own small server (`tests/support/mcp_server`,
built with the official SDK) is listed in its sandbox as `lineup run --dev-mcp` does, its tools
enter the inventory under its scope, and the Agent calls them through the runtime: one result
per call, `isError` as a tool error, progress, the sandbox's claims, a SIGKILL of the server
mid-call. Real processes throughout: the tree, the adapter and the server it starts, the Agent
over HTTP. The listing is done once per session (`shared_dev_mcp`): these tests are about
what runs after it, which `tests/e2e/test_mcp_ui_probe.py` and the docs prove."""

from __future__ import annotations

import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.process import wait_pid_gone
from lineup.tests.support.runtime import CONVERSATION, Runtime, agent_client, start_runtime
from lineup.tests.support.session_builds import shared_dev_mcp

SERVER = Path(__file__).resolve().parents[1] / "support" / "mcp_server"
SCOPE = "our-test-server"
ERROR = "lineup.v1.tool.error"
LOG_POLL = 0.05
pytestmark = pytest.mark.timeout(120)


def our_server(factory: pytest.TempPathFactory, data_dir: Path) -> dict[str, str]:
    """Our server's registry entry in `data_dir / "rt"`, as `lineup run --dev-mcp` makes it."""
    rt = data_dir / "rt"
    rt.mkdir(mode=0o700, parents=True)
    return shared_dev_mcp(factory, SERVER, [sys.executable, "server.py"], rt)


@pytest.fixture
def server_entry(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> dict[str, str]:
    return our_server(tmp_path_factory, data_dir)


async def _runtime_with_server(
    nursery: trio.Nursery, data_dir: Path, entry: dict[str, str]
) -> tuple[AgentView, str]:
    agent, revision, _runtime = await _runtime_and_server(nursery, data_dir, entry)
    return agent, revision


async def _runtime_and_server(
    nursery: trio.Nursery, data_dir: Path, entry: dict[str, str]
) -> tuple[AgentView, str, Runtime]:
    rt = data_dir / "rt"
    runtime = await start_runtime(nursery, rt, extra_apps=(entry,), demo_agent=False)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=40.0)
    return agent, await agent.revision_with(f"{SCOPE}.add"), runtime


async def _call(
    agent: AgentView, revision: str, call_id: str, tool: str, args: dict[str, Any]
) -> Any:
    await agent.client.call_tool(CONVERSATION, f"{SCOPE}.{tool}", args, revision, call_id=call_id)
    return await agent.terminal(call_id)


async def _logged(log: Path, line: str, *, within: float = 20.0) -> None:
    """Wait until the app's log file has `line`: the supervisor appends at its own pace, and
    a file has no event to wait on, so the condition is polled, within a deadline."""
    for _ in range(int(within / LOG_POLL)):
        if log.is_file() and line in log.read_text():
            return
        await trio.sleep(LOG_POLL)
    raise AssertionError(f"not in {log.name} within {within}s")


async def test_the_agent_calls_the_servers_tools_in_its_sandbox_and_gets_those_it_adds(
    data_dir: Path, server_entry: dict[str, str]
) -> None:
    """What the Agent sees and gets, what the server cannot reach, then the tool it adds: one
    tree for the three (none changes what one before it needs)."""
    async with trio.open_nursery() as nursery:
        agent, revision = await _runtime_with_server(nursery, data_dir, server_entry)
        await _the_agent_sees_the_tools_and_gets_one_result_per_call(agent, revision)
        await _the_server_cannot_read_home_or_another_apps_files_nor_connect(
            agent, revision, data_dir
        )
        await _the_servers_list_changed_is_a_new_inventory_revision_with_its_new_tool(
            agent, revision
        )
        nursery.cancel_scope.cancel()


async def _the_servers_list_changed_is_a_new_inventory_revision_with_its_new_tool(
    agent: AgentView, revision: str
) -> None:
    grown = await _call(agent, revision, "grow-1", "grow", {})
    assert grown["payload"]["result"] == {"result": "grown"}
    newer = await agent.revision_with(f"{SCOPE}.extra")
    assert newer != revision
    done = await _call(agent, newer, "extra-1", "extra", {"word": "hi"})
    assert done["payload"]["result"] == {"result": "HI"}


async def _the_agent_sees_the_tools_and_gets_one_result_per_call(
    agent: AgentView, revision: str
) -> None:
    inventory = [m for m in agent.seen if m["type"] == "lineup.v1.client.inventory"][-1]
    ours = {t["method"]: t for t in inventory["payload"]["tools"] if t["app_scope"] == SCOPE}
    # Every tool under the app's scope; `getTime`, which LineUp's rule refuses as written,
    # under its mapped name.
    assert set(ours) == {
        f"{SCOPE}.{n}"
        for n in (
            *("add", "fail", "slow", "nap", "probe", "ask_model", "grow", "get_time"),
            *("ask", "ask_url", "client_elicitation", "garble"),
        )
    }
    assert ours[f"{SCOPE}.add"]["input_schema"]["required"] == ["a", "b"]

    done = await _call(agent, revision, "add-1", "add", {"a": 2, "b": 3})
    assert (done["type"], done["payload"]["result"]) == ("lineup.v1.tool.result", {"result": 5})
    timed = await _call(agent, revision, "time-1", "get_time", {})
    assert timed["payload"]["result"] == {"result": "12:00"}
    # The runtime checks the input by the declared schema before the server sees it.
    bad = await _call(agent, revision, "add-2", "add", {"a": "two", "b": 3})
    assert (bad["type"], bad["payload"]["code"]) == (ERROR, "tool_input_invalid")
    failed = await _call(agent, revision, "fail-1", "fail", {"reason": "no"})
    assert (failed["type"], failed["payload"]["code"]) == (ERROR, "mcp_tool_error")
    # The server asks LineUp for a model: refused with a clear code, the call goes on.
    asked = await _call(agent, revision, "ask-1", "ask_model", {"question": "hi?"})
    assert "mcp_sampling_unsupported" in asked["payload"]["result"]["result"]
    await agent.settle()
    for call_id in ("add-1", "time-1", "add-2", "fail-1", "ask-1"):
        assert len(agent.of_call(call_id, "lineup.v1.tool.result", "lineup.v1.tool.error")) == 1


async def _the_server_cannot_read_home_or_another_apps_files_nor_connect(
    agent: AgentView, revision: str, data_dir: Path
) -> None:
    other = data_dir / "rt" / "apps" / "task-dashboard"
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        other.mkdir(parents=True, exist_ok=True)
        (other / "secret").write_text("not yours")
        home = Path.home() / ".bashrc"
        assert home.is_file()  # the claim is about a file that exists
        seen = {}
        for call_id, path in (("home", home), ("other", other / "secret")):
            done = await _call(
                agent,
                revision,
                call_id,
                "probe",
                {"path": str(path), "host": "127.0.0.1", "port": port},
            )
            seen[call_id] = done["payload"]["result"]
        # Its own folder is readable (it runs from there).
        own = await _call(agent, revision, "own", "probe", {"path": str(SERVER / "server.py")})
    assert seen["home"]["read"] == seen["other"]["read"] == "PermissionError"
    assert seen["home"]["connect"] == "PermissionError"  # seccomp: no socket at all
    assert own["payload"]["result"]["read"] == "ok"
    assert seen["home"]["pid"] != str(os.getpid())


async def test_a_sigkill_of_the_server_mid_call_ends_that_call_once_and_the_next_call_works(
    data_dir: Path, server_entry: dict[str, str]
) -> None:
    """Then the same of a server that writes garbage on its stdout mid-call (one tree for
    both: each ends with a fresh server)."""
    async with trio.open_nursery() as nursery:
        agent, revision = await _runtime_with_server(nursery, data_dir, server_entry)
        probed = await _call(agent, revision, "pid", "probe", {"path": "/dev/null"})
        pid = int(probed["payload"]["result"]["pid"])
        await agent.client.call_tool(
            CONVERSATION, f"{SCOPE}.slow", {"steps": 2}, revision, call_id="slow-1"
        )
        progress = await agent.pull(
            "lineup.v1.tool.progress", lambda m: m["payload"].get("call_id") == "slow-1"
        )
        assert progress["payload"]["progress"]["total"] == 2
        # Its `notifications/message` is in the app's log, as `lineup logs` prints it.
        await _logged(data_dir / "rt" / "logs" / f"{SCOPE}.log", "mcp info: slow started")
        os.kill(pid, signal.SIGKILL)
        ended = await agent.terminal("slow-1")
        assert (ended["type"], ended["payload"]["code"]) == (ERROR, "mcp_server_exited")
        again = await _call(agent, revision, "add-after", "add", {"a": 1, "b": 1})
        assert again["payload"]["result"] == {"result": 2}
        await agent.settle()
        assert len(agent.of_call("slow-1", "lineup.v1.tool.result", "lineup.v1.tool.error")) == 1

        # A line that is not JSON-RPC on its stdout: the server is broken, ended as if killed.
        await agent.client.call_tool(
            CONVERSATION, f"{SCOPE}.garble", {}, revision, call_id="garble-1"
        )
        ended = await agent.terminal("garble-1")
        assert (ended["type"], ended["payload"]["code"]) == (ERROR, "mcp_server_exited")
        again = await _call(agent, revision, "add-after-garble", "add", {"a": 2, "b": 5})
        assert again["payload"]["result"] == {"result": 7}
        await agent.settle()
        assert len(agent.of_call("garble-1", "lineup.v1.tool.result", ERROR)) == 1
        nursery.cancel_scope.cancel()


async def test_a_sigkill_of_the_adapter_mid_call_ends_that_call_once_and_the_next_call_works(
    data_dir: Path, server_entry: dict[str, str]
) -> None:
    async with trio.open_nursery() as nursery:
        agent, revision, runtime = await _runtime_and_server(nursery, data_dir, server_entry)
        await agent.client.call_tool(
            CONVERSATION, f"{SCOPE}.nap", {"seconds": 1.0}, revision, call_id="nap-1"
        )
        await agent.pull(
            "lineup.v1.tool.progress", lambda m: m["payload"].get("call_id") == "nap-1"
        )
        adapter = runtime.supervisor.children[f"miniapp:{SCOPE}"].pid
        assert adapter is not None
        os.kill(adapter, signal.SIGKILL)
        await wait_pid_gone(adapter)
        # The restarted app takes the call it had accepted again (at least once, as for every
        # app): its new server runs it, and the Agent gets one terminal.
        ended = await agent.terminal("nap-1")
        assert (ended["type"], ended["payload"]["result"]) == (
            "lineup.v1.tool.result",
            {"result": "rested"},
        )
        again = await _call(agent, revision, "add-after", "add", {"a": 2, "b": 2})
        assert again["payload"]["result"] == {"result": 4}
        await agent.settle()
        assert len(agent.of_call("nap-1", "lineup.v1.tool.result", ERROR)) == 1
        nursery.cancel_scope.cancel()
