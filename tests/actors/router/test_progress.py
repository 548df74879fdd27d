"""Progress coalescing (actors/router/_progress.py): the latest wins, a few a second."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from lineup.actors.router._progress import SEND_NOW, ProgressCoalescer


def test_the_first_report_of_a_quiet_call_goes_out_at_once() -> None:
    c: ProgressCoalescer[int] = ProgressCoalescer(interval=0.25)
    assert c.offer("c1", 1, 10.0) == SEND_NOW
    assert c.offer("c2", 1, 10.0) == SEND_NOW  # calls are apart
    assert c.offer("c1", 2, 10.3) == SEND_NOW  # its window is over


def test_reports_within_a_window_are_held_and_the_latest_wins() -> None:
    c: ProgressCoalescer[int] = ProgressCoalescer(interval=0.25)
    assert c.offer("c1", 1, 10.0) == SEND_NOW
    assert c.offer("c1", 2, 10.05) == 10.25  # held: flush it then
    assert c.offer("c1", 3, 10.1) is None  # replaced the held one; its flush is due already
    assert c.offer("c1", 4, 10.2) is None
    assert c.take("c1", 10.25) == 4
    assert c.take("c1", 10.25) is None
    assert c.coalesced == 2
    assert c.offer("c1", 5, 10.3) == 10.5  # the flush counted as a send


def test_an_ended_call_drops_what_it_held() -> None:
    c: ProgressCoalescer[int] = ProgressCoalescer(interval=0.25)
    c.offer("c1", 1, 0.0)
    c.offer("c1", 2, 0.1)
    c.drop("c1")
    assert c.take("c1", 0.25) is None
    assert c.held() == 0


def test_memory_is_bounded_by_the_calls_it_remembers() -> None:
    c: ProgressCoalescer[int] = ProgressCoalescer(interval=0.25, max_calls=3)
    for i in range(10):
        c.offer(f"c{i}", i, 0.0)
        c.offer(f"c{i}", i, 0.1)
    assert c.held() <= 3


@given(st.lists(st.floats(min_value=0, max_value=5, allow_nan=False), min_size=1, max_size=500))
def test_at_most_one_send_per_interval_and_the_last_report_is_never_lost(
    times: list[float],
) -> None:
    c: ProgressCoalescer[int] = ProgressCoalescer(interval=0.25)
    sent: list[tuple[float, int]] = []
    due: list[float] = []
    for n, t in enumerate(sorted(times)):
        while due and due[0] <= t:  # the router's flush tasks, in time order
            at = due.pop(0)
            report = c.take("c", at)
            if report is not None:
                sent.append((at, report))
        verdict = c.offer("c", n, t)
        if verdict == SEND_NOW:
            sent.append((t, n))
        elif verdict is not None:
            due.append(verdict)
    for at in due:
        report = c.take("c", at)
        if report is not None:
            sent.append((at, report))
    assert sent[-1][1] == len(times) - 1  # the latest is sent, at the end of its window
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(sent)]
    assert all(g >= 0.25 - 1e-9 for g in gaps)
