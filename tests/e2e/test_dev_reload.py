"""Reload on save, through a real `lineup run --dev-app PATH` (its own process, the embedded
AppServer, the sandboxed app process) and a real Agent: an edit of the app's code restarts the
app's process, a tool added reaches the Agent as a new inventory revision, and a broken edit is
one line in the terminal while the version before keeps answering. Focus reloads only a
development app, of the scope it runs, asked by the watcher alone. The waits are on what the
runtime prints and what the Agent is sent, each bounded; no sleeps."""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.actors.focus.messages import DevAppReloadReply, DevAppReloadRequest
from lineup.actors.kernel import ActorKind, Bus, ErrorCode, LineUpError
from lineup.supervisor._runtime import RuntimeOptions, plan_runtime
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.cli import lineup
from lineup.tests.support.process import LineupProcess
from lineup.tests.support.reload_app import (
    BROKEN,
    FIRST,
    OTHER_SCOPE,
    REWORDED,
    SCOPE,
    WITH_WAVE,
    write_dev_app,
)
from lineup.tests.support.runtime import (
    CONVERSATION,
    Runtime,
    agent_client,
    supervise,
)
from lineup.tests.support.tree import attach

WAIT = 30.0
INVENTORY = "lineup.v1.client.inventory"


def too_new(manifest_text: str) -> str:
    """The manifest, asking for a LineUp far newer than this one."""
    manifest = json.loads(manifest_text)
    manifest["host"]["min_version"] = "99.0.0"
    return json.dumps(manifest)


class DevRun:
    def __init__(self, process: LineupProcess, folder: Path, data: Path, agent: AgentView):
        self.process, self.folder, self.data, self.agent = process, folder, data, agent

    async def line(self, needle: str) -> str:
        with trio.fail_after(WAIT):
            return await self.process.wait_for_line(needle)

    async def call(self, tool: str, name: str, revision: str, call_id: str) -> dict[str, Any]:
        await self.agent.client.call_tool(
            CONVERSATION, tool, {"name": name}, revision, call_id=call_id
        )
        return await self.agent.terminal(call_id)

    def app_pid(self) -> int | None:
        """The app's pid, as `lineup status --json` says (its `main`, in this process)."""
        status = lineup("status", "--json", "--data-dir", str(self.data))
        children = json.loads(status.stdout)["children"]
        assert isinstance(children, list)
        child = next((c for c in children if c["name"] == f"miniapp:{SCOPE}"), None)
        return None if child is None else child["pid"]


@pytest.fixture
async def dev_run(nursery: trio.Nursery, data_dir: Path) -> AsyncIterator[DevRun]:
    folder = write_dev_app(data_dir / "apps" / "hello_dev")
    data = data_dir / "rt"
    process = await LineupProcess.start(
        "run", "--data-dir", str(data), "--dev-app", str(folder), "--no-demo-agent"
    )
    try:
        with trio.fail_after(WAIT):
            url = (await process.wait_for_line("reference AppServer: ")).rpartition(" ")[2]
        agent = AgentView(await agent_client(nursery, url), wait_s=WAIT)
        yield DevRun(process, folder, data, agent)
        # The watcher stops with the tree: a clean stop, exit status 0.
        process.signal(signal.SIGTERM)
        with trio.fail_after(WAIT):
            await process.wait_for_line("lineup: stopped")
            assert await process.wait() == 0
    finally:
        process.kill()


def methods(message: dict[str, Any]) -> set[str]:
    return {tool["method"] for tool in message["payload"]["tools"]}


