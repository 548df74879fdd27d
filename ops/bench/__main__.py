"""`make bench`: every figure beside its baseline measured in the same run.

Prints a table and writes `bench-results/kernel.json`. Targets are reported, never asserted:
speed is measured here, not in the test suite.
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
from dataclasses import asdict
from pathlib import Path

import trio

from . import _measure as m
from ._im import im_delivery
from ._measure import Figure, median, pct
from ._sandbox import idle_pss, spawn_times
from ._tools import direct_calls


def run(quick: bool) -> list[Figure]:
    scale = 0.2 if quick else 1.0
    n = int(5000 * scale)
    figures: list[Figure] = []

    raw = m.raw_pingpong(n)
    bus = trio.run(m.bus_roundtrip, n)
    for label, q in (("p50", 0.5), ("p99", 0.99)):
        base = pct(raw, q) * 1e6
        value = pct(bus, q) * 1e6
        figures.append(
            Figure(
                f"bus request/reply round trip {label}",
                value,
                "µs",
                f"raw trio socketpair ping-pong {label}",
                base,
                "≤ 2.0× baseline" if label == "p50" else "-",
                value <= 2 * base if label == "p50" else None,
            )
        )

    seconds = 3.0 * scale + 1.0
    raw_rate = m.raw_apsw_commits(seconds)
    actor_rate = trio.run(m.store_writes, seconds)
    figures.append(
        Figure(
            "store acknowledged writes (16 requesters)",
            actor_rate,
            "/s",
            "raw apsw single-row commits (WAL, NORMAL)",
            raw_rate,
            "≥ 0.25× baseline",
            actor_rate >= 0.25 * raw_rate,
        )
    )

    fresh = median(m.fresh_interpreter_times(max(3, int(10 * scale)))) * 1e3
    spawn = median(trio.run(m.spawn_times, 8)) * 1e3
    figures.append(
        Figure(
            "zygote fork → actor ready p50",
            spawn,
            "ms",
            "fresh interpreter importing trio+pydantic",
            fresh,
            "well below baseline",
            spawn < fresh,
        )
    )

    restart = median(trio.run(m.restart_latency, max(5, int(30 * scale)))) * 1e3
    figures.append(
        Figure(
            "SIGKILL → replacement answers health p50",
            restart,
            "ms",
            "fresh interpreter importing trio+pydantic",
            fresh,
            "≤ 25 ms",
            restart <= 25,
        )
    )

    latencies, rate = trio.run(im_delivery, max(20, int(100 * scale)), max(100, int(500 * scale)))
    insert_rate = m.raw_apsw_commits(seconds)
    figures.append(
        Figure(
            "agent message → shown by the chat, msgs/s (burst)",
            rate,
            "/s",
            "raw apsw single-row commits (WAL, NORMAL)",
            insert_rate,
            "-",
            None,
        )
    )
    figures.append(
        Figure(
            "agent message → shown by the chat p50",
            median(latencies) * 1e3,
            "ms",
            "bus request/reply round trip p50",
            pct(bus, 0.5) * 1e3,
            "-",
            None,
        )
    )

    tool_latencies, tool_rate = trio.run(
        direct_calls, max(50, int(300 * scale)), max(100, int(1000 * scale))
    )
    for label, q in (("p50", 0.5), ("p99", 0.99)):
        figures.append(
            Figure(
                f"direct tool call: transport → result committed {label}",
                pct(tool_latencies, q) * 1e3,
                "ms",
                f"bus request/reply round trip {label}",
                pct(bus, q) * 1e3,
                "-",
                None,
            )
        )
    figures.append(
        Figure(
            "direct tool calls/s (8 in flight)",
            tool_rate,
            "/s",
            "store acknowledged writes/s (16 requesters)",
            actor_rate,
            "-",
            None,
        )
    )

    plain, boxed = trio.run(spawn_times, max(10, int(40 * scale)))
    figures.append(
        Figure(
            "MiniApp fork → ready, sandboxed p50",
            boxed,
            "ms",
            "the same without the sandbox",
            plain,
            "adds ≤ 5 ms",
            boxed - plain <= 5.0,
        )
    )
    pss = trio.run(idle_pss, 10)
    figures.append(
        Figure(
            "PSS of one idle sandboxed MiniApp (10 alive)",
            pss,
            "MiB",
            "target",
            10.0,
            "≤ 10 MB",
            pss <= 10.0,
        )
    )

    start = median(m.startup_times(max(2, int(5 * scale))))
    figures.append(
        Figure(
            "`lineup run` start → ready p50",
            start * 1e3,
            "ms",
            "fresh interpreter importing trio+pydantic",
            fresh,
            "≤ 1000 ms",
            start <= 1.0,
        )
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(prog="lineup-bench")
    parser.add_argument("--quick", action="store_true", help="fewer samples (smoke run)")
    parser.add_argument("--out", type=Path, default=Path("bench-results/kernel.json"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)  # the restart figure SIGKILLs on purpose
    figures = run(args.quick)
    width = max(len(f.name) for f in figures)
    print(f"{'figure':<{width}}  {'value':>10}  {'baseline':>10}  {'ratio':>6}  target")
    for f in figures:
        verdict = "" if f.met is None else ("  met" if f.met else "  MISSED")
        print(
            f"{f.name:<{width}}  {f.value:>8.1f}{f.unit:<2}  {f.baseline:>8.1f}{f.unit:<2}  "
            f"{f.ratio:>6.2f}  {f.target}{verdict}"
        )
        print(f"{'':<{width}}  baseline: {f.baseline_name}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "machine": {
                    "cpus": __import__("os").cpu_count(),
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                },
                "figures": [{**asdict(f), "ratio": f.ratio} for f in figures],
            },
            indent=2,
        )
    )
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
