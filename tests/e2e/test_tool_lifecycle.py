"""The tool call's life on the real tree, for the seed rules of issue 10: `submitted` until the
AppServer has the result, activation requirements, one delivery path to the MiniApp, and an
instance's calls converging on its end without a request from focus to the router."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from lineup.actors.focus.messages import InstanceReply, UiIntentRequest
from lineup.actors.kernel import ActorKind, Bus
from lineup.actors.store.messages import ToolCallGetReply, ToolCallGetRequest, ToolCallRow
from lineup.supervisor import _spawn
from lineup.tests.e2e.test_tools import WAIT, foreground, scene
from lineup.tests.support.tree import attach

FINALS = ("lineup.v1.tool.result", "lineup.v1.tool.error")
RECEIPT = "lineup.v1.tool.receipt"


async def call_row(
    bus: Bus, call_id: str, until: Callable[[ToolCallRow | None], bool]
) -> ToolCallRow | None:
    """The store's row of `call_id` once `until(row)` holds (asked again whenever idle)."""
    with trio.fail_after(WAIT):
        while True:
            reply = await bus.request(
                "store", ToolCallGetRequest(call_id=call_id), expect=ToolCallGetReply
            )
            if until(reply.call):
                return reply.call
            await trio.testing.wait_all_tasks_blocked()


def in_state(*states: str) -> Callable[[ToolCallRow | None], bool]:
    return lambda row: row is not None and row.state in states


