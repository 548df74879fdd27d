"""The Pomodoro through real processes (issue 29, item 3; seed 004 §6.3): the runtime, not the
app, ends a focus period. Its `started` progress reaches the Agent once the instance is in
front and the operation exists; its ONE result arrives at `ends_at`, also when the whole tree is
SIGKILLed in the middle of the period and started again on the same data dir (before or after
`ends_at` has passed); the user's interruption ends it `cancelled_by_user`, and an interruption
sent right behind the focus call — its instance still launching — does not wait for it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Final

import pytest
import trio

from lineup.tests.e2e.test_delivery_crash import Tree
from lineup.tests.support.agent_view import FINALS, AgentView
from lineup.tests.support.runtime import CONVERSATION, agent_client, start_runtime

WAIT: Final = 60.0  # a real tree on a loaded machine: processes, an HTTP AppServer
PROGRESS: Final = "lineup.v1.tool.progress"
MINUTES: Final = 0.2  # a 12 s period: a tree is killed and up again in about a second


def started(call_id: str) -> Any:
    def match(message: dict[str, Any]) -> bool:
        payload = message["payload"]
        return bool(
            payload.get("call_id") == call_id and payload["progress"].get("stage") == "started"
        )

    return match


async def focus(agent: AgentView, call_id: str, minutes: float) -> float:
    """The Agent starts a focus period; returns its `ends_at`, from its `started` progress."""
    revision = await agent.revision_with("pomodoro.focus")
    await agent.client.call_tool(
        CONVERSATION, "pomodoro.focus", {"minutes": minutes}, revision, call_id=call_id
    )
    message = await agent.pull(PROGRESS, started(call_id))
    ends_at: float = message["payload"]["progress"]["ends_at"]
    return ends_at


async def the_one_terminal(agent: AgentView, call_id: str) -> dict[str, Any]:
    """The call's terminal message, once everything sent so far is read: there is one."""
    terminal = await agent.terminal(call_id)
    await agent.settle()
    assert len(agent.of_call(call_id, *FINALS)) == 1, agent.of_call(call_id)
    return terminal


@pytest.mark.parametrize("restart", ["before_ends_at", "after_ends_at"])
async def test_the_one_result_arrives_at_ends_at_across_a_sigkill_of_the_whole_tree(
    tmp_path: Path, restart: str
) -> None:
    """Over twelve seconds by design: the focus period (`MINUTES`) must outlast a SIGKILL of
    the whole tree and its start again inside it, and `after_ends_at` waits the period out
    while nothing runs; only that time proves the timer is armed again from the store."""
    data_dir = tmp_path / "lu"
    async with trio.open_nursery() as nursery:
        tree = await Tree.start(nursery, data_dir)
        agent = AgentView(await agent_client(nursery, tree.appserver_url), wait_s=WAIT)
        ends_at = await focus(agent, "focus-1", MINUTES)
        assert time.time() < ends_at  # mid-period
        await tree.kill_all()
        nursery.cancel_scope.cancel()
    if restart == "after_ends_at":  # the deadline passes while nothing runs
        await trio.sleep(ends_at - time.time() + 0.5)

    async with trio.open_nursery() as nursery:
        tree = await Tree.start(nursery, data_dir)
        try:
            agent = AgentView(await agent_client(nursery, tree.appserver_url), wait_s=WAIT)
            if restart == "before_ends_at":  # up again inside the period: the timer waits
                assert time.time() < ends_at, "restarted too late to test a timer armed again"
            terminal = await the_one_terminal(agent, "focus-1")
            assert time.time() >= ends_at  # never early
            assert terminal["type"] == "lineup.v1.tool.result", terminal
            assert terminal["payload"]["result"] == {"status": "completed", "minutes": MINUTES}
            assert (
                len([m for m in agent.of_call("focus-1", PROGRESS) if started("focus-1")(m)]) <= 1
            )
        finally:
            await tree.kill_all()
            nursery.cancel_scope.cancel()


async def test_an_interruption_ends_the_focus_period_cancelled_by_the_user(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    runtime = await start_runtime(nursery, tmp_path / "lu", demo_agent=False)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT)
    ends_at = await focus(agent, "focus-1", 10)

    revision = await agent.revision_with("pomodoro.interrupt")
    await agent.client.call_tool(CONVERSATION, "pomodoro.interrupt", {}, revision, call_id="stop-1")

    stopped = await agent.terminal("stop-1")
    ended = await the_one_terminal(agent, "focus-1")
    assert time.time() < ends_at
    assert stopped["type"] == "lineup.v1.tool.result", stopped
    assert stopped["payload"]["result"] == {"interrupted": 1}
    assert (ended["type"], ended["payload"]["code"]) == (
        "lineup.v1.tool.error",
        "cancelled_by_user",
    )


async def test_an_interruption_right_behind_the_focus_call_does_not_wait_for_its_launch(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    runtime = await start_runtime(nursery, tmp_path / "lu", demo_agent=False)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT)
    revision = await agent.revision_with("pomodoro.interrupt")

    await agent.client.call_tool(
        CONVERSATION, "pomodoro.focus", {"minutes": 10}, revision, call_id="focus-1"
    )
    await agent.client.call_tool(CONVERSATION, "pomodoro.interrupt", {}, revision, call_id="stop-1")

    ended = await the_one_terminal(agent, "focus-1")
    stopped = await the_one_terminal(agent, "stop-1")
    assert (ended["type"], ended["payload"]["code"]) == (
        "lineup.v1.tool.error",
        "cancelled_by_user",
    )
    assert stopped["type"] == "lineup.v1.tool.result", stopped
    assert stopped["payload"]["result"] == {"interrupted": 1}
