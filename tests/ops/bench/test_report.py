"""The bench report's pure logic, and that the Ray peer is optional: no test here needs ray."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from lineup.ops.bench._ray import measure_ray
from lineup.ops.bench._report import Figure, Peer, build_report, render_table

FIELDS = {
    "group",
    "name",
    "value",
    "unit",
    "baseline_name",
    "baseline",
    "ratio",
    "target",
    "met",
    "note",
}
MACHINE = {"cpus": 2, "python": "3.11"}


def kernel(value: float, baseline: float | None, met: bool | None = None) -> Figure:
    return Figure("kernel", "bus p50", value, "µs", "raw ping-pong p50", baseline, met=met)


def test_every_figure_in_the_report_has_its_baseline_ratio_and_target() -> None:
    report = build_report([kernel(150.0, 50.0, met=False)], machine=MACHINE)

    (figure,) = report["figures"]
    assert set(figure) == FIELDS
    assert figure["ratio"] == pytest.approx(3.0)
    assert figure["met"] is False
    assert report["machine"] == MACHINE


def test_targets_are_counted_and_figures_without_one_are_not() -> None:
    figures = [kernel(1.0, 1.0, met=True), kernel(1.0, 1.0, met=False), kernel(1.0, 1.0)]

    report = build_report(figures, machine=MACHINE)

    assert report["targets"] == {"met": 1, "missed": 1}


def test_a_baseline_not_measured_has_no_ratio_and_the_table_says_so() -> None:
    unmeasured = Figure("ray", "bus round trip p50", 150.0, "µs", "Ray call p50", None, note="why")
    peer = Peer("ray", "a Ray actor", available=False, reason="ray is not installed")

    report = build_report([unmeasured], machine=MACHINE, peers=[peer])
    table = render_table([unmeasured], [peer])

    assert report["figures"][0]["baseline"] is None
    assert report["figures"][0]["ratio"] is None
    assert report["peers"]["ray"]["available"] is False
    assert "NOT MEASURED" in table
    assert "n/a" in table
    assert "n/aµs" not in table  # a figure not measured has no unit


def test_a_value_not_measured_is_printed_without_its_unit() -> None:
    table = render_table([kernel(math.nan, 2.0)])

    assert "n/ams" not in table and "n/aµs" not in table
    assert "n/a" in table


def test_the_report_is_strict_json_even_with_non_finite_numbers() -> None:
    figures = [kernel(math.nan, 1.0), kernel(1.0, math.inf), kernel(1.0, 0.0)]

    text = json.dumps(build_report(figures, machine=MACHINE), allow_nan=False)

    values = [(f["value"], f["baseline"], f["ratio"]) for f in json.loads(text)["figures"]]
    assert values == [(None, 1.0, None), (1.0, None, None), (1.0, 0.0, None)]


def test_a_peer_that_is_measured_names_its_version_and_keeps_start_up_out_of_figures() -> None:
    peer = Peer("ray", "a Ray actor", True, "2.60.0", info={"init_seconds": 3.0})

    report = build_report([], machine=MACHINE, peers=[peer])

    assert report["peers"]["ray"] == {
        "title": "a Ray actor",
        "available": True,
        "version": "2.60.0",
        "reason": None,
        "init_seconds": 3.0,
    }


def test_without_ray_the_peer_run_reports_why_instead_of_a_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A `ray` that cannot be imported, first on the child's path, whether or not ray is installed.
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "__init__.py").write_text("raise ImportError('no ray here')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))

    run = measure_ray(samples=10, burst=10, kills=1)

    assert not run.available
    assert run.reason
    assert (run.latencies, run.rate, run.restarts_polled, run.restarts_retried) == ([], 0, [], [])


def test_the_bench_itself_never_imports_ray() -> None:
    code = "import sys, lineup.ops.bench.__main__; print('ray' in sys.modules)"

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert out.stdout.strip() == "False"
