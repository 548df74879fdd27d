"""The supervisor: spawns, watches and restarts children; owns and hands out every channel.

Theory of operation
-------------------
Children start in spec order, each one ready (its `ActorReadyEvent`) before the next begins, and
stop in reverse order. A spec that names the children it starts `after` waits for those alone,
so independent children start together; the tree is ready once every child has settled. Each
child is forked by the zygote as the supervisor's own child, so the supervisor watches its
pidfd and reaps it (`_process`). A death that the supervisor did not cause goes through
the restart policy (`_restarts`): the restart type says whether to restart, the strategy says
what else to restart, the intensity says when to give up (escalate: stop everything, exit
non-zero). Focus has MiniApps started and stopped (`_miniapps`).

The supervisor is also the bus's broker (`_broker`): a child asks to be introduced to a peer,
the supervisor checks the ACL table, waits until that peer is ready, and hands each side one end
of a new socketpair with the other side's identity. It keeps no business state.

The runtime's lifecycle (seed 004 §3.3) is the supervisor's to tell, in part (`_lifecycle`):
`restoring` until every child is ready, then the link's states as the transport reports them,
then `stopping` once shutdown begins and `stopped` at its end (written to the data dir, see
`_control.write_state_file`, for a `lineup status` that finds nobody to ask). The tree's own
phase (created → starting → running → stopping → stopped) and each child's state move only by
their tables (`facts/supervisor.py`, `facts/children.py`).

`attach` lets a test or a benchmark join the tree as a peer of any kind, through exactly the same
channels and checks a child gets.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Final

import trio

from lineup.actors.kernel import (
    ActorKind,
    Bus,
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
)
from lineup.actors.kernel.control import (
    ActorReadyEvent,
    AppViewLogEvent,
    ChildStartRequest,
    ChildStatus,
    ChildStopRequest,
    IntroduceRequest,
    PeerMisbehavedEvent,
    RuntimeLink,
    RuntimeLinkEvent,
    SandboxStatus,
    StatusReply,
    StatusRequest,
)
from lineup.facts.children import UP
from lineup.facts.supervisor import Phase

from . import _quota
from ._broker import Broker
from ._control import clear_state_file, write_state_file
from ._control_server import serve_control
from ._lifecycle import Lifecycle
from ._miniapps import MiniApps
from ._peers import Changes, Child, signal_child
from ._process import Processes
from ._restarts import Escalation, Restarts
from ._sandbox import sandbox_status
from ._spawn import Zygote
from ._spec import ChildSpec, Intensity, Strategy

__all__ = ["Supervisor"]

log = logging.getLogger("lineup.supervisor")

DRAIN_WAIT: Final = 1.0  # after the last child stops, for the MiniApps' last output lines
STOPPING_TOLD_WAIT: Final = 1.0  # how long shutdown waits for the Shell to be told `stopping`

Reporter = Callable[[str], None]


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
        self.intensity = intensity or Intensity()
        self._report = report or (lambda line: None)
        self.bus = Bus(Identity(ActorKind.SUPERVISOR, "supervisor"), self._dispatch)
        self.bus.on_misbehaved = self._misbehaved_here
        self.children: dict[str, Child] = {}
        for spec in specs:
            if spec.name in self.children or spec.name == "supervisor":
                raise ValueError(f"duplicate child name {spec.name!r}")
            unknown = set(spec.after or ()) - set(self.children)
            if unknown:  # listed before it: no cycle, and it stops before what it needs
                raise ValueError(f"{spec.name!r} starts after {sorted(unknown)}, not before it")
            self.children[spec.name] = Child(Identity(spec.kind, spec.name), spec=spec)
        self._changes = Changes()
        self._broker = Broker(self.bus, self.children, self._changes)
        # lanes: more zygotes, see `_spawn`. A zygote given is the caller's, kept running for
        # the next tree (a test worker's trees, each of which would otherwise pay a fresh
        # interpreter and every import again); one made here is stopped with the tree.
        self._owns_zygote = zygote is None
        self._zygote = Zygote(preload, lanes) if zygote is None else zygote
        self._processes = Processes(
            self.bus, self._zygote, data_dir, self._changes, self._broker.introductions
        )
        self._miniapps = MiniApps(
            self.children, self._processes, data_dir, self.intensity.start_timeout
        )
        self._restarts = Restarts(
            self.children, self._processes, self._miniapps, self.intensity, strategy
        )
        self._lifecycle = Lifecycle(self.bus, self.children, self._changes)
        self._control_socket = control_socket
        self.started_at = time.monotonic()
        self.info: dict[str, str] = {}  # extra facts for `lineup status` (URLs, flags)
        self._sandbox: SandboxStatus | None = None

    @property
    def state(self) -> Phase:
        """The tree's phase (`facts/supervisor.py`)."""
        return self._lifecycle.phase

    @property
    def escalated(self) -> str | None:
        """The child whose restarts escalated, once one has."""
        return self._restarts.escalated

    @property
    def allow_weak_sandbox(self) -> bool:
        """Run MiniApps even where a layer of their sandbox is missing."""
        return self._miniapps.allow_weak_sandbox

    @allow_weak_sandbox.setter
    def allow_weak_sandbox(self, allow: bool) -> None:
        self._miniapps.allow_weak_sandbox = allow

    @property
    def capturing(self) -> int:
        """How many MiniApp output streams are still being read into their logs."""
        return self._processes.captures

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        """Wait until `predicate()` holds, re-checking each time a child is ready or exits
        (or a MiniApp's output stream is closed)."""
        await self._changes.wait_until(predicate)

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
                self._lifecycle.move("start")
                await self._zygote.start()
                self._sandbox = sandbox_status()
                found = _quota.find_pids_cgroup()
                self._processes.pids = _quota.PidsCgroups(*found) if found is not None else None
                if self._processes.pids is not None:
                    self._processes.pids.sweep()
                await self._start_all(before_ready=True)
                self._lifecycle.restore()
                if self.link_wait > 0:
                    with trio.move_on_after(self.link_wait):
                        await self.wait_until(self._lifecycle.linked_once)
                self._lifecycle.move("ready")
                self._report(
                    f"ready in {time.monotonic() - self.started_at:.2f} s "
                    f"({len(self.children)} actors)"
                )
                task_status.started()
                await self._start_all(before_ready=False)
                await self._zygote.preload_all()
                escalation = await self._restarts.supervise()
            except Escalation as exc:
                escalation = exc  # raised bare below, not wrapped in the nursery's group
            finally:
                with trio.CancelScope(shield=True):
                    self._lifecycle.move("stop")
                    with trio.move_on_after(STOPPING_TOLD_WAIT):
                        await self.wait_until(self._lifecycle.stopping_told)
                    await self.stop_all()
                    if self._control_socket:
                        self._write_stopped(escalated=escalation is not None)
                    services.cancel()
        if escalation is not None:
            raise escalation

    def _write_stopped(self, *, escalated: bool) -> None:
        try:
            write_state_file(self.data_dir, "stopped", pid=os.getpid(), escalated=escalated)
        except OSError as exc:
            log.error("supervisor.state_file_unwritten errno=%s", exc.errno)

    def lifecycle(self) -> RuntimeLink | None:
        """The runtime's lifecycle state now: the supervisor's own (`restoring`, `stopping`,
        `stopped`) or else the link's, as the transport last said it (None if it never spoke:
        a tree without a transport)."""
        return self._lifecycle.state()

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

        async def start(child: Child, after: list[str], turn: Child | None) -> None:
            nonlocal failure
            try:
                for name in after:
                    await settled[name].wait()
                if turn is not None:  # its turn comes once that child has its pid
                    await self.wait_until(lambda: turn.pid is not None)
                await self._processes.start(child, self.intensity.start_timeout)
                # the others' starts end
                self._restarts.check_can_start(child, child.exit_status)
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
            turns: dict[int, Child] = {}
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
                await nursery.start(self.bus.run)
                await nursery.start(self._processes.run)
                if self._control_socket:
                    await nursery.start(serve_control, self.bus, self.data_dir)
                nursery.start_soon(self._lifecycle.announce)
                task_status.started()
                await trio.sleep_forever()

    async def stop_all(self) -> None:
        """Stop every child in reverse start order, then the zygote. Shielded and bounded."""
        with trio.CancelScope(shield=True):
            self._lifecycle.move("stop")
            for child in reversed(list(self.children.values())):
                await self._processes.stop(child)
            with trio.move_on_after(DRAIN_WAIT):
                await self.wait_until(lambda: self._processes.captures == 0)
            if self._owns_zygote:
                await self._zygote.stop()
            if self._processes.pids is not None:
                self._processes.pids.close()
            self._lifecycle.move("stopped")

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Send a signal to a child (drills and tests; never used for a normal stop)."""
        signal_child(self.children[name], sig)

    def sandbox_policy(self, name: str) -> dict[str, object]:
        """The confinement of one MiniApp's process (DESIGN §8; see `_sandbox`)."""
        return self._miniapps.sandbox_policy(name)

    # ------------------------------------------------------------------ what children say

    def _dispatch(self, env: Envelope) -> Outcome:
        """Events and what needs no wait are handled here, at once, in the order they arrive
        (the bus runs a handler inline unless it returns an awaitable). An async handler would
        make each event a task of its own, and trio runs the tasks of one batch in either
        order: the transport's `synchronizing` then `online`, told a moment apart, were applied
        the other way round, and the status said synchronizing for good."""
        body = env.body
        if isinstance(body, ActorReadyEvent):
            return self._child_ready(env.sender, body)
        if isinstance(body, RuntimeLinkEvent):
            if env.sender.kind is ActorKind.TRANSPORT:
                self._lifecycle.link(body.state, body.reason)
            return None
        if isinstance(body, AppViewLogEvent):
            if env.sender.kind is ActorKind.HOSTBRIDGE:
                self._processes.view_log(body.app_scope, body.level, body.text)
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
            return await self._broker.introduce(env.sender, body.peer)
        if isinstance(body, PeerMisbehavedEvent):
            await self._miniapps.stop_misbehaving(env.sender, body)
            return None
        if isinstance(body, ChildStartRequest):
            return await self._miniapps.start(body)
        if isinstance(body, ChildStopRequest):
            return await self._miniapps.stop(body)
        raise LineUpError(ErrorCode.NO_HANDLER, body.TYPE)

    def _child_ready(self, sender: Identity, body: ActorReadyEvent) -> Awaitable[None] | None:
        child = self.children.get(sender.name)
        if child is not None and child.pidfd is None and not child.forked.is_set():
            # It said ready before the zygote said its pid (a zygote descheduled right after
            # its fork, under load): taken once the supervisor holds its process, so that a
            # child up always has one, for a stop to signal and `lineup status` to list.
            return self._ready_once_forked(child.forked, child, sender, body)
        # Not after its exit, nor once its stop began (its channel is closed, but a ready read
        # before then may still be waiting in the bus): a ready event read late must not
        # revive a child the supervisor is ending. Nor from a process it never held.
        if (
            child is not None
            and child.pidfd is not None
            and not child.ready.is_set()
            and not child.exited.is_set()
            and not child.expected_exit
        ):
            child.move("ready")
            child.started_at = time.monotonic()
            child.ready.set()
            child.settled.set()
            self._changes.notify()
            elapsed = (child.started_at - child.spawned_at) * 1000
            self._report(f"{child.identity.name} ready (pid {body.pid}) in {elapsed:.1f} ms")
        return None

    async def _ready_once_forked(
        self, forked: trio.Event, child: Child, sender: Identity, body: ActorReadyEvent
    ) -> None:
        await forked.wait()
        if forked is child.forked:  # still that incarnation
            self._child_ready(sender, body)

    async def _misbehaved_here(self, conn: Connection, code: ErrorCode) -> None:
        """A child broke the protocol on its control channel, to the supervisor itself: it is
        stopped as if another actor had reported it (killed before its channel is closed, so
        it never gets to exit cleanly)."""
        event = PeerMisbehavedEvent(
            peer=conn.identity.name, incarnation=conn.incarnation, code=code.value
        )
        await self._miniapps.stop_misbehaving(self.bus.me, event)

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
        pids = self._processes.pids
        layer = f"on (cgroup {pids.version})" if pids is not None else "MISSING"
        return {
            _quota.STATUS_FSIZE: f"on (data dir measured every {_quota.CHECK_INTERVAL:g} s)",
            _quota.STATUS_PIDS: layer,
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
        await self._broker.attach(identity, handler, task_status=task_status)
