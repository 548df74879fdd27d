"""The drill's faults: a seeded schedule, and the injector that carries it out on a live tree.

Theory of operation: `plan` turns `(seed, duration, count, kinds)` into a list of `Fault`s,
spread evenly with jitter over the run, each with its kind, its target and how long it lasts;
the same arguments always give the same list, so a seed replays a run's faults. Link faults
(`cut`, `slow`, `5xx`, `garbage` — the link answering HTML, the wrong shape or a redirect
instead of the AppServer) never overlap: each ends before the next begins. A `poison` fault
has the load Agent post, through the real AppServer, one envelope the runtime must refuse
(nested too deep, an integer past 2^53, no Markdown, an unknown type): the checks then
require it refused and never delivered, and everything else delivered as before.
`Injector.run` fires them at their times. Process faults find their target's pid in the
supervisor's status at the moment they fire: a MiniApp that is not running then (they start on
demand) gives way to the next target that is, in the plan's own order, so the choice stays
reproducible. A target is never killed more often than the supervisor's restart intensity allows
(that would be asking for an escalation, which the drill checks never happens) and never while
it is paused. An MCP app's server is a target too (`miniapp:<scope>/server`): it is no child of
the supervisor's but of its app's process, found through `/proc`, and its kills count against
that app's restart intensity (the app restarts with it).

After each SIGKILL, `_recovery` reads the status every 2 ms until the supervisor reports a new
process of that name `running` (it is so only once the actor answered its first health check):
that interval is the recovery time the report gives.
"""

from __future__ import annotations

import collections
import itertools
import logging
import os
import random
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

import trio

from lineup.actors.kernel.control import ChildStatus
from lineup.facts.children import UP

from ._proxy import GARBAGE, LinkProxy
from ._workload import POISON_VARIANTS

__all__ = ["KINDS", "TARGETS", "Fault", "Injected", "Injector", "plan"]

log = logging.getLogger("lineup.drill")

KINDS: Final = ("kill", "pause", "cut", "slow", "5xx", "garbage", "poison")
# How often each kind is drawn, relative to the others: kills are what the drill is about.
# Link faults are rarer and shorter: the outbox drains one message per round trip, so a link
# that is bad most of the time leaves only a backlog to watch (the long drill showed it).
WEIGHTS: Final = {"kill": 8, "pause": 3, "cut": 2, "slow": 1, "5xx": 2, "garbage": 1, "poison": 2}
LINK_KINDS: Final = frozenset({"cut", "slow", "5xx", "garbage"})
GARBAGE_KINDS: Final = tuple(GARBAGE)  # a garbage fault's `level` indexes this
# Every child of the embedded default: each actor, each MiniApp process, the AppServer.
TARGETS: Final = (
    "store",
    "devserver",
    "transport",
    "router",
    "focus",
    "gateway",
    "hostbridge",
    "devwatch",
    "miniapp:chat",
    "miniapp:task-dashboard",
    "miniapp:drill",
    "miniapp:drillpkg",
    "miniapp:drilldev",
    "miniapp:drill-pad",
    "miniapp:drillmcp",  # an MCP app's process: LineUp's MCP client (`_mcp_apps`)
    "miniapp:drillmcp/server",  # its MCP server, the adapter's child (`SERVER_OF`)
)
# A target that is no child of the supervisor: an MCP server, the child of its app's process.
# It is found, and its kills counted and its recovery watched, through that process.
SERVER_OF: Final = "/server"
_STATUS_POLL_S: Final = 0.002
_RECOVERY_LIMIT_S: Final = 30.0


@dataclass(frozen=True)
class Fault:
    at: float  # seconds after the load started
    kind: str
    target: str  # a child name, or "link"
    duration: float  # pause, cut, slowness or failures last this long; 0 for a kill
    level: float = 0.0  # slow: the delay in seconds; 5xx: the failing fraction


