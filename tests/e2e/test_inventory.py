"""The inventory the Agent is told through the real runtime: every change of content is a new,
higher revision (seed 003 §4.3), so a disable and a re-enable each reach the Agent, even when
the router that was told of it was killed before it told the Agent."""

from __future__ import annotations

import os
import signal
from functools import partial
from pathlib import Path
from typing import Any

import trio

from lineup.actors.focus.messages import AppEnableRequest, InventoryReply
from lineup.actors.kernel import ActorKind
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.runtime import (
    CONVERSATION,
    agent_client,
    kill_and_wait_restarted,
    start_runtime,
)
from lineup.tests.support.tree import attach

INVENTORY = "lineup.v1.client.inventory"


def told(revision: str, message: dict[str, Any]) -> bool:
    return bool(message["payload"]["revision"] == revision)


def revisions(agent: AgentView) -> list[int]:
    return [int(m["payload"]["revision"]) for m in agent.seen if m["type"] == INVENTORY]


async def test_disabling_and_re_enabling_an_app_tells_the_agent_two_new_higher_revisions(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url))
    first = int(await agent.inventory())
    ui = await attach(nursery, runtime.supervisor, ActorKind.HOSTBRIDGE, "probe-ui")

    off = await ui.request(
        "focus", AppEnableRequest(app_scope="task-dashboard", enabled=False), expect=InventoryReply
    )
    on = await ui.request(
        "focus", AppEnableRequest(app_scope="task-dashboard", enabled=True), expect=InventoryReply
    )
    assert first < int(off.revision) < int(on.revision)
    assert any(t.method == "task-dashboard.open" for t in on.tools)

    told = await agent.pull(INVENTORY, lambda m: m["payload"]["revision"] == on.revision)
    assert {t["method"] for t in told["payload"]["tools"]} >= {"task-dashboard.open"}
    # The tools are back: a call naming the new revision runs.
    await agent.client.call_tool(
        CONVERSATION,
        "task-dashboard.open",
        {"task_id": "t1", "title": "Back again"},
        on.revision,
        call_id="after-enable",
    )
    ready = await agent.pull(
        ("lineup.v1.tool.receipt", "lineup.v1.tool.error"),
        lambda m: (
            m["payload"]["call_id"] == "after-enable"
            and m["payload"].get("status") in (None, "activation_ready", "rejected")
        ),
    )
    assert ready["payload"].get("status") == "activation_ready"
    assert revisions(agent) == sorted(set(revisions(agent)))  # never reused, never lower


async def test_a_revision_told_to_a_router_killed_before_it_published_still_reaches_the_agent(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url))
    await agent.inventory()
    ui = await attach(nursery, runtime.supervisor, ActorKind.HOSTBRIDGE, "probe-ui")
    # One change told first, so focus holds a channel to this router process.
    for enabled in (False, True):
        reply = await ui.request(
            "focus",
            AppEnableRequest(app_scope="task-dashboard", enabled=enabled),
            expect=InventoryReply,
        )
        await agent.pull(INVENTORY, partial(told, reply.revision))
    router = runtime.supervisor.children["router"].pid
    assert router is not None
    # Stopped, the router cannot publish: focus's word of the new revision waits in its socket
    # and dies with it. The new router publishes the current revision as it starts.
    os.kill(router, signal.SIGSTOP)
    off = await ui.request(
        "focus", AppEnableRequest(app_scope="task-dashboard", enabled=False), expect=InventoryReply
    )
    await kill_and_wait_restarted(runtime, "router")

    now = await agent.pull(INVENTORY, partial(told, off.revision))
    assert "task-dashboard.open" not in {t["method"] for t in now["payload"]["tools"]}


async def test_a_restart_with_the_same_apps_keeps_the_inventory_revision(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    async with trio.open_nursery() as first_run:
        runtime = await start_runtime(first_run, data_dir, demo_agent=False)
        agent = AgentView(await agent_client(first_run, runtime.appserver_url))
        before = await agent.inventory()
        first_run.cancel_scope.cancel()

    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    ui = await attach(nursery, runtime.supervisor, ActorKind.HOSTBRIDGE, "probe-ui")
    with trio.fail_after(20):
        inventory = await ui.request(
            "focus",
            AppEnableRequest(app_scope="task-dashboard", enabled=True),
            expect=InventoryReply,
        )
    assert inventory.revision == before
