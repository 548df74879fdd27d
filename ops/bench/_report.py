"""The bench report: every figure beside its same-run baseline, as one table and one JSON.

Pure: it measures nothing and writes nothing, so it is tested without a tree or a peer. A
baseline that could not be measured (the peer is not installed, or failed) is `None` with a
note saying why — never a made-up number — and its ratio is `None`. Targets are reported, never
asserted: `met` is `None` where a figure has no target.
"""

from __future__ import annotations

import math
import os
import platform
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lineup

SCHEMA = 1


@dataclass(frozen=True)
class Figure:
    group: str  # which issue's figures ("kernel", "IM", …) or which peer's (a `Peer.name`)
    name: str
    value: float
    unit: str  # the value's and the baseline's
    baseline_name: str
    baseline: float | None  # None: not measured in this run, `note` says why
    target: str = "-"  # human-readable, e.g. "≤ 2.0× baseline"
    met: bool | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.baseline == 0 or not math.isfinite(self.baseline):
            return None
        return _finite(self.value / self.baseline)


@dataclass(frozen=True)
class Peer:
    """What the report says about a peer measured beside LineUp (whether it ran, and why not)."""

    name: str  # also the `group` of the figures it is the baseline of
    title: str
    available: bool
    version: str = ""
    reason: str = ""  # why it is not available
    info: Mapping[str, object] | None = None  # e.g. its start-up time, kept out of the figures


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def figure_json(f: Figure) -> dict[str, Any]:
    return {
        "group": f.group,
        "name": f.name,
        "value": _finite(f.value),
        "unit": f.unit,
        "baseline_name": f.baseline_name,
        "baseline": _finite(f.baseline),
        "ratio": _finite(f.ratio),
        "target": f.target,
        "met": f.met,
        "note": f.note,
    }


def build_report(
    figures: Iterable[Figure],
    *,
    machine: Mapping[str, object],
    peers: Iterable[Peer] = (),
    quick: bool = False,
) -> dict[str, Any]:
    """One JSON-ready report. Non-finite numbers become `null`, so the JSON stays strict."""
    figures = list(figures)
    with_target = [f for f in figures if f.met is not None]
    return {
        "schema": SCHEMA,
        "quick": quick,
        "machine": dict(machine),
        "peers": {
            p.name: {
                "title": p.title,
                "available": p.available,
                "version": p.version or None,
                "reason": p.reason or None,
                **(p.info or {}),
            }
            for p in peers
        },
        "targets": {
            "met": sum(1 for f in with_target if f.met),
            "missed": sum(1 for f in with_target if not f.met),
        },
        "figures": [figure_json(f) for f in figures],
    }


def _num(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "n/a"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 1:
        return f"{x:.1f}"
    return f"{x:.2f}"


def _with_unit(x: float | None, unit: str) -> str:
    """`12.5ms`, or `n/a` alone for a figure not measured (never `n/ams`)."""
    text = _num(x)
    return text if text == "n/a" else f"{text}{unit}"


def render_table(figures: Iterable[Figure], peers: Iterable[Peer] = ()) -> str:
    """The printed table: one section per group, each figure with its baseline's name below."""
    figures = list(figures)
    headings = {p.name: _peer_heading(p) for p in peers}
    width = max([len("figure"), *(len(f.name) for f in figures)])
    lines = [f"{'figure':<{width}}  {'value':>10}  {'baseline':>10}  {'ratio':>6}  target"]
    group = None
    said = ""  # the last "baseline:" line: figures in a row on one baseline say it once
    for f in figures:
        if f.group != group:
            group, said = f.group, ""
            lines.append(f"── {headings.get(group, group)}")
        ratio = "n/a" if f.ratio is None else f"{f.ratio:.2f}"
        verdict = "" if f.met is None else ("  met" if f.met else "  MISSED")
        value = _with_unit(f.value, f.unit)
        baseline = _with_unit(f.baseline, f.unit)
        lines.append(
            f"{f.name:<{width}}  {value:>10}  {baseline:>10}  {ratio:>6}  {f.target}{verdict}"
        )
        below = f"baseline: {f.baseline_name}"
        if f.note:
            below += f" — {f.note}"
        if below != said:
            lines.append(f"{'':<{width}}  {below}")
            said = below
    return "\n".join(lines)


def _peer_heading(p: Peer) -> str:
    if not p.available:
        return f"{p.title}: NOT MEASURED — {p.reason}"
    return f"{p.title} ({p.name} {p.version}, same run)"


def machine_info() -> dict[str, object]:
    """What the figures were measured on."""
    info: dict[str, object] = {
        "cpus": os.cpu_count(),
        "cpu_model": None,
        "memory_gib": None,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "lineup": lineup.__version__,
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["memory_gib"] = round(int(line.split()[1]) / 2**20, 1)
                break
    except OSError:
        pass  # not Linux: the rest still says what it ran on
    return info
