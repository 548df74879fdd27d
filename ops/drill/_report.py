"""The drill's report: a printed summary, the JSON document, and an SVG timeline.

The timeline plots tool calls finished per second (terminal messages as the Agent received
them) against the faults: kills as red ticks labelled with their target, pauses, link cuts,
slowness and 5xx answers as shaded bands. It is plain SVG written by hand, no plotting library.
"""

from __future__ import annotations

import math
from collections import Counter
from html import escape
from typing import Any, Final

__all__ = ["percentile", "summary_lines", "timeline_svg"]

_COLOURS: Final = {
    "kill": "#d62728",
    "pause": "#ff7f0e",
    "cut": "#7f7f7f",
    "slow": "#1f77b4",
    "5xx": "#9467bd",
}
_W, _H, _PAD = 1200, 360, 48


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def summary_lines(report: dict[str, Any]) -> list[str]:
    ops, rec = report["operations"], report["recovery_ms"]
    asked = ops["interactions"]
    faults = ", ".join(f"{k} {v}" for k, v in sorted(report["faults"]["by_kind"].items()))
    lines = [
        f"drill seed {report['seed']}: {report['duration_s']:.0f} s of load, "
        f"{report['faults']['injected']} faults ({faults})",
        f"  operations: {ops['tool_calls']} tool calls, {ops['agent_texts']} Agent messages, "
        f"{ops['user_messages']} user messages, {ops['closes']} closes, "
        f"{ops['shell_reconnects']} Shell reconnects",
        f"  recovery after SIGKILL (to the replacement running): p50 {_ms(rec['p50'])}, "
        f"p99 {_ms(rec['p99'])}, max {_ms(rec['max'])} over {rec['count']} kills",
        f"  quiescence after the last fault: {report['quiescence_s']:.1f} s{_waited(report)}",
        f"  interactions: {asked['asked']} asked, ended {_endings(asked['ended_by_script'])}",
    ]
    for name, figures in (report.get("exercises") or {}).items():
        lines.append(f"  {name}: {_figures(figures)}")
    for rule in report["invariants"]:
        mark = "PASS" if rule["passed"] else "FAIL"
        detail = "" if rule["passed"] else f" — {rule['violations']} violations, e.g. "
        detail += "; ".join(rule["examples"][:3]) if not rule["passed"] else ""
        lines.append(f"  [{mark}] {rule['name']}{detail}")
    return lines


def _figures(figures: dict[str, Any]) -> str:
    """An exercise's figures on one line: `asked 12, ended_by_script (deny: …), …`."""
    parts = []
    for key, value in figures.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{k}: {_flat(v)}" for k, v in value.items())
            parts.append(f"{key} ({inner})")
        else:
            parts.append(f"{key} {value}")
    return ", ".join(parts)


def _flat(value: Any) -> str:
    if isinstance(value, dict):
        return " ".join(f"{k} {v}" for k, v in value.items())
    return str(value)


def _waited(report: dict[str, Any]) -> str:
    wait = report.get("expiry_wait_s") or 0.0
    return f" (the last expiry was due {wait:.1f} s after the load)" if wait > 0 else ""


def _endings(endings: dict[str, dict[str, int]]) -> str:
    """`expire: expired 1; race: cancelled 2, completed 1; …`, by script."""
    return "; ".join(
        f"{group}: " + ", ".join(f"{state} {n}" for state, n in states.items())
        for group, states in endings.items()
    )


def _label(at: float, text: str) -> str:
    """A label beside a vertical line: on its left when the right edge is too near."""
    if at > _W - 160:
        return f'<text x="{at - 4:.1f}" y="{_PAD + 12}" text-anchor="end">{escape(text)}</text>'
    return f'<text x="{at + 4:.1f}" y="{_PAD + 12}">{escape(text)}</text>'


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def timeline_svg(report: dict[str, Any], finished_at: list[float]) -> str:
    span = float(max(report["duration_s"] + report["quiescence_s"], 1.0))
    per_second = Counter(int(t) for t in finished_at)
    peak = max(per_second.values(), default=1)

    def x(t: float) -> float:
        return _PAD + (_W - 2 * _PAD) * min(t, span) / span

    def y(v: float) -> float:
        return _H - _PAD - (_H - 2 * _PAD) * v / peak

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{_W}" height="{_H}" fill="white"/>',
        f'<text x="{_PAD}" y="20" font-size="14">lineup drill, seed {report["seed"]}: '
        f"tool calls finished per second, and the faults</text>",
    ]
    for fault in report["faults"]["timeline"]:
        colour = _COLOURS.get(fault["kind"], "#000")
        if fault["kind"] == "kill":
            parts.append(
                f'<line x1="{x(fault["at"]):.1f}" x2="{x(fault["at"]):.1f}" y1="{_PAD}" '
                f'y2="{_H - _PAD}" stroke="{colour}" stroke-opacity="0.5">'
                f"<title>SIGKILL {escape(fault['target'])}</title></line>"
            )
        else:
            width = max(x(fault["at"] + fault["duration"]) - x(fault["at"]), 1.0)
            parts.append(
                f'<rect x="{x(fault["at"]):.1f}" y="{_PAD}" width="{width:.1f}" '
                f'height="{_H - 2 * _PAD}" fill="{colour}" fill-opacity="0.18">'
                f"<title>{escape(fault['kind'])} {escape(fault['target'])}</title></rect>"
            )
    points = " ".join(
        f"{x(second + 0.5):.1f},{y(per_second.get(second, 0)):.1f}"
        for second in range(int(span) + 1)
    )
    parts += [
        f'<polyline points="{points}" fill="none" stroke="#2ca02c" stroke-width="1.5"/>',
        f'<line x1="{_PAD}" x2="{_W - _PAD}" y1="{_H - _PAD}" y2="{_H - _PAD}" stroke="#333"/>',
        f'<line x1="{_PAD}" x2="{_PAD}" y1="{_PAD}" y2="{_H - _PAD}" stroke="#333"/>',
        f'<text x="{_PAD - 6}" y="{_PAD + 4}" text-anchor="end">{peak}/s</text>',
        f'<text x="{_PAD - 6}" y="{_H - _PAD}" text-anchor="end">0</text>',
        f'<text x="{_W - _PAD}" y="{_H - _PAD + 16}" text-anchor="end">{span:.0f} s</text>',
        f'<line x1="{x(report["duration_s"]):.1f}" x2="{x(report["duration_s"]):.1f}" '
        f'y1="{_PAD}" y2="{_H - _PAD}" stroke="#333" stroke-dasharray="4 3"/>',
        _label(x(report["duration_s"]), "load and faults end"),
    ]
    for i, (kind, colour) in enumerate(_COLOURS.items()):
        lx = _PAD + i * 110
        parts.append(
            f'<rect x="{lx}" y="{_H - 20}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{lx + 14}" y="{_H - 11}">{escape(kind)}</text>'
        )
    parts.append(
        f'<rect x="{_PAD + 5 * 110}" y="{_H - 16}" width="10" height="2" fill="#2ca02c"/>'
        f'<text x="{_PAD + 5 * 110 + 14}" y="{_H - 11}">calls finished/s</text>'
    )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
