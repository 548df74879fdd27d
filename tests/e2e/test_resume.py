"""An instance left open when `lineup run` stopped comes back suspended (seed 004 §4.4): no
process runs for it until the user brings it to the front or an Agent call names it; then its
process starts and its state comes back from session data. It can also just be closed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.runtime import (
    CONVERSATION,
    Runtime,
    agent_client,
    start_runtime,
    task_moved_to,
)
from lineup.tests.support.shell import ShellClient, connect_shell

WAIT = 20.0
APP = "miniapp:task-dashboard"
INSTANCE = "task-dashboard:open-1"


def apps(shell: ShellClient) -> dict[str, Any]:
    frames = [f for f in shell.frames if f.get("type") == "shell.apps"]
    return frames[-1] if frames else {"foreground": None, "instances": []}


def states(shell: ShellClient) -> dict[str, str]:
    return {i["instance_id"]: i["state"] for i in apps(shell)["instances"]}


def progress_shown(shell: ShellClient, progress: int) -> bool:
    shown: object = shell.views.get(INSTANCE, {}).get("task", {}).get("progress")
    return shown == progress


async def run_and_stop_with_a_dashboard_open(data_dir: Path) -> None:
    """One `lineup run` in which the Agent opens a task and moves it to 40 %, then stopped."""
    async with trio.open_nursery() as first:
        runtime = await start_runtime(first, data_dir, demo_agent=False)
        agent = AgentView(await agent_client(first, runtime.appserver_url))
        revision = await agent.inventory()
        await task_moved_to(agent, revision, "Survive a restart", 40)
        first.cancel_scope.cancel()


async def restarted(nursery: trio.Nursery, data_dir: Path) -> tuple[Runtime, ShellClient]:
    """The runtime started again on the same data, with a Shell that sees the suspended tab."""
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    shell = await connect_shell(nursery, runtime.shell_url)
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda sh: states(sh).get(INSTANCE) == "suspended")
    assert apps(shell)["foreground"] == "chat"  # a suspended instance never holds the front
    assert states(shell)["chat"] == "foreground"
    assert APP not in runtime.supervisor.children  # and no process runs for it
    return runtime, shell


async def test_bringing_a_suspended_dashboard_to_the_front_starts_it_and_restores_its_task(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    await run_and_stop_with_a_dashboard_open(data_dir)
    runtime, shell = await restarted(nursery, data_dir)

    await shell.send({"type": "ui.intent", "intent": "focus", "instance_id": INSTANCE})
    with trio.fail_after(WAIT):
        await shell.wait_until(
            lambda sh: apps(sh)["foreground"] == INSTANCE and progress_shown(sh, 40)
        )
    assert states(shell) == {"chat": "background", INSTANCE: "foreground"}
    assert runtime.supervisor.children[APP].state == "running"


async def test_an_agent_call_for_a_suspended_instance_resumes_it_behind_the_front(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    await run_and_stop_with_a_dashboard_open(data_dir)
    runtime, shell = await restarted(nursery, data_dir)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url))

    await agent.client.call_tool(
        CONVERSATION,
        "task-dashboard.update",
        {"task_id": "t1", "status": "doing"},
        await agent.inventory(),
        call_id="update-2",
    )  # no instance named: the app's topmost live one, the suspended dashboard
    final = await agent.terminal("update-2")
    assert final["type"] == "lineup.v1.tool.result"
    # The task came back as it was (40 %), then moved.
    assert final["payload"]["result"] == {
        "task_id": "t1",
        "title": "Survive a restart",
        "progress": 40,
        "status": "doing",
    }
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda sh: states(sh).get(INSTANCE) == "background")
    assert apps(shell)["foreground"] == "chat"  # an update does not take the front


async def test_a_suspended_instance_can_be_closed_without_starting_it(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    await run_and_stop_with_a_dashboard_open(data_dir)
    runtime, shell = await restarted(nursery, data_dir)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url))

    await shell.send({"type": "ui.intent", "intent": "close", "instance_id": INSTANCE})
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda sh: INSTANCE not in states(sh))
    assert states(shell) == {"chat": "foreground"}
    # Its open call ends once, as closing an app ends it; no process was started for it.
    final = await agent.terminal("open-1")
    assert (final["type"], final["payload"]["code"]) == ("lineup.v1.tool.error", "app_closed")
    assert APP not in runtime.supervisor.children
