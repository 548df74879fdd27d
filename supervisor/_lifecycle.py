"""The supervisor's phase, and the part of the runtime's lifecycle (seed 004 §3.3) it is the
supervisor's to tell.

`restoring` from the start until every child is ready (focus is ready once it has recovered the
registry and the instances, the store once its database is open), then the link's states as the
transport reports them (authenticating → synchronizing → online, reconnecting,
offline_degraded), then `stopping` once shutdown begins and `stopped` at its end. The phase and
which part is whose are facts (`facts/supervisor.py`); here they are kept, and the hostbridge is
told when the supervisor's own part begins or ends, so the Shell's badge shows it over the
link's state.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Mapping
from typing import Final

import trio

from lineup.actors.kernel import ActorKind, Bus, HealthReply, HealthRequest, LineUpError
from lineup.actors.kernel.control import SUPERVISOR_PHASES, RuntimeLink, RuntimeStateEvent
from lineup.facts.link import BEFORE_LOGIN, RuntimeState
from lineup.facts.supervisor import SHUTDOWN, Phase, PhaseEvent, lifecycle_part, shell_part
from lineup.facts.supervisor import move as move_phase

from ._peers import Changes, Child

__all__ = ["Lifecycle", "link_state"]

log = logging.getLogger("lineup.supervisor")

TELL_WAIT: Final = 2.0  # a lifecycle state told to the hostbridge, before it is given up
PHASE_RETRY: Final = 0.5  # then it is told again this much later, unless the tree moved on


class Lifecycle:
    """The supervisor's phase and the runtime's lifecycle state, and the task that tells the
    hostbridge the supervisor's part of it."""

    def __init__(self, bus: Bus, children: Mapping[str, Child], changes: Changes) -> None:
        self._bus = bus
        self._children = children
        self._changes = changes
        self.phase: Phase = "created"
        self.restored = False  # every child was ready once: the lifecycle is the link's now
        self.runtime: RuntimeLink | None = None  # the transport's state, for `lineup status`
        # (hostbridge, incarnation, the part told: None for the link's)
        self.told: tuple[str, int, RuntimeState | None] | None = None

    def move(self, event: PhaseEvent) -> None:
        """Move the supervisor's phase by `event`; a move the table lacks leaves it as it is
        and is logged as the bug it is (it never stops the tree), and either way the tree's
        waiters are woken."""
        after = move_phase(self.phase, event)
        if after is None:
            log.error("supervisor.phase_move_refused phase=%s event=%s", self.phase, event)
        else:
            self.phase = after
        self._changes.notify()

    def restore(self) -> None:
        """Every child was ready once: from now on the link's states are shown."""
        self.restored = True
        self._changes.notify()

    def link(self, state: str, reason: str | None) -> None:
        """The transport's word on the link."""
        self.runtime = RuntimeLink(state=state, reason=reason)
        self._changes.notify()

    def state(self) -> RuntimeLink | None:
        """The runtime's lifecycle state now: the supervisor's own (`restoring`, `stopping`,
        `stopped`) or else the link's, as the transport last said it (None if it never spoke:
        a tree without a transport)."""
        part = lifecycle_part(self.phase, restored=self.restored)
        return self.runtime if part is None else RuntimeLink(state=part)

    def linked_once(self) -> bool:
        return self.runtime is not None and self.runtime.state not in BEFORE_LOGIN

    def _hostbridge(self) -> Child | None:
        return next(
            (c for c in self._children.values() if c.identity.kind is ActorKind.HOSTBRIDGE), None
        )

    def stopping_told(self) -> bool:
        hostbridge = self._hostbridge()
        if hostbridge is None or not hostbridge.is_up():
            return True  # no Shell to tell
        return self.told is not None and self.told[1:] == (hostbridge.incarnation, SHUTDOWN)

    async def announce(self) -> None:
        """Tell the hostbridge each change of the supervisor's part of the lifecycle (one task:
        in order, the latest only), and again to each new incarnation. A tell that does not
        get through is tried again on the next change (a child ready or gone, a state), or
        after PHASE_RETRY at the latest: the tree may well not change again (a busy machine
        made the tell of `restoring`'s end time out, and the Shell said Restoring… for good)."""
        retry = math.inf  # nothing to try again
        while True:
            changed = self._changes.event  # taken first: a change from here on sets it
            hostbridge = self._hostbridge()
            if hostbridge is not None and hostbridge.is_up():
                part = shell_part(self.phase, restored=self.restored)
                told = (hostbridge.identity.name, hostbridge.incarnation, part)
                if told != self.told:
                    link = self.runtime if part is None else None
                    event = RuntimeStateEvent(
                        state=link_state(link, SUPERVISOR_PHASES) if part is None else part,
                        reason=link.reason if link is not None else None,
                    )
                    if await self._bus.tell(told[0], event, timeout=TELL_WAIT) is None:
                        await self._passed_on(told[0])
                        self.told = told
                        self._changes.notify()
                        retry = math.inf
                        continue
                    retry = PHASE_RETRY
            with trio.move_on_after(retry):
                await changed.wait()

    async def _passed_on(self, name: str) -> None:
        """Wait until `name` has handled what it was told: its answer to a health probe sent
        after it (one channel, read in order) comes once the event's handler ran, and so the
        frame is in each Shell's queue. Shutdown stops the hostbridge right after `stopping`;
        on its way out it sends each Shell what its queue holds (`HostbridgeActor.finish`)."""
        with contextlib.suppress(LineUpError):
            await self._bus.request(name, HealthRequest(), expect=HealthReply, timeout=TELL_WAIT)


def link_state(link: RuntimeLink | None, phases: frozenset[str]) -> str:
    """What the hostbridge is told when the supervisor's part ends: the link's state (it shows
    the transport's own, which may be newer; this one only ends the supervisor's) — never a
    word of the supervisor's `phases`. The transport's first state, `restoring`, is one: told
    as the link's, it began the supervisor's part again, and the Shell said Restoring… until
    the tree changed (seen once the tree started fast enough for the transport to be still
    `restoring` when every child was ready)."""
    if link is None or link.state in phases:
        return "created"
    return link.state
