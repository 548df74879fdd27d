"""Quotas a MiniApp cannot exhaust (issue 11, finding 7), through the real runtime: a flood app
(tests/support/flood_app.py) opens apps in a loop, reports progress as fast as it can, floods
its control channel with denied frames, or breaks its framing. Each refusal has its stable code
and its audit row (bounded: a counter row says how many more), and the runtime keeps serving:
the chat answers, the Agent's calls complete, and no runtime actor restarted."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import trio

from lineup.actors.focus._lifecycle import MAX_OPENED_PER_APP
from lineup.actors.kernel import ActorKind, AuditRecord
from lineup.actors.kernel.audit import REFUSAL_ROWS_PER_WINDOW, SUPPRESSED
from lineup.actors.router._progress import PROGRESS_RATE
from lineup.tests.support.flood_app import OPENS, Flood
from lineup.tests.support.runtime import shell_and_agent, start_runtime_with_app
from lineup.tests.support.tree import attach, audit_rows

from .test_tools import WAIT, Scene

FLOODER = "miniapp:flood"


async def flood_scene(nursery: trio.Nursery, data_dir: Path) -> Scene:
    runtime = await start_runtime_with_app(nursery, data_dir, Flood, title="Flood")
    shell, agent, revision = await shell_and_agent(nursery, runtime)
    return Scene(runtime, shell, agent, revision, nursery)


async def kept_serving(s: Scene, call_id: str) -> None:
    """The chat answers, an Agent's launch completes, and no runtime actor restarted."""
    await s.chat_still_answers(f"still here after {call_id}")
    await s.open_dashboard(f"after-{call_id}", "t-after", "After the flood")
    restarted = {
        name: child.restarts
        for name, child in s.runtime.supervisor.children.items()
        if child.identity.kind is not ActorKind.MINIAPP and child.restarts
    }
    assert restarted == {}


async def rows_of(
    s: Scene, until: Callable[[tuple[AuditRecord, ...]], bool], *, peer: str
) -> tuple[AuditRecord, ...]:
    auditor = await attach(s.nursery, s.runtime.supervisor, ActorKind.ROUTER, "auditor")
    return await audit_rows(auditor, until, peer=peer)


async def stopped_for_good(s: Scene) -> None:
    child = s.runtime.supervisor.children[FLOODER]
    with trio.fail_after(WAIT):
        await s.runtime.supervisor.wait_until(lambda: child.state == "failed")
    assert child.restarts == 0
    assert signal.SIGKILL in child.signalled  # killed by the runtime: no clean exit


