"""The whole runtime as `lineup run` builds it, supervised from the test's own trio loop."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from lineup.ops.agent import AgentClient
from lineup.sdk import MiniApp
from lineup.sdk.manifest import manifest_json
from lineup.sdk.tools import manifest_of
from lineup.supervisor import ChildSpec, Supervisor
from lineup.supervisor._runtime import LANES, PRELOAD, RuntimeOptions, RuntimePlan, plan_runtime
from lineup.supervisor._spawn import Zygote
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.delivery_runtime import TEST_INTENSITY
from lineup.tests.support.process import wait_pid_gone
from lineup.tests.support.shell import ShellClient, connect_shell

AGENT_ID = "demo-agent"
AGENT_SECRET = "demo-secret"
CONVERSATION = "conv-demo"


@dataclass
class Runtime:
    supervisor: Supervisor
    shell_url: str
    appserver_url: str


_zygotes: list[Zygote] = []  # this test process's, once made


def shared_zygote() -> Zygote:
    """This test process's zygotes for the runtime's trees, kept running from one test's tree
    to the next: a tree then forks its children from a zygote that has every module loaded,
    instead of paying a fresh interpreter and all the imports again (about a second of CPU
    per test). A zygote is stateless between spawns (each child gets its whole boot with the
    request), and one that dies is started again by the next spawn, as in any tree. Stopped
    at the end of the session (`tests/conftest.py`); the tests *about* the zygote make their
    own trees."""
    if not _zygotes:
        _zygotes.append(Zygote(PRELOAD, LANES))
    return _zygotes[0]


async def stop_shared_zygote() -> None:
    while _zygotes:
        await _zygotes.pop().stop()


async def start_runtime(nursery: trio.Nursery, data_dir: Path, **options: Any) -> Runtime:
    """Start the tree (embedded AppServer unless `appserver=` is given) and wait until ready."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    plan = plan_runtime(RuntimeOptions(data_dir=data_dir, **options))
    supervisor = await supervise(nursery, plan, data_dir)
    return Runtime(supervisor, plan.shell_url, plan.appserver_url)


async def supervise(
    nursery: trio.Nursery,
    plan: RuntimePlan,
    data_dir: Path,
    specs: list[ChildSpec] | None = None,
) -> Supervisor:
    """Run `specs` (the plan's own, unless a test changed them) under a supervisor as `lineup
    run` builds it, but forking from the shared zygote and with room for the restarts tests
    cause; returns once it is ready."""
    supervisor = Supervisor(
        plan.specs if specs is None else specs,
        data_dir=data_dir,
        intensity=TEST_INTENSITY,
        link_wait=plan.link_wait,
        zygote=shared_zygote(),
    )
    supervisor.info.update(plan.info)
    await nursery.start(supervisor.run)
    return supervisor


async def agent_client(nursery: trio.Nursery, appserver_url: str) -> AgentClient:
    """An Agent logged in to the AppServer (closed when the nursery ends)."""
    client: AgentClient = await nursery.start(_client, appserver_url)
    return client


async def _client(appserver_url: str, *, task_status: trio.TaskStatus[AgentClient]) -> None:
    async with AgentClient(appserver_url) as client:
        await client.login(AGENT_ID, AGENT_SECRET)
        task_status.started(client)
        await trio.sleep_forever()


async def shell_and_agent(
    nursery: trio.Nursery, runtime: Runtime
) -> tuple[ShellClient, AgentView, str]:
    """A Shell connected to `runtime`, then an Agent logged in to its AppServer, and the
    inventory revision that Agent has read (what its tool calls name)."""
    shell = await connect_shell(nursery, runtime.shell_url)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url))
    return shell, agent, await agent.inventory()


async def task_moved_to(
    agent: AgentView, revision: str, title: str, progress: int
) -> dict[str, Any]:
    """The Agent opens task `t1` as `title` (call `open-1`), waits until the dashboard reports
    that call's progress, then moves the task to `progress` (call `update-1`); answers the
    update's terminal message."""
    await agent.client.call_tool(
        CONVERSATION,
        "task-dashboard.open",
        {"task_id": "t1", "title": title},
        revision,
        call_id="open-1",
    )
    await agent.pull("lineup.v1.tool.progress", lambda m: m["payload"]["call_id"] == "open-1")
    await agent.client.call_tool(
        CONVERSATION,
        "task-dashboard.update",
        {"task_id": "t1", "progress": progress},
        revision,
        call_id="update-1",
    )
    return await agent.terminal("update-1")


async def messages_at_agent(
    client: AgentClient, kind: str = "lineup.v1.text"
) -> list[dict[str, Any]]:
    """Everything the client side sent the Agent so far, as the AppServer recorded it."""
    out: list[dict[str, Any]] = []
    cursor = ""
    while True:
        page, next_cursor = await client.sync(cursor, timeout_ms=0)
        out += [m for m in page if m.get("type") == kind]
        if not page or next_cursor == cursor:
            return out
        cursor = next_cursor


async def start_runtime_with_app(
    nursery: trio.Nursery, data_dir: Path, app: type[MiniApp], *, title: str, **options: Any
) -> Runtime:
    """The runtime (no demo Agent, unless `demo_agent=True`; other `options` as for
    `RuntimeOptions`) in `data_dir / "rt"` with one configured SDK app beside the catalogue's,
    as `--dev-app` would add it: its manifest generated into `data_dir`."""
    data_dir.mkdir(parents=True, exist_ok=True)
    built = manifest_of(app)  # from the class's `app_info`
    scope = built.app_scope
    manifest = data_dir / f"{scope}.json"
    manifest.write_text(manifest_json(built))
    config = {
        "app_scope": scope,
        "manifest": str(manifest),
        "entry": f"{app.__module__}:{app.__qualname__}",
        "title": title,
    }
    options.setdefault("demo_agent", False)
    return await start_runtime(nursery, data_dir / "rt", extra_apps=(config,), **options)


async def kill_and_wait_restarted(runtime: Runtime, victim: str, *, wait: float = 20.0) -> None:
    """SIGKILL the child `victim` and wait until the supervisor runs its next incarnation."""
    child = runtime.supervisor.children[victim]
    pid, incarnation = child.pid, child.incarnation
    assert pid is not None
    runtime.supervisor.kill(victim)
    await wait_pid_gone(pid)
    with trio.fail_after(wait):
        await runtime.supervisor.wait_until(
            lambda: child.incarnation > incarnation and child.state == "running"
        )
