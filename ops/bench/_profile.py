"""`python -m lineup.ops.bench --profile`: where one `direct` tool call's time goes, per process.

Theory of operation
-------------------
The tree of the `direct` figures (`_tools`: store, router, focus and the bench app, the bench
joined as the transport) makes calls one at a time, then with some in flight, twice:

1. **Unprofiled**, for the figures that are not distorted by a profiler: the wall time of one
   call (transport → result committed) and each process's CPU per call, read from the kernel's
   own accounting (`/proc/<pid>/task/*/schedstat`, nanoseconds on a CPU) before and after.
2. **Profiled**, for the split: every actor process profiles itself with `cProfile` between two
   signals (the kernel's bench-only switch, `lineup.actors.kernel._profiling`), the bench
   process (which is also the supervisor) in-process. Each function's own time is put in one
   bucket (decode and encode of frames, pydantic, the ACL, SQLite, the scheduler, each actor's
   own logic…), and each process's unprofiled CPU per call is split in the profiled shares (a
   profiler slows Python code more than C, so the split is a guide; the CPU totals are exact).
   Its epoll waits are the process's wake-ups, counted per call, not timed as work.

Printed as one table (buckets × processes, µs per call) and each process's costliest functions,
so the next person starts from where the time is, not from a guess.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import shutil
import signal
import statistics
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import trio

from lineup.actors.kernel._connection import MINIAPP_BURST, MINIAPP_RATE
from lineup.actors.kernel._profiling import PROFILE_ENV
from lineup.actors.router._tools import ANSWERS_PER_CALL

from ._tools import DirectTree, with_direct_tree

__all__ = ["CallProfile", "profile_direct_call", "render_profile"]

BENCH: Final = "bench+supervisor"
PROCESSES: Final = ("router", "store", "focus", "miniapp:bench", BENCH)
DUMP_TIMEOUT_S: Final = 20.0
TOP: Final = 8  # functions listed per process

# (bucket, test on the function's (file, line, name) key); the first that matches wins.
_Key = tuple[str, int, str]


def _is(*parts: str) -> Any:
    return lambda key: any(part in key[0] or part in key[2] for part in parts)


BUCKETS: Final[tuple[tuple[str, Any], ...]] = (
    ("wait (epoll: idle)", lambda key: "select.epoll" in key[2]),
    ("socket syscalls", lambda key: "_socket.socket" in key[2]),
    (
        "frames: JSON decode/encode",
        _is("kernel/framing.py", "kernel/_bodies.py", "from_json", "/json/", "_json."),
    ),
    ("pydantic (validate, dump)", _is("pydantic")),
    ("ACL, refusals, identity", _is("kernel/acl.py", "kernel/_refusals.py", "identity.py")),
    ("audit", _is("kernel/audit.py", "kernel/_audit_queue.py", "store/audit/")),
    ("SQLite (apsw calls)", _is("apsw")),
    ("JSON-schema checks (tool in/out)", _is("sdk/schema.py", "sdk/_tool_model.py")),
    ("wire envelopes", _is("/wire/")),
    ("bus, channel, replies (kernel)", _is("/actors/kernel/")),
    ("trio scheduler", _is("/trio/", "outcome/")),
    ("router logic", _is("/actors/router/")),
    ("store logic", _is("/actors/store/")),
    ("focus logic", _is("/actors/focus/")),
    ("SDK + the app", _is("/sdk/", "ops/bench/_actors.py")),
    ("supervisor", _is("/supervisor/")),
    ("logging", _is("/logging/")),
)
OTHER: Final = "other (builtins, stdlib)"


def bucket_of(key: _Key) -> str:
    for name, test in BUCKETS:
        if test(key):
            return str(name)
    return OTHER


@dataclass
class ProcessProfile:
    name: str
    cpu_us: float  # per call, one at a time, unprofiled
    burst_cpu_us: float  # per call, with calls in flight, unprofiled
    wakeups: float  # epoll waits per call (profiled run)
    sends: float  # frames sent per call (socket sends, profiled run)
    buckets: dict[str, float] = field(default_factory=dict)  # share of its profiled CPU
    top: list[tuple[str, float, float]] = field(default_factory=list)  # (function, share, calls)


@dataclass
class CallProfile:
    calls: int
    wall_p50_us: float
    rate: float
    in_flight: int
    processes: list[ProcessProfile]


def _cpu_ns(pid: int) -> int:
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total


def _pids(tree: DirectTree) -> dict[str, int]:
    pids = {
        name: child.pid
        for name, child in tree.supervisor.children.items()
        if child.pid is not None and name in PROCESSES
    }
    pids[BENCH] = os.getpid()
    return pids


async def _cpu_per_call(
    tree: DirectTree, pids: dict[str, int], work: Any, calls: int
) -> dict[str, float]:
    before = {name: _cpu_ns(pid) for name, pid in pids.items()}
    await work()
    return {name: (_cpu_ns(pid) - before[name]) / calls / 1e3 for name, pid in pids.items()}


_SENDS: Final = ("<method 'send' of '_socket.socket' objects>",
                 "<method 'sendmsg' of '_socket.socket' objects>")  # fmt: skip


def _split(stats: pstats.Stats, calls: int) -> tuple[dict[str, float], float, float, list[Any]]:
    """(share of the profiled CPU per bucket, wake-ups and frames sent per call, top
    functions)."""
    raw: dict[_Key, tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    by_bucket: dict[str, float] = {}
    wakeups = sends = 0
    for key, (_cc, ncalls, own, _cum, _callers) in raw.items():
        name = bucket_of(key)
        if name.startswith("wait"):
            wakeups += ncalls
            continue
        if key[2] in _SENDS:
            sends += ncalls
        by_bucket[name] = by_bucket.get(name, 0.0) + own
    busy = sum(by_bucket.values()) or 1.0
    ranked = sorted(
        ((key, v[2], v[1]) for key, v in raw.items() if not bucket_of(key).startswith("wait")),
        key=lambda item: -item[1],
    )[:TOP]
    top = [(_label(key), own / busy, ncalls / calls) for key, own, ncalls in ranked]
    return {k: v / busy for k, v in by_bucket.items()}, wakeups / calls, sends / calls, top


def _label(key: _Key) -> str:
    path, line, name = key
    if path == "~":
        return name
    short = path.split("/lineup/")[-1] if "/lineup/" in path else "/".join(path.split("/")[-2:])
    return f"{short}:{line} {name}"


async def _dumps(folders: Iterable[Path], names: Iterable[str]) -> dict[str, Path]:
    """The stats each child wrote (`<name>-<pid>.prof`), waited for within DUMP_TIMEOUT_S."""
    wanted = {name.replace(":", "_"): name for name in names}
    found: dict[str, Path] = {}
    with trio.fail_after(DUMP_TIMEOUT_S):
        while len(found) < len(wanted):
            for folder in folders:
                for path in folder.rglob("*.prof"):
                    stem = path.name.rsplit("-", 1)[0]
                    if stem in wanted and path.stat().st_size > 0:
                        found[wanted[stem]] = path
            if len(found) < len(wanted):
                await trio.sleep(0.05)  # a bench polling files, not a test synchronising
    return found


async def profile_direct_call(
    calls: int = 300, in_flight: int = 8, keep: Path | None = None
) -> CallProfile:
    """The profile (the module's docstring); `keep`: a folder to copy each process's stats to,
    as `<process>.prof`, for `pstats`."""
    with tempfile.TemporaryDirectory(prefix="lu-profile-") as out:
        folder = Path(out)

        async def measure(tree: DirectTree) -> CallProfile:
            await tree.launch()
            for n in range(100):  # warm up
                await tree.call(f"w{n}")
            pids = _pids(tree)
            latencies: list[float] = []

            async def one_at_a_time() -> None:
                for n in range(calls):
                    started = time.perf_counter()
                    await tree.call(f"s{n}")
                    latencies.append(time.perf_counter() - started)

            cpu = await _cpu_per_call(tree, pids, one_at_a_time, calls)
            started = time.perf_counter()
            burst = await _cpu_per_call(
                tree, pids, lambda: tree.burst("b", calls, in_flight), calls
            )
            rate = calls / (time.perf_counter() - started)
            children = {name: pid for name, pid in pids.items() if name != BENCH}
            for pid in children.values():
                os.kill(pid, signal.SIGUSR1)
            await trio.sleep(0.2)  # a signal is taken at the child's next bytecode: let it be
            own = cProfile.Profile(time.thread_time_ns, 1e-9)  # CPU, as the children's
            own.enable()
            for n in range(calls):
                await tree.call(f"p{n}")
            own.disable()
            for pid in children.values():
                os.kill(pid, signal.SIGUSR2)
            own.dump_stats(str(folder / "bench-0.prof"))
            dumped = await _dumps((folder, tree.data_dir), children)
            dumped[BENCH] = folder / "bench-0.prof"
            if keep is not None:
                os.makedirs(keep, exist_ok=True)
                for name, path in dumped.items():
                    shutil.copyfile(path, keep / f"{name.replace(':', '_')}.prof")
            processes = []
            for name in PROCESSES:
                if name not in pids:
                    continue
                shares, wakeups, sends, top = _split(pstats.Stats(str(dumped[name])), calls)
                processes.append(
                    ProcessProfile(name, cpu[name], burst[name], wakeups, sends, shares, top)
                )
            return CallProfile(
                calls, statistics.median(latencies) * 1e6, rate, in_flight, processes
            )

        return await with_direct_tree(measure, env={PROFILE_ENV: out})


def render_profile(profile: CallProfile) -> str:
    procs = profile.processes
    width = 34
    head = f"{'µs per call':<{width}}" + "".join(f"{p.name:>17}" for p in procs) + f"{'all':>9}"
    lines = [
        f"One `direct` tool call across the processes ({profile.calls} calls, one at a time;"
        f" load {os.getloadavg()[0]:.2f})",
        f"wall, transport → result committed, p50: {profile.wall_p50_us:,.0f} µs;"
        f" CPU of all processes per call: {sum(p.cpu_us for p in procs):,.0f} µs"
        f" (with {profile.in_flight} in flight: {sum(p.burst_cpu_us for p in procs):,.0f} µs"
        f" per call, {profile.rate:,.0f} calls/s)",
        "",
        head,
        "-" * len(head),
    ]
    names = [name for name, _ in BUCKETS if not name.startswith("wait")] + [OTHER]
    for name in names:
        cells = [p.buckets.get(name, 0.0) * p.cpu_us for p in procs]
        if sum(cells) < 0.5:
            continue
        lines.append(
            f"{name:<{width}}" + "".join(f"{c:>17,.0f}" for c in cells) + f"{sum(cells):>9,.0f}"
        )
    lines.append("-" * len(head))
    for label, values in (
        ("CPU, one at a time (schedstat)", [p.cpu_us for p in procs]),
        (f"CPU, {profile.in_flight} in flight (schedstat)", [p.burst_cpu_us for p in procs]),
        ("wake-ups (epoll waits) per call", [p.wakeups for p in procs]),
        ("frames sent per call", [p.sends for p in procs]),
    ):
        fmt = ",.0f" if label.startswith("CPU") else ".1f"
        lines.append(
            f"{label:<{width}}"
            + "".join(f"{v:>17{fmt}}" for v in values)
            + f"{sum(values):>9{fmt}}"
        )
    app = next((p for p in procs if p.name.startswith("miniapp:")), None)
    if app is not None and app.sends:
        lines.append(
            f"The app sends {app.sends:.1f} frames per call; {ANSWERS_PER_CALL} are granted with"
            f" the call (`Bus.grant`), beside its own budget ({MINIAPP_RATE:,.0f} requests/s,"
            f" {MINIAPP_BURST:,.0f} at once), which caps only what it asks on its own."
        )
    lines.append(
        "cProfile adds a cost to every function call it sees: many tiny calls (len,"
        " isinstance) look costlier than they are; the CPU rows are unprofiled."
    )
    lines.append("")
    lines.append("Each process's costliest functions (own time, share of its profiled CPU; calls")
    lines.append("per tool call):")
    for p in procs:
        lines.append(f"  {p.name}")
        for label, share, ncalls in p.top:
            lines.append(f"    {share * 100:5.1f}%  {ncalls:6.1f}×  {label[:100]}")
    return "\n".join(lines)


def main(calls: int) -> str:
    return render_profile(trio.run(profile_direct_call, calls))