def plan(seed: int, duration: float, count: int, kinds: tuple[str, ...]) -> list[Fault]:
    """The fault schedule of a run: deterministic in its arguments."""
    unknown = set(kinds) - set(KINDS)
    if unknown or not kinds:
        raise ValueError(f"unknown fault kinds: {sorted(unknown)} (known: {', '.join(KINDS)})")
    rng = random.Random(seed)
    step = duration / max(count, 1)
    faults: list[Fault] = []
    # Each process fault takes the next target of a shuffled round, so every ten kills (or
    # pauses) hit every child once, in an order the seed decides.
    rounds = {"kill": _Rounds(rng), "pause": _Rounds(rng)}
    for i in range(count):
        at = (i + rng.uniform(0.1, 0.9)) * step
        kind = rng.choices(kinds, weights=[WEIGHTS[k] for k in kinds])[0]
        faults.append(_fault(rng, rounds, at, kind))
    _every_kind(seed, faults, kinds, rounds)
    # A link fault ends before the next link fault begins (one switch set at a time).
    link = [i for i, f in enumerate(faults) if f.kind in LINK_KINDS]
    for here, after in itertools.pairwise(link):
        fault, gap = faults[here], faults[after].at - faults[here].at
        if fault.duration > gap * 0.9:
            faults[here] = Fault(fault.at, fault.kind, fault.target, gap * 0.9, fault.level)
    return faults


def _fault(rng: random.Random, rounds: dict[str, _Rounds], at: float, kind: str) -> Fault:
    if kind == "kill":
        return Fault(at, kind, rounds["kill"].next(), 0.0)
    if kind == "pause":
        return Fault(at, kind, rounds["pause"].next(), rng.uniform(0.1, 1.5))
    if kind == "cut":
        return Fault(at, kind, "link", rng.uniform(0.3, 2.0))
    if kind == "slow":
        return Fault(at, kind, "link", rng.uniform(0.5, 2.0), rng.uniform(0.1, 0.5))
    if kind == "garbage":
        level = float(rng.randrange(len(GARBAGE_KINDS)))
        return Fault(at, kind, "link", rng.uniform(0.5, 2.0), level)
    if kind == "poison":
        return Fault(at, kind, "agent", 0.0, float(rng.randrange(POISON_VARIANTS)))
    return Fault(at, kind, "link", rng.uniform(0.5, 2.0), rng.uniform(0.2, 0.6))


def _every_kind(
    seed: int, faults: list[Fault], kinds: tuple[str, ...], rounds: dict[str, _Rounds]
) -> None:
    """With at least one fault per kind, every kind occurs: a kind the draw left out takes the
    place of a fault of the most frequent kind. (Its own generator: a schedule that has every
    kind already is the one the draw made, so such seeds replay as before.)"""
    counts = collections.Counter(f.kind for f in faults)
    missing = [k for k in kinds if counts[k] == 0]
    if not missing or len(faults) < len(kinds):
        return
    rng = random.Random(f"{seed}:every-kind")
    for kind in missing:
        common = counts.most_common(1)[0][0]
        index = rng.choice([i for i, f in enumerate(faults) if f.kind == common])
        faults[index] = _fault(rng, rounds, faults[index].at, kind)
        counts[common] -= 1
        counts[kind] += 1


class _Rounds:
    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._left: list[str] = []

    def next(self) -> str:
        if not self._left:
            self._left = list(TARGETS)
            self._rng.shuffle(self._left)
        return self._left.pop()


@dataclass
class Injected:
    fault: Fault
    fired_at: float  # seconds after the load started
    target: str  # the child actually hit (a MiniApp not running gives way to another)
    pid: int | None = None
    owner_pid: int | None = None  # the supervisor's child it is, or whose child it is
    recovery_ms: float | None = None  # kills: until the replacement reported running
    skipped: str | None = None  # why nothing was done