async def test_a_tool_added_to_a_running_dev_app_reaches_the_agent_as_a_new_revision(
    dev_run: DevRun,
) -> None:
    """Three seconds quiet, over ten on a loaded machine, by what it is about: two edits of a
    real dev app, each one a manifest generated in a subprocess, the app's process started
    again, and the inventory read back by a real Agent."""
    s = dev_run
    first = await s.agent.inventory()
    assert (await s.call("hello.greet", "ann", first, "g-1"))["payload"]["result"] == {
        "text": "hello ann"
    }
    pid = s.app_pid()
    assert pid is not None

    # The code changes, the tools do not: the process restarts, the revision stays.
    write_dev_app(s.folder, REWORDED)
    await s.line(f"lineup: dev app {s.folder}: {SCOPE} reloaded")
    assert await s.agent.inventory() == first
    assert (await s.call("hello.greet", "bo", first, "g-2"))["payload"]["result"] == {
        "text": "hi bo"
    }
    restarted = s.app_pid()
    assert restarted is not None and restarted != pid

    # A tool added: a new revision with it, which the Agent calls.
    write_dev_app(s.folder, WITH_WAVE)
    line = await s.line(f"lineup: dev app {s.folder}: {SCOPE} reloaded")
    told = await s.agent.pull(INVENTORY, lambda m: "hello.wave" in methods(m))
    second = str(told["payload"]["revision"])
    assert second != first and int(second) > int(first)
    assert line.endswith(f"inventory revision {second}")
    assert methods(told) >= {"hello.greet", "hello.wave"}
    written = json.loads((s.folder / "manifest.json").read_text())
    assert {tool["method"] for tool in written["tools"]} == {"hello.greet", "hello.wave"}
    wave = await s.call("hello.wave", "cy", second, "w-1")
    assert wave["payload"]["result"] == {"text": "wave to cy"}
    stale = await s.call("hello.greet", "di", first, "g-3")  # the old revision is refused
    assert stale["payload"]["code"] == "inventory_revision_mismatch"


async def test_a_broken_edit_is_printed_with_its_place_and_the_old_version_keeps_running(
    dev_run: DevRun,
) -> None:
    """Four seconds quiet, over ten on a loaded machine, by what it is about: a broken edit,
    then a fixed one, of a real dev app, each generated in a subprocess, with a real call
    made to the version that keeps running in between."""
    s = dev_run
    revision = await s.agent.inventory()
    assert (await s.call("hello.greet", "ann", revision, "g-1"))["payload"]["result"] == {
        "text": "hello ann"
    }
    pid = s.app_pid()
    manifest = (s.folder / "manifest.json").read_text()

    write_dev_app(s.folder, BROKEN)
    line = await s.line(f"lineup: dev app {s.folder}: ")
    assert line.startswith(f"lineup: dev app {s.folder}: app_import_failed hello_dev: SyntaxError")
    assert "__init__.py, line" in line  # where it is
    # Nothing changed: the same process, manifest and revision answer as before.
    assert (await s.call("hello.greet", "bo", revision, "g-2"))["payload"]["result"] == {
        "text": "hello bo"
    }
    assert s.app_pid() == pid
    assert (s.folder / "manifest.json").read_text() == manifest

    # A new app_scope is refused too: the registry, the store and the instances are keyed by
    # it, a restart of lineup takes it.
    write_dev_app(s.folder, OTHER_SCOPE)
    line = await s.line(f"lineup: dev app {s.folder}: ")
    assert line.startswith(f"lineup: dev app {s.folder}: app_scope_mismatch ")
    assert (s.folder / "manifest.json").read_text() == manifest

    # Fixed: it reloads.
    write_dev_app(s.folder, FIRST)
    await s.line(f"lineup: dev app {s.folder}: {SCOPE} reloaded")
    assert (await s.call("hello.greet", "cy", revision, "g-3"))["payload"]["result"] == {
        "text": "hello cy"
    }
    assert await s.agent.inventory() == revision


