"""The restart policy (OTP's): a death the supervisor did not cause is looked at once. The
restart type says whether to restart, the strategy says what else to restart, the intensity says
when to give up: a runtime child restarted too often escalates (the tree stops, exit non-zero),
a MiniApp is given up on. A runtime child that cannot start as configured escalates at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

import trio

from lineup.actors.kernel import ActorKind, AuditRecord, ErrorCode, LineUpError
from lineup.actors.kernel.actor import EXIT_CANNOT_START
from lineup.facts import children as child_table

from ._miniapps import MiniApps
from ._peers import Child, signal_name
from ._process import Processes
from ._spec import ChildSpec, Intensity, Restart, Strategy

__all__ = ["Escalation", "Restarts"]

log = logging.getLogger("lineup.supervisor")


class Escalation(LineUpError):
    """A child exceeded the restart intensity, or cannot start as configured (`reported`:
    it said why itself, in one line on stderr); the tree was stopped."""

    reported: bool = False


class Restarts:
    """Applies the restart policy to each exit `processes` reports (see the module's
    docstring)."""

    def __init__(
        self,
        children: Mapping[str, Child],
        processes: Processes,
        miniapps: MiniApps,
        intensity: Intensity,
        strategy: Strategy,
    ) -> None:
        self._children = children
        self._processes = processes
        self._bus = processes.bus
        self._miniapps = miniapps
        self.intensity = intensity
        self.strategy = strategy
        self.escalated: str | None = None
        self._restarts: trio.Nursery | None = None  # one-for-one restarts, while supervising

    async def supervise(self) -> Escalation | None:
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
        async for name, incarnation, status in self._processes.exits:
            child = self._children[name]
            if incarnation != child.incarnation or child.expected_exit:
                continue
            self.check_can_start(child, status)
            log.warning("supervisor.child_exited name=%s pid=%s status=%s", name, child.pid, status)
            if status < 0 and -status not in child.signalled:
                # A signal the runtime did not send: the sandbox's limits (SIGXCPU from
                # RLIMIT_CPU, SIGSYS from seccomp), the kernel's OOM killer, someone else.
                self._bus.audit(
                    AuditRecord(
                        event="supervisor.child_killed",
                        actor="supervisor",
                        peer=name,
                        code=signal_name(-status),
                    )
                )
            if not _should_restart(child.spec, status):
                if child.identity.kind is ActorKind.MINIAPP:
                    assert self._restarts is not None
                    self._restarts.start_soon(self._miniapps.ended, child)
                continue
            recent = self._note_restart(child)
            if recent > self.intensity.max_restarts:
                # A MiniApp that crashes in a loop is given up on, not the runtime.
                miniapp = child.identity.kind is ActorKind.MINIAPP
                self._bus.audit(
                    AuditRecord(
                        event="supervisor.miniapp_given_up" if miniapp else "supervisor.escalated",
                        actor="supervisor",
                        peer=name,
                        code=ErrorCode.SUPERVISOR_ESCALATED.value,
                    )
                )
                if miniapp:
                    child.move("given_up")
                    continue
                self.escalated = name
                raise Escalation(
                    ErrorCode.SUPERVISOR_ESCALATED,
                    f"{name} restarted {recent - 1} times within "
                    f"{self.intensity.period:g} s; stopping the tree",
                )
            if self.strategy is Strategy.REST_FOR_ONE:
                names = list(self._children)
                group = [self._children[n] for n in names[names.index(name) :]]
                ended = {child: incarnation}
                for later in reversed(group[1:]):
                    await self._processes.stop(later)
                    ended[later] = later.incarnation  # a start from now on is focus's own
                # in order: later children need earlier
                await self._restart(group, [ended[member] for member in group], recent)
            else:
                # One for one: this child's restart goes on by itself, so a child slow to
                # come back (or backing off) holds up no other child's restart.
                assert self._restarts is not None
                self._restarts.start_soon(self._restart, [child], [incarnation], recent)

    async def _restart(self, group: list[Child], ended: list[int], recent: int) -> None:
        """Restart `group[0]`, which died (the `recent`th time in the period), then the rest,
        each only if its process is still the one that ended (`ended`: their incarnations
        then) and it has ended. One started since (focus launching a MiniApp during the
        backoff), or never started yet, or (rest for one) still starting when its stop found
        no process to stop, is someone else's to start: a restart on top would end it."""
        await trio.sleep(self.intensity.backoff(recent - 1))
        for member, incarnation in zip(group, ended, strict=True):
            async with member.start_lock:  # a start under way ends before this looks
                if (
                    incarnation == 0
                    or member.incarnation != incarnation
                    or child_table.move(member.state, "restart") is None  # it has a process
                ):
                    log.info(
                        "supervisor.restart_moot name=%s incarnation=%s",
                        member.identity.name,
                        member.incarnation,
                    )
                    continue
                member.move("restart")
                member.restarts += member is group[0]
                await self._processes.start(member, self.intensity.start_timeout)

    def check_can_start(self, child: Child, status: int | None) -> None:
        """Raise Escalation, without a restart, for a runtime child that exited because it
        cannot start as configured (its port is taken): it said why; a restart would fail the
        same way. During the tree's start, the other children's starts end at once."""
        if status != EXIT_CANNOT_START or child.identity.kind is ActorKind.MINIAPP:
            return
        self._bus.audit(
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

    def _note_restart(self, child: Child) -> int:
        now = time.monotonic()
        child.recent.append(now)
        while child.recent and now - child.recent[0] > self.intensity.period:
            child.recent.popleft()
        return len(child.recent)


def _should_restart(spec: ChildSpec | None, status: int) -> bool:
    if spec is None or spec.restart is Restart.TEMPORARY:
        return False
    return spec.restart is Restart.PERMANENT or status != 0