async def test_apps_open_in_a_loop_is_refused_past_the_quota_and_the_agent_still_launches(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await flood_scene(nursery, data_dir)
    await s.call("flood.run", {"mode": "open_loop"}, "f-open")
    result = await s.agent.terminal("f-open")
    assert result["type"] == "lineup.v1.tool.result"
    with trio.fail_after(WAIT):
        await s.shell.wait_until(lambda sh: any("opens" in v for v in sh.views.values()))
    opens = next(v["opens"] for v in s.shell.views.values() if "opens" in v)
    refused = OPENS - MAX_OPENED_PER_APP
    assert opens == ["ok"] * MAX_OPENED_PER_APP + ["quota_exceeded"] * refused

    def accounted(rows: tuple[AuditRecord, ...]) -> int:
        """Refusals with a row of their own, plus those a counter row says it left out."""
        own = sum(r.event == "focus.open_quota_exceeded" for r in rows)
        return own + sum(int(r.subject_id or 0) for r in rows if r.event == SUPPRESSED)

    rows = await rows_of(s, lambda rows: accounted(rows) >= refused, peer=FLOODER)
    quota = [r for r in rows if r.event == "focus.open_quota_exceeded"]
    assert {(r.code, r.message_type) for r in quota} == {("quota_exceeded", "focus.sdk.apps.open")}
    assert 1 <= len(quota) <= REFUSAL_ROWS_PER_WINDOW  # then a counter row: bounded
    assert accounted(rows) == refused
    await kept_serving(s, "f-open")


async def test_a_flood_of_progress_reaches_the_agent_coalesced_and_the_last_one_is_not_lost(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await flood_scene(nursery, data_dir)
    reports = 800  # within the bus's burst: every report is taken, none refused
    started = trio.current_time()
    await s.call("flood.run", {"mode": "progress", "reports": reports}, "f-progress")
    result = await s.agent.terminal("f-progress")
    elapsed = trio.current_time() - started
    assert result["type"] == "lineup.v1.tool.result"
    await s.agent.settle()
    progress = s.agent.of_call("f-progress", "lineup.v1.tool.progress")
    # At most PROGRESS_RATE a second (and the first at once), however many the app sent.
    assert 1 <= len(progress) <= PROGRESS_RATE * elapsed + 2
    assert len(progress) < reports // 10
    # The latest wins: the last report, followed by a quiet, was flushed before the result.
    assert progress[-1]["payload"]["progress"] == {"n": reports - 1}
    order = [m["type"] for m in s.agent.of_call("f-progress")]
    assert order.index("lineup.v1.tool.result") > max(
        i for i, kind in enumerate(order) if kind == "lineup.v1.tool.progress"
    )
    await kept_serving(s, "f-progress")


async def test_denied_frames_on_the_control_channel_stop_the_app_and_end_its_call(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await flood_scene(nursery, data_dir)
    await s.call("flood.run", {"mode": "deny_loop"}, "f-deny")
    error = await s.agent.terminal("f-deny")
    assert (error["type"], error["payload"]["code"]) == ("lineup.v1.tool.error", "app_closed")
    await stopped_for_good(s)
    rows = await rows_of(
        s, lambda rows: any(r.event == "supervisor.peer_misbehaved" for r in rows), peer=FLOODER
    )
    events = [(r.event, r.code) for r in rows]
    assert ("supervisor.peer_misbehaved", "acl_denied") in events
    assert 1 <= events.count(("bus.acl_denied", "acl_denied")) <= REFUSAL_ROWS_PER_WINDOW
    await kept_serving(s, "f-deny")


async def test_a_miniapp_that_keeps_asking_what_it_may_not_gets_bounded_rows_then_is_stopped(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await flood_scene(nursery, data_dir)
    await s.call("flood.run", {"mode": "policy_loop"}, "f-policy")
    error = await s.agent.terminal("f-policy")
    assert (error["type"], error["payload"]["code"]) == ("lineup.v1.tool.error", "app_closed")
    await stopped_for_good(s)
    rows = await rows_of(
        s,
        lambda rows: {"supervisor.peer_misbehaved", SUPPRESSED} <= {r.event for r in rows},
        peer=FLOODER,
    )
    denied = [r for r in rows if r.event == "bus.permission_denied"]
    [counter] = [r for r in rows if r.event == SUPPRESSED]
    assert len(denied) == REFUSAL_ROWS_PER_WINDOW
    assert (counter.actor, counter.code) == ("router", "permission_denied")
    assert int(counter.subject_id or 0) >= 1  # how many more were refused without a row
    assert ("supervisor.peer_misbehaved", "permission_denied") in [(r.event, r.code) for r in rows]
    await kept_serving(s, "f-policy")


async def test_a_malformed_frame_on_the_control_channel_stops_the_app_and_ends_its_call(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await flood_scene(nursery, data_dir)
    await s.call("flood.run", {"mode": "malformed"}, "f-bad-frame")
    error = await s.agent.terminal("f-bad-frame")
    assert (error["type"], error["payload"]["code"]) == ("lineup.v1.tool.error", "app_closed")
    await stopped_for_good(s)
    rows = await rows_of(
        s, lambda rows: any(r.event == "supervisor.peer_misbehaved" for r in rows), peer=FLOODER
    )
    events = [(r.event, r.actor, r.code) for r in rows]
    assert ("bus.frame_malformed", "supervisor", "frame_malformed") in events
    assert ("supervisor.peer_misbehaved", "supervisor", "frame_malformed") in events
    await kept_serving(s, "f-bad-frame")


async def test_a_miniapp_that_exits_by_itself_ends_its_call_now_and_starts_again_on_launch(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await flood_scene(nursery, data_dir)
    await s.call("flood.run", {"mode": "exit"}, "f-exit")
    error = await s.agent.terminal("f-exit")  # within WAIT: the call's own deadline is 60 s
    assert (error["type"], error["payload"]["code"]) == ("lineup.v1.tool.error", "app_closed")
    rows = await rows_of(
        s, lambda rows: any(r.event == "supervisor.miniapp_exited" for r in rows), peer=FLOODER
    )
    assert ("supervisor.miniapp_exited", "app_exited") in [(r.event, r.code) for r in rows]
    await s.call("flood.run", {"mode": "progress", "reports": 0}, "f-again")
    again = await s.agent.terminal("f-again")
    assert again["type"] == "lineup.v1.tool.result"
    await kept_serving(s, "f-exit")
