"""The sandbox's cost: a MiniApp process from fork to ready with and without it, and the
proportional memory (PSS) of one idle sandboxed MiniApp with ten alive."""

from __future__ import annotations

import re
import statistics
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import trio

from lineup.actors.kernel import ActorKind
from lineup.supervisor import ChildSpec, Intensity, Supervisor

from ._report import Figure

TARGET = "lineup.ops.bench._actors:PongActor"


def _policy(scope: str, data_dir: Path) -> dict[str, object]:
    return {"sandbox": {"profile": "miniapp", "app_scope": scope, "data_dir": str(data_dir)}}


def _pss_kib(pid: int) -> int:
    text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    match = re.search(r"^Pss:\s+(\d+)", text, re.M)
    return int(match.group(1)) if match else 0


def _restarted(child: Any, incarnation: int) -> Callable[[], bool]:
    return lambda: bool(child.incarnation > incarnation and child.ready.is_set())


async def spawn_times(restarts: int) -> tuple[float, float]:
    """Median fork → ready (ms) of a MiniApp process (without, with) the sandbox."""
    with tempfile.TemporaryDirectory(prefix="lu-bench-") as tmp:
        data_dir = Path(tmp)
        specs = [
            ChildSpec("miniapp:plain", ActorKind.MINIAPP, TARGET),
            ChildSpec(
                "miniapp:boxed", ActorKind.MINIAPP, TARGET, config=_policy("boxed", data_dir)
            ),
        ]
        supervisor = Supervisor(
            specs,
            data_dir=data_dir,
            preload=("lineup.ops.bench._actors",),
            intensity=Intensity(max_restarts=10**6, period=0.001),
        )
        samples: dict[str, list[float]] = {"miniapp:plain": [], "miniapp:boxed": []}
        async with trio.open_nursery() as nursery:
            await nursery.start(supervisor.run)
            for _ in range(restarts):
                for name, times in samples.items():
                    child = supervisor.children[name]
                    incarnation = child.incarnation
                    supervisor.kill(name)
                    with trio.fail_after(10):
                        await supervisor.wait_until(_restarted(child, incarnation))
                    assert child.started_at is not None
                    times.append((child.started_at - child.spawned_at) * 1e3)
            nursery.cancel_scope.cancel()
        return (
            statistics.median(samples["miniapp:plain"]),
            statistics.median(samples["miniapp:boxed"]),
        )


async def idle_pss(alive: int = 10, *, sandboxed: bool = True) -> float:
    """Mean PSS (MiB) of one idle MiniApp process with `alive` of them running."""
    with tempfile.TemporaryDirectory(prefix="lu-bench-") as tmp:
        data_dir = Path(tmp)
        specs = [
            ChildSpec(
                f"miniapp:b{n}",
                ActorKind.MINIAPP,
                TARGET,
                config=_policy(f"b{n}", data_dir) if sandboxed else {},
            )
            for n in range(alive)
        ]
        supervisor = Supervisor(specs, data_dir=data_dir, preload=("lineup.ops.bench._actors",))
        async with trio.open_nursery() as nursery:
            await nursery.start(supervisor.run)
            pids = [c.pid for c in supervisor.children.values() if c.pid is not None]
            pss = [_pss_kib(pid) for pid in pids]
            nursery.cancel_scope.cancel()
        return statistics.mean(pss) / 1024


def sandbox_figures(quick: bool) -> list[Figure]:
    """A MiniApp's fork → ready and its idle PSS, each beside the same without the sandbox."""
    plain, boxed = trio.run(spawn_times, 10 if quick else 40)
    pss = trio.run(idle_pss, 10)
    pss_plain = trio.run(partial(idle_pss, 10, sandboxed=False))
    return [
        Figure(
            "sandbox",
            "MiniApp fork → ready, sandboxed p50",
            boxed,
            "ms",
            "the same without the sandbox",
            plain,
            "adds ≤ 5 ms",
            boxed - plain <= 5.0,
        ),
        Figure(
            "sandbox",
            "PSS of one idle sandboxed MiniApp (10 alive)",
            pss,
            "MiB",
            "the same without the sandbox",
            pss_plain,
            "≤ 10 MiB",
            pss <= 10.0,
        ),
    ]
