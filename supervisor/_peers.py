"""The supervisor's record of each peer in its tree: a child (its spec, its process, its state)
or a peer attached from outside, and the one signal that tells the tree's waiters something of
them changed.

A child's state moves only through `Child.move`, by the table in `facts/children.py`; a move the
table lacks is a bug of the supervisor's, logged loudly, and the state stays (the tree runs on).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import trio

from lineup.actors.kernel import Identity
from lineup.facts import children
from lineup.facts.children import UP, ChildEvent, ChildState

from ._spec import ChildSpec

__all__ = ["Changes", "Child", "Peer", "exit_status", "signal_child", "signal_name"]

log = logging.getLogger("lineup.supervisor")


@dataclass(eq=False)
class Peer:
    identity: Identity
    incarnation: int = 0
    ready: trio.Event = field(default_factory=trio.Event)

    def is_up(self) -> bool:
        return self.ready.is_set()


@dataclass(eq=False)
class Child(Peer):
    spec: ChildSpec | None = None
    state: ChildState = "new"  # moved by `move` alone: `facts/children.py`
    pid: int | None = None
    pidfd: int | None = None
    restarts: int = 0
    recent: deque[float] = field(default_factory=deque)
    started_at: float | None = None
    spawned_at: float = 0.0
    exited: trio.Event = field(default_factory=trio.Event)
    settled: trio.Event = field(default_factory=trio.Event)  # ready, or dead before ready
    # The zygote answered this incarnation's spawn: its pid and pidfd are held (or it failed).
    forked: trio.Event = field(default_factory=trio.Event)
    expected_exit: bool = False
    signalled: set[int] = field(default_factory=set)  # what this incarnation was sent by us
    exit_status: int | None = None  # the last incarnation's, once it exited
    # Held by whoever starts a process of this child (focus's start, a restart), so that a
    # second start waits for the one under way and finds it started, not one on top of it.
    start_lock: trio.Lock = field(default_factory=trio.Lock)

    def is_up(self) -> bool:
        return self.state == UP

    def move(self, event: ChildEvent) -> None:
        """Move this child by `event`. A move the table lacks leaves the state as it is and is
        logged as the bug it is; it never raises, so no news stops the tree."""
        after = children.move(self.state, event)
        if after is None:
            log.error(
                "supervisor.child_move_refused name=%s state=%s event=%s incarnation=%s",
                self.identity.name,
                self.state,
                event,
                self.incarnation,
            )
            return
        self.state = after


class Changes:
    """Set and replaced whenever a child is ready or exits, a MiniApp's output stream is
    closed, or the lifecycle moves: what the tree's waiters re-check their condition on."""

    def __init__(self) -> None:
        self.event = trio.Event()

    def notify(self) -> None:
        self.event.set()
        self.event = trio.Event()

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        """Wait until `predicate()` holds, re-checking it on each change."""
        while not predicate():
            await self.event.wait()


def exit_status(result: os.waitid_result | None) -> int:
    """Exit code, or minus the signal number for a death by signal (as subprocess does)."""
    if result is None:
        return 0
    if result.si_code == os.CLD_EXITED:
        return result.si_status
    return -result.si_status


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal_{number}"


def signal_child(child: Child, sig: int) -> None:
    child.signalled.add(sig)
    if child.pidfd is not None:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(child.pidfd, sig)
