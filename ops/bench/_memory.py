"""The whole idle tree's memory (issue 32): the PSS of every process of an idle `lineup run`,
summed, beside that many bare interpreters importing trio and pydantic, measured in the same run.

Theory of operation
-------------------
A page mapped by several processes is counted once in PSS (proportional set size), split
between them; in RSS it is counted in each. So the tree's PSS, summed, is what it costs the
machine, and a process's USS (its private pages, clean and dirty) is what its being there adds.
The tree is started as a user starts it (the embedded default: AppServer and demo Agent
included), and read once idle: its CPU time has stopped growing (after `ready` the zygotes still
import the rest of their preload and build every message's validator, and the demo Agent
starts). Each process is read from /proc/PID/smaps_rollup, named by its title (`lineup:
router` → `router`; `python -m lineup run` itself → `supervisor`). The bare interpreter is
read alone, after the tree has stopped, so that it shares no page with it.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ._report import Figure
from ._start import lines_until_ready, tree_processes

__all__ = ["ProcessMemory", "bare_interpreter", "idle_tree", "memory_figures", "rollup"]

IDLE_WINDOW = 1.0  # s without CPU growth beyond IDLE_CPU: the tree is idle
IDLE_CPU = 0.02  # s of CPU, the whole tree's, over IDLE_WINDOW
IDLE_DEADLINE = 60.0
_BARE = "import sys, trio, pydantic; print('ok', flush=True); sys.stdin.read()"


@dataclass(frozen=True)
class ProcessMemory:
    """One process's memory, KiB: proportional, private (USS) and shared with another."""

    name: str
    pss: int
    uss: int
    shared: int


def rollup(pid: int, name: str = "") -> ProcessMemory:
    """`pid`'s smaps_rollup (Linux ≥ 4.14). Raises OSError if it is gone."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, _, value = line.partition(":")
        if value.strip().endswith("kB"):
            fields[key] = int(value.split()[0])
    return ProcessMemory(
        name,
        fields.get("Pss", 0),
        fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0),
        fields.get("Shared_Clean", 0) + fields.get("Shared_Dirty", 0),
    )


def _cpu(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            pass  # gone meanwhile
    return total


def _wait_idle(root: int) -> None:
    """Until the tree under `root` has used under IDLE_CPU in IDLE_WINDOW; bounded."""
    deadline = time.monotonic() + IDLE_DEADLINE
    pids = list(tree_processes(root))
    before = _cpu(pids)
    while time.monotonic() < deadline:
        time.sleep(IDLE_WINDOW)  # the measure's window, not a synchronisation
        now_pids = list(tree_processes(root))
        now = _cpu(now_pids)
        if now_pids == pids and now - before < IDLE_CPU:
            return
        pids, before = now_pids, now
    raise TimeoutError(f"the tree was not idle within {IDLE_DEADLINE} s")


def idle_tree(args: tuple[str, ...] = ()) -> list[ProcessMemory]:
    """Every process of an idle `lineup run` (on a new data dir), in pid order; two of one
    title are told apart by a number (`zygote`, `zygote 2`)."""
    with (
        tempfile.TemporaryDirectory(prefix="lu-bench-") as tmp,
        subprocess.Popen(
            [sys.executable, "-m", "lineup", "run", "--data-dir", tmp, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        ) as process,
    ):
        try:
            for _ in lines_until_ready(process, time.perf_counter()):
                pass
            _wait_idle(process.pid)
            memory = []
            seen: dict[str, int] = {}
            for pid, name in sorted(tree_processes(process.pid).items()):
                seen[name] = seen.get(name, 0) + 1
                label = name if seen[name] == 1 else f"{name} {seen[name]}"
                try:
                    memory.append(rollup(pid, label))
                except OSError:
                    continue  # gone (or a zombie) since the tree was listed: none of it
        finally:
            process.terminate()
            process.communicate(timeout=30)
    return memory


def bare_interpreter(runs: int = 3) -> ProcessMemory:
    """A bare interpreter that has imported trio and pydantic, alone (the median PSS of
    `runs`, one after another)."""
    samples = []
    for _ in range(runs):
        with subprocess.Popen(
            [sys.executable, "-c", _BARE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        ) as process:
            assert process.stdout is not None
            process.stdout.readline()
            samples.append(rollup(process.pid, "bare interpreter"))
            process.communicate("", timeout=30)
    return min(samples, key=lambda s: abs(s.pss - statistics.median(x.pss for x in samples)))


def memory_figures() -> list[Figure]:
    """The idle tree's PSS beside as many bare interpreters, then each process's share."""
    tree = idle_tree()
    bare = bare_interpreter()
    total, floor = sum(p.pss for p in tree) / 1024, len(tree) * bare.pss / 1024
    figures = [
        Figure(
            "memory",
            f"idle `lineup run`: PSS of its {len(tree)} processes, summed",
            total,
            "MiB",
            f"{len(tree)} × a bare interpreter importing trio+pydantic, alone",
            floor,
            "≤ 0.5× baseline",
            total <= 0.5 * floor,
            note="the embedded default: AppServer and demo Agent included; read once idle",
        )
    ]
    for p in tree:
        figures.append(
            Figure(
                "memory",
                f"  {p.name}: PSS (USS {p.uss / 1024:.1f} MiB, shared {p.shared / 1024:.1f} MiB)",
                p.pss / 1024,
                "MiB",
                f"one bare interpreter importing trio+pydantic, alone (USS {bare.uss / 1024:.1f}"
                f" MiB, shared {bare.shared / 1024:.1f} MiB)",
                bare.pss / 1024,
            )
        )
    return figures
