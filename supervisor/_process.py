"""One child's process, from its fork to its reaping.

The zygote forks each child as the supervisor's own (`_spawn`), with its control channel and,
for a MiniApp, its stdout and stderr captured into its app's log. A sandboxed child's first byte
is its sandbox's report, read here before the bus gets its channel; its pids cgroup is joined
and its data dir measured while it lives (`_quota`). Its pidfd is watched: the watcher reaps it,
moves its state, and passes its exit on to the restart policy (`exits`). A stop is shielded and
bounded: close its channel → grace → SIGTERM → wait → SIGKILL.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import socket
import time
from pathlib import Path
from typing import Final

import trio

from lineup.actors.kernel import ActorKind, AuditRecord, Bus, Channel, LineUpError, channel_pair
from lineup.actors.kernel.actor import BootInfo
from lineup.actors.kernel.control import AppFailedEvent

from . import _applog, _quota
from ._broker import Introductions
from ._denials import answer_denials
from ._peers import Changes, Child, exit_status, signal_child
from ._report import CGROUP_JOINED, receive_report
from ._sandbox import SandboxPolicy, app_data_dir, is_sandboxed, quota_policy
from ._spawn import Zygote

__all__ = ["STOP_KILL_WAIT", "STOP_TERM_WAIT", "Processes"]

log = logging.getLogger("lineup.supervisor")

STOP_TERM_WAIT: Final = 0.5  # after SIGTERM, before SIGKILL
STOP_KILL_WAIT: Final = 2.0


class Processes:
    """Starts, watches and stops the children's processes (see the module's docstring). Its
    watchers and output readers run in `run`'s nursery, which the tree keeps shielded until
    every child has stopped."""

    def __init__(
        self,
        bus: Bus,
        zygote: Zygote,
        data_dir: Path,
        changes: Changes,
        introductions: Introductions,
    ) -> None:
        self.bus = bus
        self.zygote = zygote
        self.data_dir = data_dir
        self._changes = changes
        self._introductions = introductions
        self.pids: _quota.PidsCgroups | None = None  # per-MiniApp pids cgroups, if offered
        self._app_logs: dict[str, _applog.AppLog] = {}
        self.captures = 0  # MiniApp output streams still being read
        self._exits_send, self.exits = trio.open_memory_channel[tuple[str, int, int]](64)
        self._nursery: trio.Nursery | None = None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            await trio.sleep_forever()

    async def start(self, child: Child, timeout: float) -> bool:
        """Spawn `child` and wait until it is ready or dead (killed if it is neither within
        `timeout`). Returns True if ready."""
        assert child.spec is not None
        assert self._nursery is not None
        child.incarnation += 1
        child.ready = trio.Event()
        child.settled = trio.Event()
        child.exited = trio.Event()
        child.forked = trio.Event()
        child.expected_exit = False
        child.signalled = set()
        child.move("spawn")
        child.started_at = None
        applog = self._app_log(child) if child.identity.kind is ActorKind.MINIAPP else None
        ours, theirs = channel_pair()
        # A sandboxed child's first byte is its sandbox's report (the seccomp listener rides on
        # it), read here before the bus gets the channel: the bus takes no descriptor from a
        # child, and by the time the report is read the child runs untrusted code.
        sandboxed = is_sandboxed(child.spec.config)
        if not sandboxed:
            self.bus.connect(child.identity, child.incarnation, Channel(ours))
        # Until `_take_report` has it, a sandboxed child's channel is this function's to close,
        # on every way out: the tree stopping mid-start cancels any of the waits below, and a
        # socket left to the garbage collector is a leak (and a ResourceWarning much later).
        unclaimed = ours if sandboxed else None
        try:
            try:
                quota = await self._fork(child, theirs, applog)
                self._changes.notify()  # starting, with its new pid
                assert child.pid is not None
                child.pidfd = os.pidfd_open(child.pid)
            finally:
                child.forked.set()  # a ready it sent before this is taken now (`Supervisor`)
            self._nursery.start_soon(
                self._watch, child, child.incarnation, child.pidfd, child.exited
            )
            joined = await self._nursery.start(self._watch_quotas, child, child.incarnation, quota)
            with trio.move_on_after(timeout):
                if unclaimed is not None:
                    channel, unclaimed = unclaimed, None
                    await self._take_report(child, channel, joined)  # closes it or hands it on
                await child.settled.wait()
        finally:
            if unclaimed is not None:
                unclaimed.close()
        if not child.ready.is_set() and not child.exited.is_set():
            log.error("supervisor.start_timeout name=%s", child.spec.name)
            signal_child(child, signal.SIGKILL)
        return child.ready.is_set()

    async def _fork(
        self, child: Child, channel: socket.socket, applog: _applog.AppLog | None
    ) -> SandboxPolicy | None:
        """Have the zygote fork `child` with `channel` as its control channel (closed here: it
        is the child's now) and, given its app's log, its stdout and stderr captured into it
        (a MiniApp's streams are its own, never the runtime's: two pipes, read here). Sets its
        pid; returns its quota policy."""
        assert self._nursery is not None
        readers: tuple[int, int] | None = None
        stdio: tuple[int, int] | None = None
        try:
            if applog is not None:
                out_read, out_write = os.pipe2(os.O_CLOEXEC)
                err_read, err_write = os.pipe2(os.O_CLOEXEC)
                readers, stdio = (out_read, err_read), (out_write, err_write)
            boot, quota = self._boot(child)
            child.spawned_at = time.monotonic()
            if quota is not None and quota.pids_cgroup is not None and self.pids is not None:
                # The grace period its move into the cgroup waits for begins now, not once the
                # zygote has said its pid (`PidsCgroups.prime`).
                self._nursery.start_soon(trio.to_thread.run_sync, self.pids.prime)
            child.pid = await self.zygote.spawn(boot.to_json(), channel, stdio)
        except BaseException:
            for read_end in readers or ():
                os.close(read_end)
            raise
        finally:
            channel.close()
            for write_end in stdio or ():
                os.close(write_end)  # the child's now: EOF when it (and only it) has exited
        if applog is not None and readers is not None:
            self.captures += 2
            self._nursery.start_soon(self._capture, readers[0], "out", applog)
            self._nursery.start_soon(self._capture, readers[1], "err", applog)
        return quota

    def _app_log(self, child: Child) -> _applog.AppLog:
        """The log of this MiniApp's app_scope, shared by its streams and its restarts.
        Raises LineUpError(invalid_arguments) for a name that is no app_scope."""
        scope = child.identity.name.removeprefix("miniapp:")
        applog = self._app_logs.get(scope)
        if applog is None:
            path = _applog.app_log_path(self.data_dir, scope)
            _applog.open_logs_dir(self.data_dir)
            applog = self._app_logs[scope] = _applog.AppLog(path)
        return applog

    def view_log(self, app_scope: str, level: str, text: str) -> None:
        """A line an app's Surface logged (through the Shell and the hostbridge): into that
        app's own log, escaped and cut as its own output is, marked `view` and its level.
        Raises LineUpError(invalid_arguments) for a name that is no app_scope."""
        applog = self._app_logs.get(app_scope)
        if applog is None:
            path = _applog.app_log_path(self.data_dir, app_scope)
            _applog.open_logs_dir(self.data_dir)
            applog = self._app_logs[app_scope] = _applog.AppLog(path)
        raw = f"{level} {text}".encode("utf-8", "surrogatepass")[: _applog.MAX_LINE]
        applog.write([_applog.format_line(time.time(), "view", raw)])

    async def _capture(self, read_end: int, stream: _applog.Stream, applog: _applog.AppLog) -> None:
        try:
            await _applog.capture(read_end, stream, applog)
        finally:
            self.captures -= 1
            self._changes.notify()

    def _boot(self, child: Child) -> tuple[BootInfo, SandboxPolicy | None]:
        """What `child` boots with: for a sandboxed child, its pids cgroup (made here, if the
        kernel offers one) is in its policy; and the policy whose quotas the supervisor
        measures (None for any other child, or a policy the child itself will refuse)."""
        assert child.spec is not None
        config = dict(child.spec.config)
        policy = quota_policy(config)
        boot = BootInfo(
            child.spec.name,
            child.spec.kind.value,
            child.incarnation,
            child.spec.target,
            str(self.data_dir),
            config,
        )
        if policy is None:
            return boot, None
        if self.pids is not None and policy.pids_cgroup is None:
            try:
                cgroup = self.pids.for_app(policy.app_scope, policy.threads)
            except OSError as exc:
                log.warning(
                    "sandbox.no_pids_cgroup app_scope=%s errno=%s", policy.app_scope, exc.errno
                )
            else:
                policy = policy.model_copy(update={"pids_cgroup": str(cgroup)})
                config["sandbox"] = {**config["sandbox"], "pids_cgroup": str(cgroup)}
        return boot, policy

    async def _watch_quotas(
        self,
        child: Child,
        incarnation: int,
        policy: SandboxPolicy | None,
        *,
        task_status: trio.TaskStatus[trio.Event | None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Move the child into its pids cgroup, if it has one (the event it starts with is
        set once it is there), then, once it is up and every CHECK_INTERVAL while this
        incarnation lives, measure the app's data dir and read the cgroup's limit events (see
        `_quota`). Nothing without a policy."""
        joined = trio.Event() if policy is not None and policy.pids_cgroup else None
        task_status.started(joined)
        if policy is None:
            return
        if joined is not None and policy.pids_cgroup is not None and self.pids is not None:
            assert child.pid is not None
            cgroup = Path(policy.pids_cgroup)
            if not await trio.to_thread.run_sync(self.pids.move, child.pid, cgroup):
                log.warning("sandbox.pids_cgroup_failed name=%s", child.identity.name)
                signal_child(child, signal.SIGKILL)  # it waits for our word: it never runs
                return
            joined.set()
            self._changes.notify()
        await child.settled.wait()  # measured once it is up: not competing with its start
        home = app_data_dir(policy.data_dir or self.data_dir, policy.app_scope)
        max_bytes = policy.disk_mb << 20
        while child.incarnation == incarnation and not child.exited.is_set():
            usage = await trio.to_thread.run_sync(_quota.measure, home, policy.disk_entries)
            if child.incarnation != incarnation or child.exited.is_set():
                return
            if self.pids is not None and self.pids.limit_hits(policy.app_scope):
                self._audit_quota(child, "threads")
            if _quota.over_quota(usage, max_bytes=max_bytes, max_entries=policy.disk_entries):
                await self._stop_over_quota(child, "disk")
                return
            with trio.move_on_after(_quota.CHECK_INTERVAL):
                await child.exited.wait()

    def _audit_quota(self, child: Child, quota: str) -> None:
        log.warning("sandbox.quota_exceeded name=%s quota=%s", child.identity.name, quota)
        self.bus.audit(
            AuditRecord(
                event=_quota.QUOTA_EXCEEDED,
                actor="supervisor",
                peer=child.identity.name,
                code=quota,
            )
        )

    async def _stop_over_quota(self, child: Child, quota: str) -> None:
        """Stop a MiniApp past its quota for good (as one that misbehaves: not restarted, its
        instances fail), and audit it."""
        self._audit_quota(child, quota)
        child.expected_exit = True
        signal_child(child, signal.SIGKILL)
        with trio.move_on_after(STOP_KILL_WAIT):
            await child.exited.wait()
        child.move("killed")
        self._changes.notify()
        try:
            await self.bus.notify(
                "focus",
                AppFailedEvent(
                    app_scope=child.identity.name.removeprefix("miniapp:"),
                    code=_quota.QUOTA_CODE,
                ),
                timeout=5.0,
            )
        except LineUpError:
            log.info("supervisor.focus_not_told app=%s", child.identity.name)

    async def _take_report(
        self, child: Child, channel: socket.socket, joined: trio.Event | None
    ) -> None:
        incarnation = child.incarnation
        try:
            if joined is not None:
                # It waits, after its report, until it is in its cgroup: the word goes as soon
                # as it is, so that it is there when the child asks, not one more trip later
                # (the child reads nothing on the channel before its report is sent).
                await self._changes.wait_until(lambda: joined.is_set() or child.exited.is_set())
                if joined.is_set():
                    with contextlib.suppress(OSError):  # it died meanwhile: its report says so
                        channel.send(CGROUP_JOINED)  # one byte into an empty socket: never blocks
            listener = await receive_report(channel)
        except BaseException:
            channel.close()
            raise
        assert self._nursery is not None
        if child.exited.is_set() or child.incarnation != incarnation or child.expected_exit:
            # It died before its report, or its stop began (the stop closed what the bus had
            # of it, so a channel connected now would carry its ready into the stop): nothing
            # to connect or to answer, and its closed channel tells it to end.
            channel.close()
            if listener is not None:
                os.close(listener)
            return
        self.bus.connect(child.identity, incarnation, Channel(channel))
        if listener is not None:
            self._nursery.start_soon(
                functools.partial(
                    answer_denials,
                    listener,
                    child.identity.name,
                    self.bus.audit,
                    clock=time.monotonic,
                )
            )

    async def _watch(self, child: Child, incarnation: int, pidfd: int, exited: trio.Event) -> None:
        await trio.lowlevel.wait_readable(pidfd)
        # Readable pidfd: the process has exited, so this waitid reaps without blocking.
        result = os.waitid(os.P_PIDFD, pidfd, os.WEXITED)  # noqa: ASYNC222
        os.close(pidfd)  # only once reaped: until then a stop may still signal it
        exited.set()  # this process's, even once a newer one is the child's: its stop waits
        status = exit_status(result)
        if child.incarnation == incarnation:
            child.move("crashed" if status != 0 else "exited")
            child.exit_status = status
            child.pidfd = None
            child.settled.set()
            self._changes.notify()
            self.bus.disconnect(child.identity.name)
            self._introductions.forget(child.identity.name, incarnation)
        await self._exits_send.send((child.identity.name, incarnation, status))

    async def stop(self, child: Child) -> None:
        """Close its channel → grace → SIGTERM → wait → SIGKILL. Shielded and bounded.

        It stops the process the child has when it begins, and only that one: a start during
        the stop (focus starting the app again) makes a new process, which the stop's signals
        and its end leave alone. It never waits for a start under way (whose fork may be held
        up): a child with no process yet has nothing to stop."""
        with trio.CancelScope(shield=True):
            incarnation, pidfd, exited = child.incarnation, child.pidfd, child.exited
            if pidfd is None or exited.is_set():
                return
            child.expected_exit = True
            child.move("stop")
            self._changes.notify()
            self.bus.disconnect(child.identity.name)
            assert child.spec is not None
            for sig, wait in (
                (None, child.spec.shutdown_grace),
                (signal.SIGTERM, STOP_TERM_WAIT),
                (signal.SIGKILL, STOP_KILL_WAIT),
            ):
                if exited.is_set():
                    break
                if sig is not None:
                    # Not reaped yet (`exited` is set as its watcher closes the pidfd): the
                    # pidfd is still this process's.
                    if child.incarnation == incarnation:
                        child.signalled.add(sig)
                    with contextlib.suppress(ProcessLookupError):
                        signal.pidfd_send_signal(pidfd, sig)
                with trio.move_on_after(wait):
                    await exited.wait()
            if child.incarnation == incarnation:
                child.move("stopped")
                self._changes.notify()