async def test_focus_reloads_only_a_dev_app_of_the_same_scope_and_only_for_the_watcher(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    folder = write_dev_app(data_dir / "apps" / "hello_dev")
    (data_dir / "rt").mkdir(mode=0o700)
    plan = plan_runtime(
        RuntimeOptions(data_dir=data_dir / "rt", demo_agent=False, dev_apps=(folder,))
    )
    # The tree without its watcher: this test speaks as the watcher (`devwatch`) instead.
    specs = [spec for spec in plan.specs if spec.name != "devwatch"]
    tree = await supervise(nursery, plan, data_dir / "rt", specs)
    runtime = Runtime(tree, plan.shell_url, plan.appserver_url)
    watcher = await attach(nursery, tree, ActorKind.DEV, "devwatch")

    async def refusal(bus: Bus, scope: str) -> ErrorCode:
        with pytest.raises(LineUpError) as refused:
            await bus.request(
                "focus", DevAppReloadRequest(app_scope=scope), expect=DevAppReloadReply
            )
        return refused.value.code

    assert await refusal(watcher, "whiteboard") is ErrorCode.APP_NOT_INSTALLED  # not a dev app
    # A manifest naming another scope (written by hand: the watcher refuses it before focus).
    manifest = folder / "manifest.json"
    original = manifest.read_text()
    manifest.write_text(original.replace('"hello', '"other'))
    assert await refusal(watcher, SCOPE) is ErrorCode.APP_SCOPE_MISMATCH
    # An edit that asks for a newer LineUp than this one is refused; the old version stays.
    manifest.write_text(too_new(original))
    assert await refusal(watcher, SCOPE) is ErrorCode.HOST_VERSION_UNSUPPORTED
    manifest.write_text("{")
    assert await refusal(watcher, SCOPE) is ErrorCode.INVALID_ARGUMENTS
    # The watcher's alone: not the supervisor's (which asks focus nothing), nor another
    # development tool's, nor the hostbridge's.
    assert await refusal(tree.bus, SCOPE) is ErrorCode.ACL_DENIED
    other_tool = await attach(nursery, tree, ActorKind.DEV, "devserver-probe")
    assert await refusal(other_tool, SCOPE) is ErrorCode.PERMISSION_DENIED
    probe = await attach(nursery, runtime.supervisor, ActorKind.HOSTBRIDGE, "probe")
    assert await refusal(probe, SCOPE) is ErrorCode.ACL_DENIED
    agent = AgentView(await agent_client(nursery, runtime.appserver_url))
    revision = await agent.inventory()
    await agent.client.call_tool(CONVERSATION, "hello.greet", {"name": "a"}, revision, call_id="1")
    assert (await agent.terminal("1"))["payload"]["result"] == {"text": "hello a"}


async def test_a_dev_app_that_needs_a_newer_lineup_is_listed_never_run(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """Seed 004's `host.min_version` holds for a development (and a shipped) app as for a
    bundle: its tools are not offered to the Agent, and a call of one is refused."""
    folder = write_dev_app(data_dir / "apps" / "hello_dev")
    manifest = folder / "manifest.json"
    manifest.write_text(too_new(manifest.read_text()))
    (data_dir / "rt").mkdir(mode=0o700)
    plan = plan_runtime(
        RuntimeOptions(data_dir=data_dir / "rt", demo_agent=False, dev_apps=(folder,))
    )
    specs = [spec for spec in plan.specs if spec.name != "devwatch"]
    tree = await supervise(nursery, plan, data_dir / "rt", specs)
    agent = AgentView(await agent_client(nursery, plan.appserver_url))
    revision = await agent.inventory()
    inventory = [m for m in agent.seen if m["type"] == INVENTORY][-1]
    assert "hello.greet" not in {t["method"] for t in inventory["payload"]["tools"]}
    await agent.client.call_tool(CONVERSATION, "hello.greet", {"name": "a"}, revision, call_id="1")
    refused = await agent.terminal("1")
    assert refused["type"] == "lineup.v1.tool.error"
    assert refused["payload"]["code"] in ("tool_not_visible", "tool_not_advertised")
    assert f"miniapp:{SCOPE}" not in {c for c, child in tree.children.items() if child.pid}
