"""The bounds on audited seccomp denials, without I/O (the real-process proof is in
test_sandbox.py): which denials become audit rows, and how fast they are answered."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lineup.supervisor._denials import DenialLedger, DenialPacer


def test_the_first_denial_of_each_call_in_a_window_is_audited_and_repeats_are_counted() -> None:
    ledger = DenialLedger(window=1.0, max_rows=16)
    assert ledger.note("socket", 10.0) == (True, 0)
    assert ledger.note("socket", 10.1) == (False, 0)
    assert ledger.note("ptrace", 10.2) == (True, 0)
    assert ledger.note("socket", 10.9) == (False, 0)
    # A new window: socket is audited again, and the two left without a row are reported.
    assert ledger.note("socket", 11.0) == (True, 2)
    assert ledger.suppressed == 0


def test_no_window_gets_more_rows_than_its_cap_whatever_calls_are_tried() -> None:
    ledger = DenialLedger(window=1.0, max_rows=3)
    written = [ledger.note(f"call{i}", 5.0 + i / 1000)[0] for i in range(10)]
    assert written == [True] * 3 + [False] * 7
    assert ledger.suppressed == 7


@given(st.lists(st.tuples(st.sampled_from(["socket", "clone", "ptrace"]), st.floats(0, 0.5))))
def test_rows_per_window_never_exceed_one_per_call(steps: list[tuple[str, float]]) -> None:
    """A window opens at the first denial `window` seconds or more after the last one opened."""
    ledger = DenialLedger(window=1.0, max_rows=16)
    now, window_start, rows = 0.0, -1.0, 0
    for syscall, gap in steps:
        now += gap
        if now - window_start >= 1.0:
            window_start, rows = now, 0
        rows += ledger.note(syscall, now)[0]
        assert rows <= 3


def test_answers_within_the_burst_are_immediate_and_later_ones_are_paced() -> None:
    pacer = DenialPacer(rate=100.0, burst=5.0)
    assert [pacer.delay(0.0) for _ in range(5)] == [0.0] * 5
    delays = [pacer.delay(0.0) for _ in range(3)]
    assert delays == sorted(delays)  # each waits behind the one before it
    assert abs(delays[0] - 0.01) < 1e-9
    assert abs(delays[2] - 0.03) < 1e-9
    assert pacer.delay(10.0) == 0.0  # refilled after a quiet spell


@given(st.lists(st.floats(0, 0.01), min_size=1, max_size=500))
def test_the_pacer_never_lets_more_than_burst_plus_rate_times_time_through(
    gaps: list[float],
) -> None:
    rate, burst = 200.0, 10.0
    pacer = DenialPacer(rate=rate, burst=burst)
    now = answered_at = 0.0
    for gap in gaps:
        now += gap
        answered_at = max(now, answered_at) + pacer.delay(now)
    # The last answer cannot come before the bucket allows that many answers.
    assert answered_at >= (len(gaps) - burst) / rate - 1e-9
