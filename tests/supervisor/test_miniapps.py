"""A MiniApp's process on focus's word, when focus's start or stop meets another of the
supervisor's moves on the same app: its restart backing off, a stop still under way, a sandboxed
start not yet reported. Real processes, real signals; each race is held open on purpose, by the
kernel (SIGSTOP) or at the supervisor's own seam, never by a sleep."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
from pathlib import Path

import pytest
import trio
import trio.testing

from lineup.actors.kernel import ActorKind, Bus
from lineup.actors.kernel.control import (
    ChildStartReply,
    ChildStartRequest,
    ChildStopReply,
    ChildStopRequest,
)
from lineup.supervisor import ChildSpec, Intensity, Restart, Strategy, _process
from lineup.supervisor._miniapps import MINIAPP_HOST
from lineup.supervisor._report import receive_report
from lineup.supervisor._restarts import Restarts
from lineup.tests.support.process import pid_alive, wait_pid_gone
from lineup.tests.support.tree import attach, start_tree

NAME = "miniapp:quiet"
APP = {"app": "lineup.tests.support.quiet_app:Quiet"}
ASK_WAIT = 30.0  # a start or a stop of a sandboxed process on a busy machine, at most


async def start_app(focus: Bus) -> ChildStartReply:
    with trio.fail_after(ASK_WAIT):
        return await focus.request(
            "supervisor",
            ChildStartRequest(name=NAME, config=APP),
            expect=ChildStartReply,
            timeout=ASK_WAIT,
        )


async def stop_app(focus: Bus, done: trio.Event) -> None:
    reply = await focus.request(
        "supervisor", ChildStopRequest(name=NAME), expect=ChildStopReply, timeout=ASK_WAIT
    )
    assert reply.stopped
    done.set()


async def test_a_miniapp_focus_starts_while_its_restart_backs_off_is_not_restarted_on_top(
    nursery: trio.Nursery, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backed_off = trio.Event()  # the restart that backed off has done what it does
    restart = Restarts._restart

    async def restart_then_tell(self: Restarts, *args: object) -> None:
        try:
            await restart(self, *args)  # type: ignore[arg-type]
        finally:
            if args[-1] == 2:  # the second death in the period: the one that backs off
                backed_off.set()

    monkeypatch.setattr(Restarts, "_restart", restart_then_tell)
    intensity = Intensity(backoff_base=1.0, backoff_cap=1.0)
    supervisor = await start_tree(nursery, [], data_dir, intensity=intensity)
    focus = await attach(nursery, supervisor, ActorKind.FOCUS, "focus")
    first = await start_app(focus)
    child = supervisor.children[NAME]
    supervisor.kill(NAME)  # restarted at once: a first restart in the period waits for nothing
    await wait_pid_gone(first.pid)
    with trio.fail_after(ASK_WAIT):
        await supervisor.wait_until(lambda: child.incarnation == 2 and child.is_up())
    supervisor.kill(NAME)  # this restart backs off for a second
    with trio.fail_after(ASK_WAIT):
        await supervisor.wait_until(child.exited.is_set)
        await trio.testing.wait_all_tasks_blocked()  # its exit went through the policy
    assert child.state == "failed"

    started = await start_app(focus)  # focus launches the app during the backoff
    with trio.fail_after(ASK_WAIT):
        await backed_off.wait()
    assert (child.incarnation, child.pid, child.state) == (
        started.incarnation,
        started.pid,
        "running",
    )
    assert pid_alive(started.pid)
    assert child.restarts == 1  # the one that did not back off


async def test_rest_for_one_leaves_alone_a_miniapp_focus_started_during_the_backoff(
    nursery: trio.Nursery, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backed_off = trio.Event()
    restart = Restarts._restart

    async def restart_then_tell(self: Restarts, *args: object) -> None:
        try:
            await restart(self, *args)  # type: ignore[arg-type]
        finally:
            if args[-1] == 2:
                backed_off.set()

    monkeypatch.setattr(Restarts, "_restart", restart_then_tell)
    runtime = ChildSpec("a", ActorKind.ROUTER, "lineup.tests.support.actors:HangActor")
    supervisor = await start_tree(
        nursery,
        [runtime],
        data_dir,
        intensity=Intensity(backoff_base=1.0, backoff_cap=1.0),
        strategy=Strategy.REST_FOR_ONE,
    )
    focus = await attach(nursery, supervisor, ActorKind.FOCUS, "focus")
    await start_app(focus)  # listed after `a`: restarted with it
    a, app = supervisor.children["a"], supervisor.children[NAME]
    supervisor.kill("a")  # both restarted at once
    with trio.fail_after(ASK_WAIT):
        await supervisor.wait_until(
            lambda: a.incarnation == app.incarnation == 2 and a.is_up() and app.is_up()
        )
    supervisor.kill("a")  # the app is stopped, then both wait out the backoff
    with trio.fail_after(ASK_WAIT):
        await supervisor.wait_until(lambda: app.state == "stopped")
        await trio.testing.wait_all_tasks_blocked()
    started = await start_app(focus)  # focus launches the app during the backoff
    with trio.fail_after(ASK_WAIT):
        await backed_off.wait()
    assert (app.incarnation, app.pid, app.state) == (started.incarnation, started.pid, "running")
    assert pid_alive(started.pid)
    assert (a.incarnation, a.state) == (3, "running")


async def test_a_miniapp_focus_starts_while_its_restart_is_starting_it_gets_that_process(
    nursery: trio.Nursery, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    supervisor = await start_tree(nursery, [], data_dir)
    focus = await attach(nursery, supervisor, ActorKind.FOCUS, "focus")
    first = await start_app(focus)
    child = supervisor.children[NAME]
    reported, go = trio.Event(), trio.Event()

    async def held_report(channel: socket.socket) -> int | None:
        listener = await receive_report(channel)
        if not reported.is_set():  # the restart's process: held until focus has asked
            reported.set()
            await go.wait()
        return listener

    monkeypatch.setattr(_process, "receive_report", held_report)
    supervisor.kill(NAME)  # restarted at once: a first restart in the period waits for nothing
    with trio.fail_after(ASK_WAIT):
        await reported.wait()
    restarted = child.incarnation
    replies: list[ChildStartReply] = []
    answered = trio.Event()

    async def launch() -> None:
        replies.append(await start_app(focus))
        answered.set()

    nursery.start_soon(launch)  # focus launches the app while its restart starts it
    await trio.testing.wait_all_tasks_blocked()
    go.set()
    with trio.fail_after(ASK_WAIT):
        await answered.wait()
    assert (replies[0].incarnation, replies[0].pid) == (restarted, child.pid) == (2, child.pid)
    assert child.state == "running" and child.pid != first.pid
    assert child.pid is not None and pid_alive(child.pid)


async def test_a_stop_meeting_a_new_start_ends_the_old_process_and_leaves_the_new_one(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    supervisor = await start_tree(nursery, [], data_dir)
    focus = await attach(nursery, supervisor, ActorKind.FOCUS, "focus")
    old = await start_app(focus)
    child = supervisor.children[NAME]
    pidfd = os.pidfd_open(old.pid)
    try:
        # Held by the kernel, the old process cannot end on its closed channel before the new
        # one starts (as a busy machine may hold it): the start comes during the stop.
        signal.pidfd_send_signal(pidfd, signal.SIGSTOP)
        await trio.to_thread.run_sync(os.waitid, os.P_PIDFD, pidfd, os.WSTOPPED | os.WNOWAIT)
        stopped = trio.Event()
        nursery.start_soon(stop_app, focus, stopped)
        with trio.fail_after(ASK_WAIT):
            await supervisor.wait_until(lambda: child.state == "stopping")
        new = await start_app(focus)
        assert (new.incarnation, child.state) == (2, "running")
        with trio.fail_after(ASK_WAIT):
            await stopped.wait()  # its grace, then SIGTERM: to the old process
        assert (child.incarnation, child.pid, child.state) == (2, new.pid, "running")
        assert pid_alive(new.pid)
        assert not child.signalled  # the new process was sent nothing
        with trio.fail_after(ASK_WAIT):
            await trio.lowlevel.wait_readable(pidfd)  # and the old one has ended
    finally:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        os.close(pidfd)


async def test_a_sandboxed_miniapp_stopped_before_its_report_is_read_never_comes_up(
    nursery: trio.Nursery, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reported, go = trio.Event(), trio.Event()

    async def held_report(channel: socket.socket) -> int | None:
        listener = await receive_report(channel)
        reported.set()
        await go.wait()  # the supervisor reads the report only once the stop has begun
        return listener

    monkeypatch.setattr(_process, "receive_report", held_report)
    sandbox = {"profile": "miniapp", "app_scope": "quiet", "data_dir": str(data_dir)}
    app = ChildSpec(
        NAME,
        ActorKind.MINIAPP,
        MINIAPP_HOST,
        restart=Restart.TEMPORARY,
        config={**APP, "sandbox": sandbox},
        shutdown_grace=60.0,  # a stop that must wait this long is one its child never saw
        before_ready=False,  # started once the tree is ready, while the test looks on
    )
    supervisor = await start_tree(nursery, [app], data_dir)
    focus = await attach(nursery, supervisor, ActorKind.FOCUS, "focus")
    child = supervisor.children[NAME]
    with trio.fail_after(ASK_WAIT):
        await reported.wait()
    stopped = trio.Event()
    nursery.start_soon(stop_app, focus, stopped)
    with trio.fail_after(ASK_WAIT):
        await supervisor.wait_until(lambda: child.state == "stopping")
    go.set()
    with trio.fail_after(ASK_WAIT):  # far below its grace: its closed channel ended it
        await stopped.wait()
    assert child.state == "stopped"
    assert not child.ready.is_set()
    assert not child.signalled
