"""The supervised tree with real processes: spawn, restart, strategies, intensity, the broker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Mapping
from pathlib import Path
from typing import Any, TypedDict, Unpack

import pytest
import trio
import trio.lowlevel
import trio.testing

from lineup.actors.kernel import (
    ActorKind,
    ActorRestarted,
    Bus,
    Envelope,
    ErrorCode,
    HealthReply,
    HealthRequest,
    Identity,
    LineUpError,
    Message,
)
from lineup.actors.kernel.actor import BootInfo
from lineup.actors.kernel.channel import channel_pair
from lineup.actors.kernel.control import ActorReadyEvent
from lineup.supervisor import (
    ChildSpec,
    Escalation,
    Intensity,
    Restart,
    Strategy,
    Supervisor,
    _spawn,
)
from lineup.tests.support.actors import EchoReply, EchoRequest, HangRequest
from lineup.tests.support.process import pid_alive, wait_pid_gone
from lineup.tests.support.tree import attach, start_tree

SUPPORT = "lineup.tests.support.actors"


class _SpecFields(TypedDict, total=False):
    """The ChildSpec fields a test sets beside its name, target and kind."""

    restart: Restart
    config: Mapping[str, Any]
    after: tuple[str, ...] | None
    restart_after_misbehaving: bool


def spec(
    name: str, target: str, kind: ActorKind = ActorKind.ROUTER, **kw: Unpack[_SpecFields]
) -> ChildSpec:
    return ChildSpec(name, kind, f"{SUPPORT}:{target}", **kw)


async def echo_pid(bus: Bus, peer: str) -> int:
    """Ask `peer` for its pid, retrying while it restarts (what every real caller does)."""
    with trio.fail_after(10):
        while True:
            try:
                reply = await bus.request(peer, EchoRequest(text="hi"), expect=EchoReply)
                return reply.pid
            except ActorRestarted:
                continue


async def test_a_forked_child_collects_its_garbage_and_never_walks_the_zygotes_heap(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    # The zygote runs without a collector and freezes its heap before each fork (see
    # `lineup._early`): a child that kept the collector off would never free a cycle, and
    # one forked unfrozen would walk (and copy) every object the zygote imported.
    supervisor = await start_tree(nursery, [spec("a", "HangActor")], data_dir)
    bus = await attach(nursery, supervisor)
    with trio.fail_after(10):
        reply = await bus.request("a", EchoRequest(text="gc"), expect=EchoReply)
    assert reply.collecting
    assert reply.frozen > 10_000  # trio, pydantic and the kernel, at the least


def test_lineup_run_pauses_the_collector_for_its_imports_then_freezes_them() -> None:
    probe = (
        "import gc\n"
        "from lineup import _early\n"
        "_early.pause_collection()\n"
        "assert not gc.isenabled()\n"
        "import trio, pydantic\n"
        "_early.imports_done()\n"
        "assert gc.isenabled() and gc.get_freeze_count() > 1000, gc.get_freeze_count()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr


async def test_children_start_in_order_each_ready_before_the_next(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    lines: list[str] = []
    specs = [spec(f"a{i}", "HangActor") for i in range(3)]
    supervisor = await start_tree(nursery, specs, data_dir, report=lines.append)
    ready = [line.split()[0] for line in lines if " ready (pid" in line]
    assert ready == ["a0", "a1", "a2"]
    assert lines[-1].startswith("ready in")
    status = supervisor.status()
    assert [c.state for c in status.children] == ["running"] * 3
    for child in status.children:
        assert child.pid is not None and pid_alive(child.pid)


async def test_children_that_start_after_nothing_start_together_all_ready_before_the_tree(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    # The waiter is ready only once its peer answers, and the peer is listed after it: one at
    # a time, the tree could not be ready before the waiter's start timeout (10 s).
    lines: list[str] = []
    specs = [
        spec("waiter", "ReadyAfterPeerActor", ActorKind.GATEWAY, config={"peer": "peer"}, after=()),
        spec("peer", "HangActor", after=()),
    ]
    with trio.fail_after(5):
        supervisor = await start_tree(nursery, specs, data_dir, report=lines.append)
    ready = [line.split()[0] for line in lines if " ready (pid" in line]
    assert sorted(ready) == ["peer", "waiter"]
    assert lines[-1].startswith("ready in")
    assert [(c.state, c.restarts) for c in supervisor.status().children] == [("running", 0)] * 2


async def test_a_child_starts_only_once_those_it_starts_after_have_settled(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    specs = [
        spec("first", "HangActor", after=()),
        spec("other", "HangActor", after=()),
        spec("second", "HangActor", after=("first",)),
    ]
    supervisor = await start_tree(nursery, specs, data_dir)
    first, second = supervisor.children["first"], supervisor.children["second"]
    assert first.started_at is not None
    assert second.spawned_at >= first.started_at
    assert [c.state for c in supervisor.status().children] == ["running"] * 3


def test_a_child_may_start_only_after_children_listed_before_it(data_dir: Path) -> None:
    for after in (("later",), ("nobody",), ("itself",)):
        specs = [spec("itself", "HangActor", after=after), spec("later", "HangActor")]
        with pytest.raises(ValueError, match="starts after"):
            Supervisor(specs, data_dir=data_dir)


async def test_a_child_crashing_while_the_others_start_together_still_escalates(
    data_dir: Path,
) -> None:
    intensity = Intensity(max_restarts=3, period=30.0)
    specs = [
        spec("ok", "HangActor", after=()),
        spec("loop", "CrashOnStartActor", kind=ActorKind.GATEWAY, after=()),
    ]
    supervisor = Supervisor(specs, data_dir=data_dir, intensity=intensity)
    with trio.fail_after(20), pytest.raises(Escalation):
        await supervisor.run()
    assert supervisor.escalated == "loop"
    assert supervisor.state == "stopped"
    for child in supervisor.children.values():
        assert child.pid is None or not pid_alive(child.pid)


async def test_children_are_forked_as_children_of_the_supervisor(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    supervisor = await start_tree(nursery, [spec("a", "HangActor")], data_dir)
    pid = supervisor.children["a"].pid
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    assert int(stat[1]) == os.getpid()  # ppid: reaped by us, PDEATHSIG bound to us


async def test_requests_in_flight_to_a_killed_actor_fail_at_once_with_actor_restarted(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    supervisor = await start_tree(nursery, [spec("hang", "HangActor")], data_dir)
    bus = await attach(nursery, supervisor)
    await echo_pid(bus, "hang")  # channel introduced
    failures: list[ErrorCode] = []

    async def call() -> None:
        try:
            await bus.request("hang", HangRequest(), expect=Message, timeout=60)
        except LineUpError as exc:
            failures.append(exc.code)

    async with trio.open_nursery() as calls:
        for _ in range(5):
            calls.start_soon(call)
        await trio.testing.wait_all_tasks_blocked()
        supervisor.kill("hang")
        with trio.fail_after(2):  # far below the requests' own 60 s deadline
            while len(failures) < 5:
                await trio.testing.wait_all_tasks_blocked()
                await trio.lowlevel.checkpoint()
    assert failures == [ErrorCode.ACTOR_RESTARTED] * 5


async def test_a_killed_child_is_restarted_and_a_retry_reaches_the_new_one(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    supervisor = await start_tree(
        nursery, [spec("a", "HangActor"), spec("b", "HangActor")], data_dir
    )
    bus = await attach(nursery, supervisor)
    before = {name: await echo_pid(bus, name) for name in ("a", "b")}
    supervisor.kill("a")
    await wait_pid_gone(before["a"])
    after_a = await echo_pid(bus, "a")
    assert after_a != before["a"]
    assert await echo_pid(bus, "b") == before["b"]  # one_for_one leaves siblings alone
    assert supervisor.children["a"].restarts == 1
    assert supervisor.children["a"].incarnation == 2


async def test_one_slow_restart_does_not_hold_up_another_childs_restart(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """A drill saw five restarts queue for seconds behind one: the supervisor restarted one
    child at a time. Under one_for_one, each restart now goes on by itself."""
    slow = spec("slow", "SlowRestartActor", config={"restart_s": 30.0})
    supervisor = await start_tree(nursery, [slow, spec("fast", "HangActor")], data_dir)
    bus = await attach(nursery, supervisor)
    before = await echo_pid(bus, "fast")
    supervisor.kill("slow")
    with trio.fail_after(5):
        await supervisor.wait_until(lambda: supervisor.children["slow"].state == "starting")
    supervisor.kill("fast")
    await wait_pid_gone(before)
    with trio.fail_after(5):  # not the 30 s the slow child's restart takes
        await supervisor.wait_until(lambda: supervisor.children["fast"].state == "running")
    assert await echo_pid(bus, "fast") != before
    assert supervisor.children["slow"].state == "starting"


async def test_rest_for_one_restarts_the_dead_child_and_every_later_one(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    specs = [spec(name, "HangActor") for name in ("a", "b", "c")]
    supervisor = await start_tree(nursery, specs, data_dir, strategy=Strategy.REST_FOR_ONE)
    bus = await attach(nursery, supervisor)
    before = {name: await echo_pid(bus, name) for name in ("a", "b", "c")}
    supervisor.kill("b")
    await wait_pid_gone(before["b"])
    await wait_pid_gone(before["c"])
    after = {name: await echo_pid(bus, name) for name in ("a", "b", "c")}
    assert after["a"] == before["a"]
    assert after["b"] != before["b"]
    assert after["c"] != before["c"]


async def test_a_child_that_crashes_in_a_loop_makes_the_supervisor_escalate(data_dir: Path) -> None:
    intensity = Intensity(max_restarts=3, period=30.0)
    specs = [spec("ok", "HangActor"), spec("loop", "CrashOnStartActor", kind=ActorKind.GATEWAY)]
    supervisor = Supervisor(specs, data_dir=data_dir, intensity=intensity)
    with trio.fail_after(20), pytest.raises(Escalation):
        await supervisor.run()
    assert supervisor.escalated == "loop"
    assert supervisor.children["loop"].restarts == intensity.max_restarts
    assert supervisor.state == "stopped"
    for child in supervisor.children.values():
        assert child.pid is None or not pid_alive(child.pid)


async def test_a_transient_child_that_exits_normally_is_not_restarted(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    supervisor = await start_tree(
        nursery,
        [spec("t", "ExitCleanlyActor", kind=ActorKind.GATEWAY, restart=Restart.TRANSIENT)],
        data_dir,
    )
    child = supervisor.children["t"]
    with trio.fail_after(5):
        await child.exited.wait()
        await trio.testing.wait_all_tasks_blocked()  # the exit has gone through the policy
    assert child.state == "stopped"
    assert child.restarts == 0


async def test_a_transient_child_that_fails_is_restarted(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    supervisor = await start_tree(
        nursery,
        [
            spec(
                "t",
                "ExitCleanlyActor",
                kind=ActorKind.GATEWAY,
                restart=Restart.TRANSIENT,
                config={"exit_code": 3},
            )
        ],
        data_dir,
    )
    child = supervisor.children["t"]
    with trio.fail_after(5):
        await supervisor.wait_until(lambda: child.incarnation == 2 and child.ready.is_set())
    assert child.restarts == 1


async def test_stopping_the_tree_leaves_no_child_running(data_dir: Path) -> None:
    supervisor = Supervisor([spec(n, "HangActor") for n in "abc"], data_dir=data_dir)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        pids = [c.pid for c in supervisor.children.values()]
        nursery.cancel_scope.cancel()
    assert supervisor.state == "stopped"
    for pid in pids:
        assert pid is not None and not pid_alive(pid)


async def test_a_miniapp_sending_what_its_acl_forbids_is_refused_audited_and_stopped(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    specs = [
        ChildSpec("store", ActorKind.STORE, "lineup.actors.store:StoreActor"),
        ChildSpec("router", ActorKind.ROUTER, "lineup.actors.router:RouterActor"),
        spec("miniapp:bad", "ForbiddenSenderActor", kind=ActorKind.MINIAPP),
    ]
    supervisor = await start_tree(nursery, specs, data_dir)
    bad = supervisor.children["miniapp:bad"]
    # The router reported the breach; the supervisor stopped the offender for good.
    with trio.fail_after(10):
        await supervisor.wait_until(lambda: bad.state == "failed")
    assert bad.restarts == 0
    assert bad.incarnation == 1

    from lineup.actors.store.messages import AuditQueryReply, AuditQueryRequest

    probe = await attach(nursery, supervisor, ActorKind.ROUTER, "auditor")
    events: set[tuple[str, str | None, str | None]] = set()
    with trio.fail_after(10):
        while not {
            "supervisor.introduce_denied",
            "bus.acl_denied",
            "supervisor.peer_misbehaved",
        } <= {e for e, _, _ in events}:
            reply = await probe.request(
                "store", AuditQueryRequest(limit=100), expect=AuditQueryReply
            )
            events = {(r.event, r.peer, r.message_type) for r in reply.records}
            await trio.testing.wait_all_tasks_blocked()
    assert ("bus.acl_denied", "miniapp:bad", "kernel.health.request") in events
    # No channel to the store may exist at all: the supervisor refused to make one.
    assert (data_dir / "forbidden-store").read_text() == "acl_denied"


async def test_a_miniapp_whose_spec_says_so_is_restarted_after_it_misbehaves(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    # What the plan sets for the system app, so that the IM never goes dark.
    specs = [
        ChildSpec("store", ActorKind.STORE, "lineup.actors.store:StoreActor"),
        ChildSpec("router", ActorKind.ROUTER, "lineup.actors.router:RouterActor"),
        spec(
            "miniapp:bad",
            "ForbiddenSenderActor",
            kind=ActorKind.MINIAPP,
            restart_after_misbehaving=True,
        ),
    ]
    supervisor = await start_tree(nursery, specs, data_dir)
    bad = supervisor.children["miniapp:bad"]
    with trio.fail_after(10):
        await supervisor.wait_until(lambda: bad.incarnation >= 2 and bad.is_up())
    assert bad.state != "failed"
    assert (data_dir / "forbidden-store").read_text() == "acl_denied"


async def test_a_miniapp_gets_no_channel_to_the_store_and_no_health_from_the_router(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    specs = [
        ChildSpec("store", ActorKind.STORE, "lineup.actors.store:StoreActor"),
        spec("a", "HangActor"),
    ]
    supervisor = await start_tree(nursery, specs, data_dir)
    bus = await attach(nursery, supervisor, ActorKind.MINIAPP, "miniapp:x")
    with pytest.raises(LineUpError) as no_channel:
        await bus.request("store", HealthRequest(), expect=HealthReply)
    assert no_channel.value.code is ErrorCode.ACL_DENIED
    # The router-kind child accepts only `router.sdk.*` from a MiniApp: the receiving side's
    # ACL check refuses health before decoding it.
    with pytest.raises(LineUpError) as refused:
        await bus.request("a", HealthRequest(), expect=HealthReply)
    assert refused.value.code is ErrorCode.ACL_DENIED


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
async def test_a_child_killed_by_any_signal_is_restarted(
    nursery: trio.Nursery, data_dir: Path, sig: int
) -> None:
    supervisor = await start_tree(nursery, [spec("a", "HangActor")], data_dir)
    bus = await attach(nursery, supervisor)
    before = await echo_pid(bus, "a")
    supervisor.kill("a", sig)
    await wait_pid_gone(before)
    assert await echo_pid(bus, "a") != before


async def test_children_outlive_the_retirement_of_trios_worker_threads(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """PR_SET_PDEATHSIG fires when the parent *thread* exits: had the zygote been started from
    a worker thread (as trio's open_process does), every child would be SIGKILLed when trio
    retires that idle thread. Time passing is the very thing under test here."""
    from trio._core._thread_cache import IDLE_TIMEOUT

    supervisor = await start_tree(
        nursery, [spec("a", "HangActor"), spec("b", "HangActor")], data_dir
    )
    await trio.to_thread.run_sync(lambda: None)  # a worker thread exists, then idles out
    pids = {name: child.pid for name, child in supervisor.children.items()}
    await trio.sleep(IDLE_TIMEOUT + 2)
    assert {name: child.pid for name, child in supervisor.children.items()} == pids
    assert [child.restarts for child in supervisor.children.values()] == [0, 0]
    for pid in pids.values():
        assert pid is not None and pid_alive(pid)


async def test_a_lane_forks_the_children_it_names_and_a_dead_lane_is_restarted_alone(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    lanes = ((SUPPORT,),)  # one more zygote, for the test actors' module
    supervisor = await start_tree(nursery, [spec("a", "HangActor")], data_dir, lanes=lanes)
    zygotes = supervisor._zygote._lanes  # the first zygote, then the lane's
    first, lane = zygotes[0].pid, zygotes[1].pid
    assert first is not None and lane is not None and first != lane
    assert supervisor.status().zygote_pid == first
    bus = await attach(nursery, supervisor)
    before = await echo_pid(bus, "a")
    os.kill(lane, signal.SIGKILL)
    await wait_pid_gone(lane)
    supervisor.kill("a")
    await wait_pid_gone(before)
    assert await echo_pid(bus, "a") != before  # forked by a fresh lane zygote
    assert zygotes[1].pid not in (None, lane)
    assert zygotes[0].pid == first and pid_alive(first)


async def test_a_zygote_that_does_not_answer_a_spawn_in_time_is_replaced(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A late answer would be taken for the next spawn's (another child's pid): a zygote that
    # misses its bound is stopped, the spawn refused deadline_exceeded, the next one forked
    # by a fresh zygote.
    monkeypatch.setattr(_spawn, "SPAWN_TIMEOUT", 0.5)
    lane = _spawn._Lane(())
    await lane.start()
    hung = lane.pid
    assert hung is not None
    os.kill(hung, signal.SIGSTOP)
    boot = BootInfo("a", ActorKind.ROUTER.value, 1, f"{SUPPORT}:HangActor", str(data_dir))
    ours, theirs = channel_pair()
    with ours, theirs, pytest.raises(LineUpError) as refused:
        await lane.spawn(boot.to_json(), theirs)
    assert refused.value.code is ErrorCode.DEADLINE_EXCEEDED
    assert not pid_alive(hung)
    ours, theirs = channel_pair()
    with ours, theirs:
        child = await lane.spawn(boot.to_json(), theirs)
    try:
        assert lane.pid not in (None, hung)
        assert child not in (hung, lane.pid) and pid_alive(child)
    finally:
        os.kill(child, signal.SIGKILL)
        await trio.to_thread.run_sync(os.waitpid, child, 0)  # ours: forked with CLONE_PARENT
        await lane.stop()


async def test_a_ready_told_before_the_zygote_said_the_pid_is_taken_once_it_has(
    data_dir: Path,
) -> None:
    """Under load the zygote, descheduled right after its fork, said the pid after the child
    had said ready: the child was listed up with no process (`lineup status` gave no pid, and a
    stop found nothing to signal). Its ready now waits for the pid."""
    supervisor = Supervisor([spec("a", "EchoActor")], data_dir=data_dir)
    child = supervisor.children["a"]
    child.move("spawn")  # what `_process.start` does before asking the zygote
    ready = Envelope(Identity(ActorKind.ROUTER, "a"), ActorReadyEvent(pid=os.getpid()), 1, False)
    waiting = supervisor._dispatch(ready)
    assert isinstance(waiting, Awaitable) and not child.ready.is_set()

    async def taken() -> None:
        await waiting

    async with trio.open_nursery() as nursery:
        nursery.start_soon(taken)
        await trio.testing.wait_all_tasks_blocked()
        assert not child.ready.is_set()  # not up without its process
        child.pid, child.pidfd = os.getpid(), os.pidfd_open(os.getpid())  # the zygote said it
        child.forked.set()
    try:
        assert child.ready.is_set() and child.state == "running"
        assert [c.pid for c in supervisor.status().children] == [os.getpid()]
    finally:
        os.close(child.pidfd)