async def test_a_result_is_submitted_until_the_appserver_has_it_and_a_close_never_touches_it(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    watcher = await attach(nursery, s.runtime.supervisor, ActorKind.ROUTER, "watcher")
    await s.open_dashboard("open-s", "t1", "Submit")
    with trio.fail_after(WAIT):
        await s.shell.wait_until(lambda sh: (foreground(sh) or "").startswith("task-dashboard:"))
    instance = foreground(s.shell)
    assert instance is not None
    tree = s.runtime.supervisor
    # The app holds the call until the link is down, so its result cannot reach the AppServer.
    tree.kill("miniapp:task-dashboard", signal.SIGSTOP)
    try:
        await s.call("task-dashboard.update", {"task_id": "t1", "progress": 70}, "upd-s")
        await call_row(watcher, "upd-s", in_state("waiting_for_app", "running"))
        tree.kill("transport", signal.SIGSTOP)
    finally:
        tree.kill("miniapp:task-dashboard", signal.SIGCONT)
    try:
        submitted = await call_row(watcher, "upd-s", in_state("submitted", "completed"))
        assert submitted is not None
        assert submitted.state == "submitted"
        assert submitted.result is not None
        assert submitted.result["progress"] == 70
        # The user closes the dashboard: its running call is cancelled, the submitted one is not.
        closer = await attach(nursery, tree, ActorKind.HOSTBRIDGE, "closer")
        await closer.request(
            "focus", UiIntentRequest(intent="close", instance_id=instance), expect=InstanceReply
        )
        opened = await call_row(watcher, "open-s", in_state("cancelled", "completed", "failed"))
        assert opened is not None
        assert (opened.state, opened.error_code) == ("cancelled", "app_closed")
        still = await call_row(watcher, "upd-s", lambda row: True)
        assert still is not None
        assert still.state == "submitted"
    finally:
        tree.kill("transport", signal.SIGCONT)
    result = await s.agent.terminal("upd-s")
    assert result["type"] == "lineup.v1.tool.result"
    done = await call_row(watcher, "upd-s", in_state("completed"))
    assert done is not None
    assert done.result == result["payload"]["result"]
    await s.agent.settle()
    assert len([m for m in s.agent.of_call("upd-s") if m["type"] in FINALS]) == 1


async def test_a_tool_that_needs_the_front_is_refused_foreground_required_when_behind(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """Seed 004 §7.3: `requires_foreground` is a requirement, not a licence to take the front
    (before, the runtime brought the instance forward on its own)."""
    s = await scene(nursery, data_dir, probe=True)
    await s.call("probe.run", {"mode": "hang"}, "hold-1")
    with trio.fail_after(WAIT):
        await s.shell.wait_until(lambda sh: (foreground(sh) or "").startswith("probe:"))
    instance = foreground(s.shell)
    assert instance is not None
    user = await attach(nursery, s.runtime.supervisor, ActorKind.HOSTBRIDGE, "user")
    await user.request(
        "focus", UiIntentRequest(intent="focus", instance_id="chat"), expect=InstanceReply
    )

    await s.call("probe.front", {"mode": "ok"}, "front-behind")
    refused = await s.agent.terminal("front-behind")
    assert refused["type"] == "lineup.v1.tool.error"
    assert refused["payload"]["code"] == "foreground_required"
    assert foreground(s.shell) == "chat"  # nothing took the front

    await user.request(
        "focus", UiIntentRequest(intent="focus", instance_id=instance), expect=InstanceReply
    )
    await s.call("probe.front", {"mode": "ok"}, "front-ahead")
    answered = await s.agent.terminal("front-ahead")
    assert answered["payload"]["result"] == {"echoed": "front"}


def zygote(s: Any, monkeypatch: pytest.MonkeyPatch) -> int:
    """The pid of the tree's zygote: stopped, no MiniApp process can start. The supervisor's
    spawn waits for it as long as the test needs (its own 5 s bound would otherwise fail the
    start, by the clock, while a loaded machine is still between two steps of the test)."""
    monkeypatch.setattr(_spawn, "SPAWN_TIMEOUT", WAIT)
    pid = s.runtime.supervisor.status().zygote_pid
    assert isinstance(pid, int)
    return pid


async def held(bus: Bus, call_id: str) -> ToolCallRow:
    """`call_id` once it is recorded, bound to its instance and waiting for it."""
    row = await call_row(
        bus, call_id, lambda r: r is not None and r.state == "routing" and bool(r.instance_id)
    )
    assert row is not None
    return row


async def test_calls_for_a_starting_instance_are_held_then_run_once_it_is_ready(
    nursery: trio.Nursery, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 004 §7.3: an `app_ready` call for an instance still starting is persisted and held
    (bound to the instance, not yet delivered), then run once the instance is ready."""
    s = await scene(nursery, data_dir, probe=True)
    watcher = await attach(nursery, s.runtime.supervisor, ActorKind.ROUTER, "watcher")
    os.kill(zygote(s, monkeypatch), signal.SIGSTOP)  # the probe's process cannot start
    try:
        await s.call("probe.run", {"mode": "hang"}, "launch-h")
        await s.call("probe.echo", {"mode": "ok"}, "echo-1")
        await s.call("probe.echo", {"mode": "cancel"}, "echo-2")  # echoed, not acted on
        first, second = await held(watcher, "echo-1"), await held(watcher, "echo-2")
        assert first.instance_id == second.instance_id
        assert first.seq < second.seq  # recorded in arrival order
        assert s.agent.of_call("echo-1", *FINALS) == []
    finally:
        os.kill(zygote(s, monkeypatch), signal.SIGCONT)
    results = [await s.agent.terminal(call_id) for call_id in ("echo-1", "echo-2")]
    assert [r["payload"].get("result") for r in results] == [
        {"echoed": "ok"},
        {"echoed": "cancel"},
    ]
    receipts = [m["payload"]["status"] for m in s.agent.of_call("launch-h", RECEIPT)]
    assert "activation_ready" in receipts


async def test_calls_held_for_an_instance_closed_while_starting_end_activation_cancelled(
    nursery: trio.Nursery, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = await scene(nursery, data_dir)
    watcher = await attach(nursery, s.runtime.supervisor, ActorKind.ROUTER, "watcher")
    user = await attach(nursery, s.runtime.supervisor, ActorKind.HOSTBRIDGE, "user")
    os.kill(zygote(s, monkeypatch), signal.SIGSTOP)
    try:
        await s.call("task-dashboard.open", {"task_id": "t1", "title": "Closed"}, "open-c")
        await s.call("task-dashboard.update", {"task_id": "t1", "progress": 10}, "upd-c")
        row = await held(watcher, "upd-c")
        assert row.instance_id is not None
        await user.request(
            "focus",
            UiIntentRequest(intent="close", instance_id=row.instance_id),
            expect=InstanceReply,
        )
        refused = await s.agent.terminal("upd-c")
    finally:
        os.kill(zygote(s, monkeypatch), signal.SIGCONT)
    assert refused["type"] == "lineup.v1.tool.error"
    assert refused["payload"]["code"] == "activation_cancelled"
    launch = await s.agent.terminal("open-c")
    assert launch["type"] == "lineup.v1.tool.error"
    receipts = [m["payload"]["status"] for m in s.agent.of_call("open-c", RECEIPT)]
    assert "activation_cancelled" in receipts
    assert "activation_ready" not in receipts
    await s.agent.settle()
    for call_id in ("upd-c", "open-c"):
        assert len([m for m in s.agent.of_call(call_id) if m["type"] in FINALS]) == 1
