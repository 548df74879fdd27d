"""`lineup drill`: run the runtime under seeded faults and check that nothing was lost or
duplicated. Exit 0 when every invariant held; 1 naming the broken ones and the seed to replay."""

from __future__ import annotations

import argparse
import json
import logging
import random
import shutil
import sys
from pathlib import Path

import trio

from ._faults import KINDS
from ._report import summary_lines
from ._runner import EXERCISES, DrillOptions, run_drill

EXIT_BROKEN = 1


def _kinds(raw: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in raw.split(",") if k.strip())
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(f"unknown kinds {unknown}; choose from {','.join(KINDS)}")
    return kinds


def _exercises(raw: str) -> tuple[str, ...]:
    if raw.strip() == "none":
        return ()
    names = tuple(n.strip() for n in raw.split(",") if n.strip())
    unknown = [n for n in names if n not in EXERCISES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown exercises {unknown}; choose from {','.join(EXERCISES)} or none"
        )
    return names


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lineup drill", description=__doc__)
    p.add_argument("--seed", type=int, default=None, help="replay a run (default: a random one)")
    p.add_argument("--duration", type=float, default=60.0, help="seconds of load and faults")
    p.add_argument("--faults", type=int, default=60, help="how many faults to inject")
    p.add_argument(
        "--kinds",
        type=_kinds,
        default=KINDS,
        help=f"comma-separated fault kinds (default: all of {','.join(KINDS)})",
    )
    p.add_argument("--rate", type=float, default=25.0, help="Agent operations per second")
    p.add_argument(
        "--ask-rate", type=float, default=1.0, help="standard interactions asked per second"
    )
    p.add_argument(
        "--exercises",
        type=_exercises,
        default=tuple(EXERCISES),
        help="comma-separated parts of the product to drive besides the core load, or `none` "
        f"(default: all of {','.join(EXERCISES)})",
    )
    p.add_argument("--report", type=Path, default=None, help="write the JSON report here")
    p.add_argument("--data-dir", type=Path, default=None, help="keep the runtime's files here")
    p.add_argument(
        "--quiesce-timeout",
        type=float,
        default=60.0,
        help="give up once this many seconds pass with no progress towards quiet",
    )
    p.add_argument("--json", action="store_true", help="print the JSON report, not the summary")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s drill %(name)s: %(message)s")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    options = DrillOptions(
        seed=seed,
        duration=args.duration,
        faults=args.faults,
        kinds=args.kinds,
        rate=args.rate,
        ask_rate=args.ask_rate,
        quiesce_timeout=args.quiesce_timeout,
        exercises=args.exercises,
        data_dir=args.data_dir,
        report=args.report,
    )
    report, invariants = trio.run(run_drill, options)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print("\n".join(summary_lines(report)))
        print(f"  report: {report['report_path']} (timeline beside it, .svg)")
    broken = [rule.name for rule in invariants if not rule.passed]
    if broken:
        print(
            f"lineup drill: FAILED {', '.join(broken)} (seed {seed}); the runtime's files are in "
            f"{report['data_dir']}; replay with: {options.replay()}",
            file=sys.stderr,
        )
        return EXIT_BROKEN
    if args.data_dir is None:
        shutil.rmtree(report["data_dir"], ignore_errors=True)
    return 0
