"""Where `lineup run`'s start goes, and what a test that needs a tree pays for one.

`lineup run` says `starting` once its own imports are done, `<child> ready (pid P) in X ms` as
each child is ready (X counted from the child's spawn), and `ready in …` at the end; each line
is flushed as it happens. Read with the time each line arrives, they give the start's timeline
without a probe inside the runtime: the interpreter and the supervisor's imports (process start
→ `starting`), each child's wait for its turn and its zygote's imports (`starting` → spawned),
its own start (spawned → ready), and the wait for the transport's first login (the last child
ready → `ready`).

At the `ready` line the CPU time each process of the tree has used so far is read from /proc
(`tree_cpu`): on a machine of N cores a start can be no shorter than the sum over N, whatever
its order, so the sum says how much of the start is work and how much is waiting.
"""

from __future__ import annotations

import collections
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import trio

__all__ = [
    "StartTimeline",
    "fixture_times",
    "lines_until_ready",
    "median_cpu",
    "median_phases",
    "parse_timeline",
    "start_timelines",
    "tree_cpu",
    "tree_processes",
]

_CHILD = re.compile(r"^lineup: (?P<name>\S+) ready \(pid \d+\) in (?P<ms>[0-9.]+) ms$")


@dataclass
class StartTimeline:
    """One `lineup run` start, in seconds from the process's spawn."""

    total: float = 0.0  # → the `ready in` line
    imports: float = 0.0  # → the `starting` line: interpreter and supervisor imports
    spawned: dict[str, float] = field(default_factory=dict)  # child → its spawn
    ready: dict[str, float] = field(default_factory=dict)  # child → its ready line
    stop: float = 0.0  # SIGTERM → the process's exit, every child stopped
    cpu: dict[str, float] = field(default_factory=dict)  # process title → CPU s, at `ready`

    @property
    def link_wait(self) -> float:
        """The last child ready → the tree's `ready`: the wait for the first login."""
        return self.total - max(self.ready.values(), default=self.imports)


def parse_timeline(lines: Sequence[tuple[float, str]]) -> StartTimeline:
    """The timeline of `(arrival in s, line)` pairs, up to the `ready in` line."""
    timeline = StartTimeline()
    for at, line in lines:
        if line.startswith("lineup: starting"):
            timeline.imports = at
        elif line.startswith("lineup: ready in"):
            timeline.total = at
            break
        elif (child := _CHILD.match(line)) is not None:
            name = child["name"]
            timeline.ready[name] = at
            timeline.spawned[name] = at - float(child["ms"]) / 1e3
    return timeline


def lines_until_ready(process: subprocess.Popen[str], t0: float) -> Iterator[tuple[float, str]]:
    assert process.stdout is not None
    for line in process.stdout:
        yield time.perf_counter() - t0, line.rstrip("\n")
        if line.startswith("lineup: ready in"):
            return


def start_timelines(runs: int, args: Sequence[str] = ()) -> list[StartTimeline]:
    """`lineup run` (the embedded default, each on a new data dir) started `runs` times."""
    timelines = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="lu-bench-") as tmp:
            t0 = time.perf_counter()
            with subprocess.Popen(
                [sys.executable, "-m", "lineup", "run", "--data-dir", tmp, *args],
                stdout=subprocess.PIPE,
                text=True,
            ) as process:
                try:
                    timeline = parse_timeline(list(lines_until_ready(process, t0)))
                    timeline.cpu = tree_cpu(process.pid)
                finally:
                    stopping = time.perf_counter()
                    process.send_signal(signal.SIGTERM)
                    process.communicate(timeout=30)  # reads the rest: it says `stopped`
                timeline.stop = time.perf_counter() - stopping
                timelines.append(timeline)
    return timelines


def tree_processes(root: int) -> dict[int, str]:
    """Every process of the tree under `root` (itself included), pid → its name in the tree:
    its title, `lineup: miniapp chat`, read back as `miniapp:chat`; `supervisor` for the root,
    `python -m lineup run`, titled only once it runs the tree. Linux's /proc."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children[int(stat[stat.rfind(")") + 2 :].split()[1])].append(int(entry))
    names: dict[int, str] = {}
    pending = [root]
    while pending:
        pid = pending.pop()
        pending += children.get(pid, [])
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        except (OSError, ValueError, IndexError):
            continue
        name = title.removeprefix("lineup: ").replace("miniapp ", "miniapp:", 1)
        names[pid] = name if title.startswith("lineup: ") else "supervisor"
    return names


def tree_cpu(root: int) -> dict[str, float]:
    """The CPU time (s) each process of the tree under `root` has used, by its name in the tree
    (`tree_processes`; the zygotes summed as `zygote`); Linux's /proc (schedstat: ns on a CPU)."""
    used: dict[str, float] = collections.defaultdict(float)
    for pid, name in tree_processes(root).items():
        try:
            ns = int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        used[name] += ns / 1e9
    return dict(used)


def median_cpu(timelines: Sequence[StartTimeline]) -> list[tuple[str, float]]:
    """The CPU each process used until `ready`, each the median over `timelines` in seconds,
    the most first, after their sum."""
    names = {name for t in timelines for name in t.cpu}
    by_name = {n: statistics.median(t.cpu.get(n, 0.0) for t in timelines) for n in names}
    total = statistics.median(sum(t.cpu.values()) for t in timelines)
    ranked = sorted(by_name.items(), key=lambda item: -item[1])
    return [("every process", total), *ranked]


def median_phases(timelines: Sequence[StartTimeline]) -> list[tuple[str, float]]:
    """The start's phases, each the median over `timelines` in seconds, in start order: the
    imports, each child's queue (`starting` → spawned) and own start (spawned → ready), the
    link wait."""
    first = timelines[0]
    imports = [t.imports for t in timelines]
    phases = [("interpreter + supervisor imports (spawn → `starting`)", imports)]
    for name in sorted(first.ready, key=first.spawned.__getitem__):
        ok = [t for t in timelines if name in t.ready]
        phases.append((f"{name}: `starting` → spawned", [t.spawned[name] - t.imports for t in ok]))
        phases.append((f"{name}: spawned → ready", [t.ready[name] - t.spawned[name] for t in ok]))
    phases.append(("last child ready → `ready` (first login)", [t.link_wait for t in timelines]))
    return [(label, statistics.median(values)) for label, values in phases]


async def _tree_once(data_dir: Path) -> float:
    """A tree as the tests start one (`tests/support/runtime.start_runtime`: in the caller's
    trio loop, zygotes started fresh), started until ready and stopped: seconds."""
    from lineup.supervisor import Supervisor
    from lineup.supervisor._runtime import LANES, PRELOAD, RuntimeOptions, plan_runtime

    t0 = time.perf_counter()
    plan = plan_runtime(RuntimeOptions(data_dir=data_dir))
    supervisor = Supervisor(
        plan.specs, data_dir=data_dir, preload=PRELOAD, lanes=LANES, link_wait=plan.link_wait
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        nursery.cancel_scope.cancel()
    return time.perf_counter() - t0


def fixture_times(runs: int) -> list[float]:
    """What a real-process test pays for its tree: start → ready → stopped, `runs` times."""
    samples = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="lu-bench-") as tmp:
            data_dir = Path(tmp) / "rt"
            data_dir.mkdir(mode=0o700)
            samples.append(trio.run(_tree_once, data_dir))
    return samples
