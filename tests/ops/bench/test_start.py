"""The start's breakdown in `make bench`: read from what `lineup run` prints, as it prints it."""

from __future__ import annotations

import pytest

from lineup.ops.bench._start import (
    StartTimeline,
    median_cpu,
    median_phases,
    parse_timeline,
    start_timelines,
)
from lineup.tests.supervisor.test_cli import ACTORS, AFTER_READY

LINES = [
    (0.30, "lineup: starting (pid 7, data dir /tmp/x)"),
    (0.35, "lineup: store ready (pid 8) in 40.0 ms"),
    (0.50, "lineup: router ready (pid 9) in 100.0 ms"),
    (0.52, "lineup: ready in 0.22 s (2 actors)"),
    (0.60, "lineup: open the Shell: http://127.0.0.1:1/#token=t"),
]


def test_a_timeline_places_each_child_between_its_spawn_and_its_ready_line() -> None:
    timeline = parse_timeline(LINES)
    assert timeline.imports == 0.30
    assert timeline.total == 0.52  # the lines after `ready` are not the start's
    assert timeline.ready == {"store": 0.35, "router": 0.50}
    assert timeline.spawned == pytest.approx({"store": 0.31, "router": 0.40})
    assert timeline.link_wait == pytest.approx(0.02)


def test_the_phases_are_medians_in_spawn_order_and_add_up_per_child() -> None:
    slow = parse_timeline([(at * 2, line) for at, line in LINES])
    phases = dict(median_phases([parse_timeline(LINES), slow, parse_timeline(LINES)]))
    assert list(phases) == [
        "interpreter + supervisor imports (spawn → `starting`)",
        "store: `starting` → spawned",
        "store: spawned → ready",
        "router: `starting` → spawned",
        "router: spawned → ready",
        "last child ready → `ready` (first login)",
    ]
    assert phases["store: spawned → ready"] == pytest.approx(0.04)
    assert phases["router: `starting` → spawned"] == pytest.approx(0.10)


def test_the_cpu_of_a_start_is_its_sum_then_each_process_the_most_first() -> None:
    runs = [
        StartTimeline(cpu={"supervisor": 0.2, "zygote": 0.3, "store": 0.05}),
        StartTimeline(cpu={"supervisor": 0.4, "zygote": 0.1}),  # no store: 0 in this run
        StartTimeline(cpu={"supervisor": 0.3, "zygote": 0.2, "store": 0.01}),
    ]
    ranked = median_cpu(runs)
    assert [name for name, _ in ranked] == ["every process", "supervisor", "zygote", "store"]
    assert [seconds for _, seconds in ranked] == pytest.approx([0.51, 0.3, 0.2, 0.01])


@pytest.mark.slow
def test_a_real_start_names_every_child_the_ready_of_the_embedded_default_waits_for() -> None:
    (timeline,) = start_timelines(1)
    # Every child of the embedded default, but the demo Agent: it starts once the tree is ready.
    assert set(timeline.ready) == set(ACTORS) - {AFTER_READY}
    assert 0 < timeline.imports < min(timeline.spawned.values())
    assert all(timeline.spawned[n] < timeline.ready[n] <= timeline.total for n in timeline.ready)
    assert timeline.stop > 0  # its stop is timed too: SIGTERM → exited
    # The CPU each process used until ready, read from /proc: the supervisor, its zygotes
    # and every child that was ready.
    assert {"supervisor", "zygote", *timeline.ready} <= set(timeline.cpu)
    assert all(seconds > 0 for seconds in timeline.cpu.values())
