"""The supervisor: spawns, watches and restarts children; owns and hands out every channel.

Theory of operation
-------------------
Children start in spec order, each one ready (its `ActorReadyEvent`) before the next begins, and
stop in reverse order. A spec that names the children it starts `after` waits for those alone,
so independent children start together; the tree is ready once every child has settled. Each
child is forked by the zygote as the supervisor's own child, so the supervisor watches its
pidfd and reaps it. A death that the supervisor did not cause goes through
the restart policy: the restart type says whether to restart, the strategy says what else to
restart, the intensity says when to give up (escalate: stop everything, exit non-zero).

The supervisor is also the bus's broker: a child asks to be introduced to a peer, the supervisor
checks the ACL table, waits until that peer is ready, and hands each side one end of a new
socketpair with the other side's identity. It keeps no business state.

The runtime's lifecycle (seed 004 §3.3) is the supervisor's to tell, in part: `restoring` from
the start until every child is ready (focus is ready once it has recovered the registry and the
instances, the store once its database is open), then the link's states as the transport
reports them (authenticating → synchronizing → online, reconnecting, offline_degraded), then
`stopping` once shutdown begins and `stopped` at its end (written to the data dir, see
`_control.write_state_file`, for a `lineup status` that finds nobody to ask). The hostbridge is
told when the supervisor's own part begins or ends, so the Shell's badge shows it over the
link's state.

`attach` lets a test or a benchmark join the tree as a peer of any kind, through exactly the same
channels and checks a child gets.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import signal
import socket
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import trio

from lineup.actors.kernel import (
    ActorKind,
    AuditRecord,
    Bus,
    Channel,
    Connection,
    Envelope,
    ErrorCode,
    Handler,
    HealthReply,
    HealthRequest,
    Identity,
    LineUpError,
    Message,
    Outcome,
    channel_allowed,
    channel_pair,
)
from lineup.actors.kernel.actor import EXIT_CANNOT_START, BootInfo
from lineup.actors.kernel.control import (
    SUPERVISOR_PHASES,
    ActorReadyEvent,
    AppFailedEvent,
    ChannelOpenedEvent,
    ChildStartReply,
    ChildStartRequest,
    ChildStatus,
    ChildStopReply,
    ChildStopRequest,
    IntroduceReply,
    IntroduceRequest,
    PeerMisbehavedEvent,
    RuntimeLink,
    RuntimeLinkEvent,
    RuntimeStateEvent,
    SandboxStatus,
    StatusReply,
    StatusRequest,
)
from lineup.facts.children import UP, ChildState

from . import _applog, _quota
from ._control import clear_state_file, serve_control, write_state_file
from ._denials import answer_denials
from ._sandbox import (
    CGROUP_JOINED,
    SandboxPolicy,
    app_data_dir,
    is_sandboxed,
    quota_policy,
    receive_report,
    sandbox_status,
)
from ._spawn import Zygote
from ._spec import ChildSpec, Intensity, Restart, Strategy

__all__ = ["Escalation", "Supervisor"]

log = logging.getLogger("lineup.supervisor")

MINIAPP_HOST: Final = "lineup.sdk:MiniAppHost"  # the only program a dynamic child may run
STOP_TERM_WAIT: Final = 0.5  # after SIGTERM, before SIGKILL
STOP_KILL_WAIT: Final = 2.0
INTRODUCE_WAIT: Final = 10.0  # how long an introduction waits for the peer to become ready
DRAIN_WAIT: Final = 1.0  # after the last child stops, for the MiniApps' last output lines
# The transport's link states before its first login has been answered (see `link_wait`).
_BEFORE_LINK: Final = frozenset({"created", "restoring", "authenticating"})
# The lifecycle states that are the supervisor's, not the link's (see the module's docstring).
RESTORING: Final = "restoring"
STOPPING: Final = "stopping"
STOPPED: Final = "stopped"
TELL_WAIT: Final = 2.0  # a lifecycle state told to the hostbridge, before it is given up
PHASE_RETRY: Final = 0.5  # then it is told again this much later, unless the tree moved on
STOPPING_TOLD_WAIT: Final = 1.0  # how long shutdown waits for the Shell to be told `stopping`

Reporter = Callable[[str], None]


class Escalation(LineUpError):
    """A child exceeded the restart intensity, or cannot start as configured (`reported`:
    it said why itself, in one line on stderr); the tree was stopped."""

    reported: bool = False


@dataclass(eq=False)
class _Peer:
    identity: Identity
    incarnation: int = 0
    ready: trio.Event = field(default_factory=trio.Event)

    def is_up(self) -> bool:
        return self.ready.is_set()


@dataclass(eq=False)
class _Child(_Peer):
    spec: ChildSpec | None = None
    state: ChildState = "new"  # `facts/children.py`
    pid: int | None = None
    pidfd: int | None = None
    restarts: int = 0
    recent: deque[float] = field(default_factory=deque)
    started_at: float | None = None
    spawned_at: float = 0.0
    exited: trio.Event = field(default_factory=trio.Event)
    settled: trio.Event = field(default_factory=trio.Event)  # ready, or dead before ready
    expected_exit: bool = False
    signalled: set[int] = field(default_factory=set)  # what this incarnation was sent by us
    exit_status: int | None = None  # the last incarnation's, once it exited

    def is_up(self) -> bool:
        return self.state == UP


class Supervisor:
    def __init__(
        self,
        specs: Sequence[ChildSpec],
        *,
        data_dir: Path,
        strategy: Strategy = Strategy.ONE_FOR_ONE,
        intensity: Intensity | None = None,
        report: Reporter | None = None,
        preload: tuple[str, ...] = (),
        lanes: tuple[tuple[str, ...], ...] = (),
        control_socket: bool = True,
        link_wait: float = 0.0,
        zygote: Zygote | None = None,
    ) -> None:
        self.data_dir = data_dir
        # How long `run`, once every child is ready, waits for the transport's first login to
        # be answered (the AppServer session stored, or the link failed) before the tree says
        # ready: with an AppServer of its own, a message sent at "ready" finds the session.
        self.link_wait = link_wait
        self.strategy = strategy
        self.intensity = intensity or Intensity()
        self._report = report or (lambda line: None)
        self.bus = Bus(Identity(ActorKind.SUPERVISOR, "supervisor"), self._dispatch)
        self.bus.on_misbehaved = self._misbehaved_here
        self.children: dict[str, _Child] = {}
        for spec in specs:
            if spec.name in self.children or spec.name == "supervisor":
                raise ValueError(f"duplicate child name {spec.name!r}")
            unknown = set(spec.after or ()) - set(self.children)
            if unknown:  # listed before it: no cycle, and it stops before what it needs
                raise ValueError(f"{spec.name!r} starts after {sorted(unknown)}, not before it")
            self.children[spec.name] = _Child(Identity(spec.kind, spec.name), spec=spec)
        self._attached: dict[str, _Peer] = {}
        self._introduced: set[tuple[str, int, str, int]] = set()
        # lanes: more zygotes, see `_spawn`. A zygote given is the caller's, kept running for
        # the next tree (a test worker's trees, each of which would otherwise pay a fresh
        # interpreter and every import again); one made here is stopped with the tree.
        self._owns_zygote = zygote is None
        self._zygote = Zygote(preload, lanes) if zygote is None else zygote
        self._control_socket = control_socket
        self._miniapp_lock = trio.Lock()
        self.allow_weak_sandbox = False
        self._exits_send, self._exits_recv = trio.open_memory_channel[tuple[str, int, int]](64)
        self._nursery: trio.Nursery | None = None
        self._restarts: trio.Nursery | None = None  # one-for-one restarts, while supervising
        self.state = "created"
        self.started_at = time.monotonic()
        self.info: dict[str, str] = {}  # extra facts for `lineup status` (URLs, flags)
        self._runtime: RuntimeLink | None = None  # the transport's state, for `lineup status`
        self._restored = False  # every child was ready once: the lifecycle is the link's now
        self._phase_told: tuple[str, int, str] | None = None  # (hostbridge, incarnation, phase)
        self._app_logs: dict[str, _applog.AppLog] = {}
        self._captures = 0  # MiniApp output streams still being read
        self.escalated: str | None = None
        self._changed = trio.Event()  # set and replaced whenever a child is ready or exits
        self._sandbox: SandboxStatus | None = None
        self._pids: _quota.PidsCgroups | None = None  # per-MiniApp pids cgroups, if offered

    def _notify_changed(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    @property
    def capturing(self) -> int:
        """How many MiniApp output streams are still being read into their logs."""
        return self._captures

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        """Wait until `predicate()` holds, re-checking each time a child is ready or exits
        (or a MiniApp's output stream is closed)."""
        while not predicate():
            await self._changed.wait()

    # ------------------------------------------------------------------ running the tree

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start every child, then supervise until cancelled. Raises Escalation."""
        # The bus and the child watchers live in a shielded scope of their own: when `run` is
        # cancelled they must keep working while the children are stopped, and end only then.
        services = trio.CancelScope(shield=True)
        escalation: Escalation | None = None
        if self._control_socket:
            clear_state_file(self.data_dir)
        async with trio.open_nursery() as outer:
            await outer.start(self._services, services)
            try:
                self.state = "starting"
                self._notify_changed()
                await self._zygote.start()
                self._sandbox = sandbox_status()
                found = _quota.find_pids_cgroup()
                self._pids = _quota.PidsCgroups(*found) if found is not None else None
                if self._pids is not None:
                    self._pids.sweep()
                await self._start_all(before_ready=True)
                self._restored = True
                self._notify_changed()
                if self.link_wait > 0:
                    with trio.move_on_after(self.link_wait):
                        await self.wait_until(self._linked_once)
                self.state = "running"
                self._report(
                    f"ready in {time.monotonic() - self.started_at:.2f} s "
                    f"({len(self.children)} actors)"
                )
                task_status.started()
                await self._start_all(before_ready=False)
                await self._zygote.preload_all()
                escalation = await self._supervise_and_restart()
            except Escalation as exc:
                escalation = exc  # raised bare below, not wrapped in the nursery's group
            finally:
                with trio.CancelScope(shield=True):
                    self.state = STOPPING
                    self._notify_changed()
                    with trio.move_on_after(STOPPING_TOLD_WAIT):
                        await self.wait_until(self._stopping_told)
                    await self.stop_all()
                    if self._control_socket:
                        self._write_stopped(escalated=escalation is not None)
                    services.cancel()
        if escalation is not None:
            raise escalation

    def _write_stopped(self, *, escalated: bool) -> None:
        try:
            write_state_file(self.data_dir, STOPPED, pid=os.getpid(), escalated=escalated)
        except OSError as exc:
            log.error("supervisor.state_file_unwritten errno=%s", exc.errno)

    def lifecycle(self) -> RuntimeLink | None:
        """The runtime's lifecycle state now: the supervisor's own (`restoring`, `stopping`,
        `stopped`) or else the link's, as the transport last said it (None if it never spoke:
        a tree without a transport)."""
        if self.state in (STOPPING, STOPPED):
            return RuntimeLink(state=self.state)
        if not self._restored:
            return RuntimeLink(state=RESTORING)
        return self._runtime

    def _phase(self) -> str:
        """The supervisor's part of the lifecycle: restoring, stopping, or `link` (the
        transport's states are shown)."""
        if self.state in (STOPPING, STOPPED):
            return STOPPING
        return "link" if self._restored else RESTORING

    def _hostbridge(self) -> _Child | None:
        return next(
            (c for c in self.children.values() if c.identity.kind is ActorKind.HOSTBRIDGE), None
        )

    def _stopping_told(self) -> bool:
        hostbridge = self._hostbridge()
        if hostbridge is None or not hostbridge.is_up():
            return True  # no Shell to tell
        told = self._phase_told
        return told is not None and told[1:] == (hostbridge.incarnation, STOPPING)

    async def _announce_phase(self) -> None:
        """Tell the hostbridge each change of the supervisor's part of the lifecycle (one task:
        in order, the latest only), and again to each new incarnation. A tell that does not
        get through is tried again on the next change (a child ready or gone, a state), or
        after PHASE_RETRY at the latest: the tree may well not change again (a busy machine
        made the tell of `restoring`'s end time out, and the Shell said Restoring… for good)."""
        retry = math.inf  # nothing to try again
        while True:
            changed = self._changed  # taken first: a change from here on sets it
            hostbridge = self._hostbridge()
            if hostbridge is not None and hostbridge.is_up():
                phase = self._phase()
                told = (hostbridge.identity.name, hostbridge.incarnation, phase)
                if told != self._phase_told:
                    link = self._runtime if phase == "link" else None
                    event = RuntimeStateEvent(
                        state=_link_state(link, SUPERVISOR_PHASES) if phase == "link" else phase,
                        reason=link.reason if link is not None else None,
                    )
                    if await self.bus.tell(told[0], event, timeout=TELL_WAIT) is None:
                        await self._passed_on(told[0])
                        self._phase_told = told
                        self._notify_changed()
                        retry = math.inf
                        continue
                    retry = PHASE_RETRY
            with trio.move_on_after(retry):
                await changed.wait()

    async def _passed_on(self, name: str) -> None:
        """Wait until `name` has handled what it was told and had a turn to pass it on: its
        answer to a health probe sent after it (one channel, read in order) comes once the
        event's handler ran and its Shell senders were runnable. Shutdown may stop the
        hostbridge right after `stopping`, and a frame still queued then would be lost."""
        with contextlib.suppress(LineUpError):
            await self.bus.request(name, HealthRequest(), expect=HealthReply, timeout=TELL_WAIT)

    def _linked_once(self) -> bool:
        return self._runtime is not None and self._runtime.state not in _BEFORE_LINK

    async def _start_all(self, *, before_ready: bool) -> None:
        """Start the children whose spec's `before_ready` is this, each once the children it
        starts after have settled (the others have: they were started before, or will be
        after). Returns when all have settled; a child that died starting is left to the
        restart policy, as one started alone would be. An error starting one (the zygote
        failing) is raised bare, once the others' starts are cancelled."""
        children = {
            name: child
            for name, child in self.children.items()
            if child.spec is not None and child.spec.before_ready is before_ready
        }
        settled = {name: trio.Event() for name in self.children}
        for name, event in settled.items():
            if name not in children:
                event.set()
        failure: Exception | None = None

        async def start(child: _Child, after: list[str], turn: _Child | None) -> None:
            nonlocal failure
            try:
                for name in after:
                    await settled[name].wait()
                if turn is not None:  # its turn comes once that child has its pid
                    await self.wait_until(lambda: turn.pid is not None)
                await self._start(child)
                self._check_can_start(child, child.exit_status)  # the others' starts end
            except Exception as exc:
                failure = failure or exc
                starts.cancel_scope.cancel()
            finally:
                settled[child.identity.name].set()

        async with trio.open_nursery() as starts:
            earlier: list[str] = []
            # Those that wait for no one are spawned in spec order, one after the other in each
            # zygote lane (trio runs new tasks in no set order): so a zygote loads their modules
            # in that order, and a child whose wait is over is spawned next, not behind all.
            turns: dict[int, _Child] = {}
            for name, child in children.items():
                assert child.spec is not None
                after = earlier[:] if child.spec.after is None else list(child.spec.after)
                lane = self._zygote.lane_of(child.spec.target)
                starts.start_soon(start, child, after, None if after else turns.get(lane))
                if not after:
                    turns[lane] = child
                earlier.append(name)
        if failure is not None:
            raise failure

    async def _services(
        self,
        scope: trio.CancelScope,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        with scope:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await nursery.start(self.bus.run)
                if self._control_socket:
                    await nursery.start(serve_control, self.bus, self.data_dir)
                nursery.start_soon(self._announce_phase)
                task_status.started()
                await trio.sleep_forever()

    async def stop_all(self) -> None:
        """Stop every child in reverse start order, then the zygote. Shielded and bounded."""
        with trio.CancelScope(shield=True):
            self.state = "stopping"
            for child in reversed(list(self.children.values())):
                await self._stop(child)
            with trio.move_on_after(DRAIN_WAIT):
                await self.wait_until(lambda: self._captures == 0)
            if self._owns_zygote:
                await self._zygote.stop()
            if self._pids is not None:
                self._pids.close()
            self.state = "stopped"

    async def _supervise_and_restart(self) -> Escalation | None:
        """Supervise until cancelled or escalated; restarts run in a nursery of their own,
        which ends (cancelled) before the tree is stopped."""
        async with trio.open_nursery() as restarts:
            self._restarts = restarts
            try:
                await self._supervise()
            except Escalation as exc:
                restarts.cancel_scope.cancel()
                return exc
        return None

    async def _supervise(self) -> None:
        async for name, incarnation, status in self._exits_recv:
            child = self.children[name]
            if incarnation != child.incarnation or child.expected_exit:
                continue
            self._check_can_start(child, status)
            log.warning("supervisor.child_exited name=%s pid=%s status=%s", name, child.pid, status)
            if status < 0 and -status not in child.signalled:
                # A signal the runtime did not send: the sandbox's limits (SIGXCPU from
                # RLIMIT_CPU, SIGSYS from seccomp), the kernel's OOM killer, someone else.
                self.bus.audit(
                    AuditRecord(
                        event="supervisor.child_killed",
                        actor="supervisor",
                        peer=name,
                        code=_signal_name(-status),
                    )
                )
            if not _should_restart(child.spec, status):
                if child.identity.kind is ActorKind.MINIAPP:
                    assert self._restarts is not None
                    self._restarts.start_soon(self._miniapp_ended, child)
                continue
            recent = self._note_restart(child)
            if recent > self.intensity.max_restarts:
                # A MiniApp that crashes in a loop is given up on, not the runtime.
                miniapp = child.identity.kind is ActorKind.MINIAPP
                self.bus.audit(
                    AuditRecord(
                        event="supervisor.miniapp_given_up" if miniapp else "supervisor.escalated",
                        actor="supervisor",
                        peer=name,
                        code=ErrorCode.SUPERVISOR_ESCALATED.value,
                    )
                )
                if miniapp:
                    child.state = "failed"
                    continue
                self.escalated = name
                raise Escalation(
                    ErrorCode.SUPERVISOR_ESCALATED,
                    f"{name} restarted {recent - 1} times within "
                    f"{self.intensity.period:g} s; stopping the tree",
                )
            if self.strategy is Strategy.REST_FOR_ONE:
                names = list(self.children)
                group = [self.children[n] for n in names[names.index(name) :]]
                for later in reversed(group[1:]):
                    await self._stop(later)
                await self._restart(group, recent)  # in order: later children need earlier
            else:
                # One for one: this child's restart goes on by itself, so a child slow to
                # come back (or backing off) holds up no other child's restart.
                assert self._restarts is not None
                self._restarts.start_soon(self._restart, [child], recent)

    async def _miniapp_ended(self, child: _Child) -> None:
        """A MiniApp's host runs until it is stopped; one that ended by itself (exit 0) left its
        instances without a process. They fail and their calls end now, not at their deadlines;
        a later launch starts the app again."""
        self.bus.audit(
            AuditRecord(
                event="supervisor.miniapp_exited",
                actor="supervisor",
                peer=child.identity.name,
                code=ErrorCode.APP_EXITED.value,
            )
        )
        try:
            await self.bus.notify(
                "focus",
                AppFailedEvent(
                    app_scope=child.identity.name.removeprefix("miniapp:"),
                    code=ErrorCode.APP_EXITED.value,
                ),
                timeout=5.0,
            )
        except LineUpError:
            log.info("supervisor.focus_not_told app=%s", child.identity.name)

    async def _restart(self, group: list[_Child], recent: int) -> None:
        """Restart `group[0]`, which died (the `recent`th time in the period), then the rest."""
        await trio.sleep(self.intensity.backoff(recent - 1))
        for member in group:
            member.state = "restarting"
            member.restarts += member is group[0]
            await self._start(member)

    def _check_can_start(self, child: _Child, status: int | None) -> None:
        """Raise Escalation, without a restart, for a runtime child that exited because it
        cannot start as configured (its port is taken): it said why; a restart would fail the
        same way. During the tree's start, the other children's starts end at once."""
        if status != EXIT_CANNOT_START or child.identity.kind is ActorKind.MINIAPP:
            return
        self.bus.audit(
            AuditRecord(
                event="supervisor.escalated",
                actor="supervisor",
                peer=child.identity.name,
                code=ErrorCode.SUPERVISOR_ESCALATED.value,
            )
        )
        escalation = Escalation(
            ErrorCode.SUPERVISOR_ESCALATED, f"{child.identity.name} cannot start as configured"
        )
        escalation.reported = True
        raise escalation

    def _note_restart(self, child: _Child) -> int:
        now = time.monotonic()
        child.recent.append(now)
        while child.recent and now - child.recent[0] > self.intensity.period:
            child.recent.popleft()
        return len(child.recent)

    # ------------------------------------------------------------------ one child

    async def _start(self, child: _Child) -> bool:
        """Spawn `child` and wait until it is ready or dead. Returns True if ready."""
        assert child.spec is not None
        assert self._nursery is not None
        child.incarnation += 1
        child.ready = trio.Event()
        child.settled = trio.Event()
        child.exited = trio.Event()
        child.expected_exit = False
        child.signalled = set()
        child.state = "starting"
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
            quota = await self._fork(child, theirs, applog)
            self._notify_changed()  # starting, with its new pid
            assert child.pid is not None
            child.pidfd = os.pidfd_open(child.pid)
            self._nursery.start_soon(self._watch, child, child.incarnation, child.pidfd)
            joined = await self._nursery.start(self._watch_quotas, child, child.incarnation, quota)
            with trio.move_on_after(self.intensity.start_timeout):
                if unclaimed is not None:
                    channel, unclaimed = unclaimed, None
                    await self._take_report(child, channel, joined)  # closes it or hands it on
                await child.settled.wait()
        finally:
            if unclaimed is not None:
                unclaimed.close()
        if not child.ready.is_set() and not child.exited.is_set():
            log.error("supervisor.start_timeout name=%s", child.spec.name)
            _signal(child, signal.SIGKILL)
        return child.ready.is_set()

    async def _fork(
        self, child: _Child, channel: socket.socket, applog: _applog.AppLog | None
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
            child.pid = await self._zygote.spawn(boot.to_json(), channel, stdio)
        except BaseException:
            for read_end in readers or ():
                os.close(read_end)
            raise
        finally:
            channel.close()
            for write_end in stdio or ():
                os.close(write_end)  # the child's now: EOF when it (and only it) has exited
        if applog is not None and readers is not None:
            self._captures += 2
            self._nursery.start_soon(self._capture, readers[0], "out", applog)
            self._nursery.start_soon(self._capture, readers[1], "err", applog)
        return quota

    def _app_log(self, child: _Child) -> _applog.AppLog:
        """The log of this MiniApp's app_scope, shared by its streams and its restarts.
        Raises LineUpError(invalid_arguments) for a name that is no app_scope."""
        scope = child.identity.name.removeprefix("miniapp:")
        applog = self._app_logs.get(scope)
        if applog is None:
            path = _applog.app_log_path(self.data_dir, scope)
            _applog.open_logs_dir(self.data_dir)
            applog = self._app_logs[scope] = _applog.AppLog(path)
        return applog

    async def _capture(self, read_end: int, stream: _applog.Stream, applog: _applog.AppLog) -> None:
        try:
            await _applog.capture(read_end, stream, applog)
        finally:
            self._captures -= 1
            self._notify_changed()

    def _boot(self, child: _Child) -> tuple[BootInfo, SandboxPolicy | None]:
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
        if self._pids is not None and policy.pids_cgroup is None:
            try:
                cgroup = self._pids.for_app(policy.app_scope, policy.threads)
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
        child: _Child,
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
        if joined is not None and policy.pids_cgroup is not None and self._pids is not None:
            assert child.pid is not None
            cgroup = Path(policy.pids_cgroup)
            if not await trio.to_thread.run_sync(self._pids.move, child.pid, cgroup):
                log.warning("sandbox.pids_cgroup_failed name=%s", child.identity.name)
                _signal(child, signal.SIGKILL)  # it waits for our word: it never runs
                return
            joined.set()
            self._notify_changed()
        await child.settled.wait()  # measured once it is up: not competing with its start
        home = app_data_dir(policy.data_dir or self.data_dir, policy.app_scope)
        max_bytes = policy.disk_mb << 20
        while child.incarnation == incarnation and not child.exited.is_set():
            usage = await trio.to_thread.run_sync(_quota.measure, home, policy.disk_entries)
            if child.incarnation != incarnation or child.exited.is_set():
                return
            if self._pids is not None and self._pids.limit_hits(policy.app_scope):
                self._audit_quota(child, "threads")
            if _quota.over_quota(usage, max_bytes=max_bytes, max_entries=policy.disk_entries):
                await self._stop_over_quota(child, "disk")
                return
            with trio.move_on_after(_quota.CHECK_INTERVAL):
                await child.exited.wait()

    def _audit_quota(self, child: _Child, quota: str) -> None:
        log.warning("sandbox.quota_exceeded name=%s quota=%s", child.identity.name, quota)
        self.bus.audit(
            AuditRecord(
                event=_quota.QUOTA_EXCEEDED,
                actor="supervisor",
                peer=child.identity.name,
                code=quota,
            )
        )

    async def _stop_over_quota(self, child: _Child, quota: str) -> None:
        """Stop a MiniApp past its quota for good (as one that misbehaves: not restarted, its
        instances fail), and audit it."""
        self._audit_quota(child, quota)
        child.expected_exit = True
        _signal(child, signal.SIGKILL)
        with trio.move_on_after(STOP_KILL_WAIT):
            await child.exited.wait()
        child.state = "failed"
        self._notify_changed()
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
        self, child: _Child, channel: socket.socket, joined: trio.Event | None
    ) -> None:
        incarnation = child.incarnation
        try:
            listener = await receive_report(channel)
            if joined is not None:  # it waits, after its report, until it is in its cgroup
                await self.wait_until(lambda: joined.is_set() or child.exited.is_set())
                if joined.is_set():
                    channel.send(CGROUP_JOINED)  # one byte into an empty socket: never blocks
        except BaseException:
            channel.close()
            raise
        assert self._nursery is not None
        if child.exited.is_set() or child.incarnation != incarnation:
            channel.close()  # it died before its report: nothing to connect or to answer
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

    async def _watch(self, child: _Child, incarnation: int, pidfd: int) -> None:
        await trio.lowlevel.wait_readable(pidfd)
        # Readable pidfd: the process has exited, so this waitid reaps without blocking.
        result = os.waitid(os.P_PIDFD, pidfd, os.WEXITED)  # noqa: ASYNC222
        os.close(pidfd)  # only once reaped: until then `_signal` may still use it
        status = _exit_status(result)
        if child.incarnation == incarnation:
            child.state = "failed" if status != 0 else "stopped"
            child.exit_status = status
            child.pidfd = None
            child.exited.set()
            child.settled.set()
            self._notify_changed()
            self.bus.disconnect(child.identity.name)
            self._forget_introductions(child.identity.name, incarnation)
        await self._exits_send.send((child.identity.name, incarnation, status))

    async def _stop(self, child: _Child) -> None:
        """Close its channel → grace → SIGTERM → wait → SIGKILL. Shielded and bounded."""
        with trio.CancelScope(shield=True):
            if child.pidfd is None or child.exited.is_set():
                return
            child.expected_exit = True
            child.state = "stopping"
            self.bus.disconnect(child.identity.name)
            assert child.spec is not None
            with trio.move_on_after(child.spec.shutdown_grace):
                await child.exited.wait()
            if not child.exited.is_set():
                _signal(child, signal.SIGTERM)
                with trio.move_on_after(STOP_TERM_WAIT):
                    await child.exited.wait()
            if not child.exited.is_set():
                _signal(child, signal.SIGKILL)
                with trio.move_on_after(STOP_KILL_WAIT):
                    await child.exited.wait()
            child.state = "stopped"

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Send a signal to a child (drills and tests; never used for a normal stop)."""
        _signal(self.children[name], sig)

    # ------------------------------------------------------------------ the broker

    def _peer(self, name: str) -> _Peer | None:
        peer = self.children.get(name) or self._attached.get(name)
        conn = self.bus.connection(name) if peer is None else None
        if conn is not None and conn.identity.kind is ActorKind.CLI:
            peer = _Peer(conn.identity, conn.incarnation)  # a `lineup` command, while connected
            peer.ready.set()
        return peer

    def _dispatch(self, env: Envelope) -> Outcome:
        """Events and what needs no wait are handled here, at once, in the order they arrive
        (the bus runs a handler inline unless it returns an awaitable). An async handler would
        make each event a task of its own, and trio runs the tasks of one batch in either
        order: the transport's `synchronizing` then `online`, told a moment apart, were applied
        the other way round, and the status said synchronizing for good."""
        body = env.body
        if isinstance(body, ActorReadyEvent):
            self._child_ready(env.sender, body)
            return None
        if isinstance(body, RuntimeLinkEvent):
            if env.sender.kind is ActorKind.TRANSPORT:
                self._runtime = RuntimeLink(state=body.state, reason=body.reason)
                self._notify_changed()
            return None
        if isinstance(body, StatusRequest):
            return self.status()
        if isinstance(body, HealthRequest):
            return HealthReply(
                name="supervisor",
                pid=os.getpid(),
                incarnation=0,
                uptime_s=time.monotonic() - self.started_at,
            )
        return self._dispatch_waiting(env)

    async def _dispatch_waiting(self, env: Envelope) -> Message | None:
        """What waits on another process: an introduction, a MiniApp's start or stop, a
        misbehaving peer's stop."""
        body = env.body
        if isinstance(body, IntroduceRequest):
            return await self._introduce(env.sender, body.peer)
        if isinstance(body, PeerMisbehavedEvent):
            await self._stop_misbehaving(env.sender, body)
            return None
        if isinstance(body, ChildStartRequest):
            return await self._start_miniapp(body)
        if isinstance(body, ChildStopRequest):
            return await self._stop_miniapp(body)
        raise LineUpError(ErrorCode.NO_HANDLER, body.TYPE)

    def _child_ready(self, sender: Identity, body: ActorReadyEvent) -> None:
        child = self.children.get(sender.name)
        # Not after its exit: a ready event read late must not revive a dead child's state.
        if child is not None and not child.ready.is_set() and not child.exited.is_set():
            child.state = "running"
            child.started_at = time.monotonic()
            child.ready.set()
            child.settled.set()
            self._notify_changed()
            elapsed = (child.started_at - child.spawned_at) * 1000
            self._report(f"{child.identity.name} ready (pid {body.pid}) in {elapsed:.1f} ms")

    async def _start_miniapp(self, request: ChildStartRequest) -> ChildStartReply:
        """Start one MiniApp's process (idempotent). Only `miniapp:<scope>` names, only the
        SDK's host as the program: focus decides *which* app runs, never *what code* runs."""
        if not request.name.startswith("miniapp:") or request.name in (
            "miniapp:",
            *(n for n, c in self.children.items() if c.identity.kind is not ActorKind.MINIAPP),
        ):
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, request.name)
        child = self.children.get(request.name)
        spec = ChildSpec(
            request.name,
            ActorKind.MINIAPP,
            MINIAPP_HOST,
            restart=Restart.TRANSIENT,
            # The sandbox is the supervisor's to set, after focus's config: a request can
            # name an app, never weaken its confinement.
            config={**request.config, "sandbox": self.sandbox_policy(request.name)},
        )
        if child is None:
            child = _Child(Identity(ActorKind.MINIAPP, request.name), spec=spec)
            self.children[request.name] = child
        elif not child.is_up():
            # What focus names now runs (an installed app updated or rolled back since).
            child.spec = spec
        if not child.is_up():
            async with self._miniapp_lock:
                if not child.is_up() and not await self._start(child):
                    raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, request.name)
        assert child.pid is not None
        return ChildStartReply(name=request.name, pid=child.pid, incarnation=child.incarnation)

    def sandbox_policy(self, name: str) -> dict[str, object]:
        """The confinement of one MiniApp's process (DESIGN §8; see `_sandbox`)."""
        return {
            "profile": "miniapp",
            "app_scope": name.removeprefix("miniapp:"),
            "data_dir": str(self.data_dir),
            "allow_weak": self.allow_weak_sandbox,
        }

    async def _stop_miniapp(self, request: ChildStopRequest) -> ChildStopReply:
        child = self.children.get(request.name)
        if child is None or child.identity.kind is not ActorKind.MINIAPP:
            return ChildStopReply(name=request.name, stopped=False)
        await self._stop(child)
        return ChildStopReply(name=request.name, stopped=True)

    async def _introduce(self, asker: Identity, name: str) -> IntroduceReply:
        me = self._peer(asker.name)
        target = self._peer(name)
        if me is None or target is None or name == asker.name:
            raise LineUpError(ErrorCode.ACTOR_UNAVAILABLE, name)
        if not channel_allowed(asker.kind, target.identity.kind):
            self.bus.audit(
                AuditRecord(
                    event="supervisor.introduce_denied",
                    actor="supervisor",
                    peer=asker.name,
                    code=ErrorCode.ACL_DENIED.value,
                    subject_id=name,
                )
            )
            raise LineUpError(ErrorCode.ACL_DENIED, name)
        with trio.move_on_after(INTRODUCE_WAIT):
            await self.wait_until(target.is_up)  # e.g. while it restarts
        if not target.is_up():
            raise LineUpError(ErrorCode.ACTOR_UNAVAILABLE, name)
        a, b = sorted(((asker.name, me.incarnation), (name, target.incarnation)))
        key = (a[0], a[1], b[0], b[1])
        # A command asks once, on a connection of its own: nothing to remember of it.
        once = asker.kind is ActorKind.CLI
        if once or key not in self._introduced:
            ours, theirs = channel_pair()
            try:
                # Either side may die meanwhile: the asker then retries, as after any restart.
                await self.bus.notify(
                    name,
                    ChannelOpenedEvent(
                        peer=asker.name, kind=asker.kind.value, incarnation=me.incarnation
                    ),
                    fds=(theirs.fileno(),),
                )
                await self.bus.notify(
                    asker.name,
                    ChannelOpenedEvent(
                        peer=name, kind=target.identity.kind.value, incarnation=target.incarnation
                    ),
                    fds=(ours.fileno(),),
                )
            except LineUpError as exc:
                raise LineUpError(ErrorCode.ACTOR_RESTARTED, name) from exc
            finally:
                ours.close()
                theirs.close()
            if not once:
                self._introduced.add(key)
        return IntroduceReply(peer=name, incarnation=target.incarnation)

    def _forget_introductions(self, name: str, incarnation: int) -> None:
        self._introduced = {
            k
            for k in self._introduced
            if (k[0], k[1]) != (name, incarnation) and (k[2], k[3]) != (name, incarnation)
        }

    async def _misbehaved_here(self, conn: Connection, code: ErrorCode) -> None:
        """A child broke the protocol on its control channel, to the supervisor itself: it is
        stopped as if another actor had reported it (killed before its channel is closed, so
        it never gets to exit cleanly)."""
        event = PeerMisbehavedEvent(
            peer=conn.identity.name, incarnation=conn.incarnation, code=code.value
        )
        await self._stop_misbehaving(self.bus.me, event)

    async def _stop_misbehaving(self, reporter: Identity, event: PeerMisbehavedEvent) -> None:
        child = self.children.get(event.peer)
        self.bus.audit(
            AuditRecord(
                event="supervisor.peer_misbehaved",
                actor="supervisor",
                peer=event.peer,
                code=event.code,
                subject_id=reporter.name,
            )
        )
        if child is None or child.incarnation != event.incarnation:
            return
        log.warning("supervisor.killing_misbehaving name=%s code=%s", event.peer, event.code)
        # A MiniApp that breaks its contract is stopped for good, as Chromium kills a renderer
        # that sends a bad message: not restarted, its instances fail, focus goes back. One
        # whose spec says otherwise (the system app, which must not go dark) is restarted.
        stays_down = child.identity.kind is ActorKind.MINIAPP and not (
            child.spec is not None and child.spec.restart_after_misbehaving
        )
        if stays_down:
            child.expected_exit = True
        _signal(child, signal.SIGKILL)
        if stays_down:
            with trio.move_on_after(STOP_KILL_WAIT):
                await child.exited.wait()
            child.state = "failed"
            try:
                await self.bus.notify(
                    "focus",
                    AppFailedEvent(app_scope=event.peer.removeprefix("miniapp:"), code=event.code),
                    timeout=5.0,
                )
            except LineUpError:
                log.error("supervisor.focus_not_told app=%s", event.peer)

    # ------------------------------------------------------------------ outside views

    def status(self) -> StatusReply:
        now = time.monotonic()
        return StatusReply(
            pid=os.getpid(),
            state=self.state,
            data_dir=str(self.data_dir),
            uptime_s=round(now - self.started_at, 3),
            zygote_pid=self._zygote.pid,
            sandbox=self._sandbox,
            runtime=self.lifecycle(),
            info={**self.info, **self._quota_layers()},
            children=tuple(
                ChildStatus(
                    name=c.identity.name,
                    kind=c.identity.kind.value,
                    pid=c.pid if c.pidfd is not None else None,
                    state=c.state,
                    restarts=c.restarts,
                    uptime_s=round(now - c.started_at, 3)
                    if c.started_at is not None and c.state == UP
                    else None,
                )
                for c in self.children.values()
            ),
        )

    def _quota_layers(self) -> dict[str, str]:
        """The quota layers in force for MiniApps (`lineup status`), once the tree has started."""
        if self._sandbox is None:
            return {}
        pids = f"on (cgroup {self._pids.version})" if self._pids is not None else "MISSING"
        return {
            _quota.STATUS_FSIZE: f"on (data dir measured every {_quota.CHECK_INTERVAL:g} s)",
            _quota.STATUS_PIDS: pids,
        }

    async def attach(
        self,
        identity: Identity,
        handler: Handler | None = None,
        *,
        task_status: trio.TaskStatus[Bus] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Join the tree as a peer of `identity.kind` (tests, benchmarks, in-process tools).

        `await nursery.start(sup.attach, identity)` returns a running `Bus`; the peer is subject
        to the same ACL as a child of that kind. It leaves the tree when the task is cancelled.
        """
        if self._peer(identity.name) is not None:
            raise ValueError(f"{identity.name} is already in the tree")
        peer = _Peer(identity, incarnation=1)

        def answer(env: Envelope) -> Outcome:
            if isinstance(env.body, HealthRequest):
                return HealthReply(name=identity.name, pid=os.getpid(), incarnation=1, uptime_s=0.0)
            if handler is not None:
                return handler(env)
            raise LineUpError(ErrorCode.NO_HANDLER, env.body.TYPE)

        bus = Bus(identity, answer, incarnation=1)
        ours, theirs = channel_pair()
        self._attached[identity.name] = peer
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(bus.run)
                self.bus.connect(identity, 1, Channel(ours))
                bus.connect(
                    Identity(ActorKind.SUPERVISOR, "supervisor"),
                    0,
                    Channel(theirs, carries_fds=True),
                )
                peer.ready.set()
                task_status.started(bus)
                await trio.sleep_forever()
        finally:
            del self._attached[identity.name]
            self.bus.disconnect(identity.name)
            self._forget_introductions(identity.name, 1)


def _link_state(link: RuntimeLink | None, phases: frozenset[str]) -> str:
    """What the hostbridge is told when the supervisor's part ends: the link's state (it shows
    the transport's own, which may be newer; this one only ends the supervisor's) — never a
    word of the supervisor's `phases`. The transport's first state, `restoring`, is one: told
    as the link's, it began the supervisor's part again, and the Shell said Restoring… until
    the tree changed (seen once the tree started fast enough for the transport to be still
    `restoring` when every child was ready)."""
    if link is None or link.state in phases:
        return "created"
    return link.state


def _should_restart(spec: ChildSpec | None, status: int) -> bool:
    if spec is None or spec.restart is Restart.TEMPORARY:
        return False
    return spec.restart is Restart.PERMANENT or status != 0


def _exit_status(result: os.waitid_result | None) -> int:
    """Exit code, or minus the signal number for a death by signal (as subprocess does)."""
    if result is None:
        return 0
    if result.si_code == os.CLD_EXITED:
        return result.si_status
    return -result.si_status


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal_{number}"


def _signal(child: _Child, sig: int) -> None:
    child.signalled.add(sig)
    if child.pidfd is not None:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(child.pidfd, sig)