@dataclass
class Injector:
    status: Callable[[], list[ChildStatus]]  # blocking: runs on a worker thread
    proxy: LinkProxy
    poison: Callable[[int], Awaitable[None]]  # the load Agent posts poison variant N
    max_kills: int  # of one child within `period` seconds: below the restart intensity
    period: float
    started: float = field(default_factory=time.monotonic)
    done: list[Injected] = field(default_factory=list)
    _paused: set[str] = field(default_factory=set)
    _kills: dict[str, list[float]] = field(default_factory=dict)

    def now(self) -> float:
        return time.monotonic() - self.started

    async def run(self, faults: list[Fault]) -> None:
        async with trio.open_nursery() as nursery:
            for fault in faults:
                await trio.sleep_until(trio.current_time() + max(0.0, fault.at - self.now()))
                if fault.kind in LINK_KINDS:
                    nursery.start_soon(self._link, fault)
                elif fault.kind == "poison":
                    self.done.append(Injected(fault, self.now(), "agent"))
                    nursery.start_soon(self.poison, int(fault.level))
                else:
                    await self._process(nursery, fault)

    async def _link(self, fault: Fault) -> None:
        self.done.append(Injected(fault, self.now(), "link"))
        if fault.kind == "cut":
            self.proxy.cut()
        elif fault.kind == "slow":
            self.proxy.slow(fault.level)
        elif fault.kind == "garbage":
            self.proxy.garbage(GARBAGE_KINDS[int(fault.level)])
        else:
            self.proxy.fail(fault.level)
        try:
            await trio.sleep(fault.duration)
        finally:
            self.proxy.restore()

    async def _process(self, nursery: trio.Nursery, fault: Fault) -> None:
        children = {c.name: c for c in await trio.to_thread.run_sync(self.status)}
        record = Injected(fault, self.now(), fault.target)
        self.done.append(record)
        start = TARGETS.index(fault.target)
        for name in TARGETS[start:] + TARGETS[:start]:
            owner = name.removesuffix(SERVER_OF)
            child = children.get(owner)
            if child is None or child.pid is None or child.state != UP:
                continue
            if name in self._paused or (fault.kind == "kill" and not self._may_kill(owner)):
                continue
            pid = child.pid if owner == name else _child_of(child.pid)
            if pid is None:
                continue
            record.target, record.pid, record.owner_pid = name, pid, child.pid
            break
        else:
            record.skipped = "no running target"
            return
        if fault.kind == "kill":
            # A server's death restarts its app: it counts against the app's intensity.
            self._kills.setdefault(record.target.removesuffix(SERVER_OF), []).append(self.now())
            killed_at = time.monotonic()
            _signal(record.pid, signal.SIGKILL)
            nursery.start_soon(self._recovery, record, killed_at)
        else:
            self._paused.add(record.target)
            nursery.start_soon(self._pause, record, fault.duration)

    def _may_kill(self, name: str) -> bool:
        recent = [t for t in self._kills.get(name, ()) if self.now() - t < self.period]
        self._kills[name] = recent
        return len(recent) < self.max_kills

    async def _pause(self, record: Injected, seconds: float) -> None:
        assert record.pid is not None
        _signal(record.pid, signal.SIGSTOP)
        try:
            await trio.sleep(seconds)
        finally:
            _signal(record.pid, signal.SIGCONT)
            self._paused.discard(record.target)

    async def _recovery(self, record: Injected, killed_at: float) -> None:
        with trio.move_on_after(_RECOVERY_LIMIT_S):
            while True:
                for child in await trio.to_thread.run_sync(self.status):
                    if (
                        child.name == record.target.removesuffix(SERVER_OF)
                        and child.pid not in (None, record.pid, record.owner_pid)
                        and child.state == UP
                    ):
                        record.recovery_ms = (time.monotonic() - killed_at) * 1000
                        return
                await trio.sleep(_STATUS_POLL_S)

    def resume_all(self) -> None:
        """Nothing stays stopped after the drill, whatever ended it."""
        self.proxy.restore()
        for record in self.done:
            if record.fault.kind == "pause" and record.pid is not None:
                _signal(record.pid, signal.SIGCONT)


def _child_of(pid: int) -> int | None:
    """A process's first child (an MCP app's server), or None, from `/proc`: any of its
    threads may have started it (trio starts a process from a worker thread)."""
    children: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                children += [int(c) for c in f.read().split()]
    except OSError:
        return None
    return min(children) if children else None


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass  # it died on its own first: the supervisor restarts it all the same
