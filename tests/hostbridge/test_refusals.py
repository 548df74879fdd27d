"""Which refusals at the Shell's socket become audit rows."""

from __future__ import annotations

from lineup.hostbridge._refusals import RefusalLedger


def test_past_the_rows_of_a_window_refusals_are_counted_and_reported_once_it_is_over() -> None:
    ledger = RefusalLedger(window=2.0, max_rows=3)
    admitted = [ledger.admit("frame", 0.1 * n) for n in range(10)]
    assert admitted == [True] * 3 + [False] * 7
    assert ledger.admit("handshake", 0.5)  # each kind has its own rows
    assert ledger.due(1.9) == []  # not over yet
    assert ledger.due(2.0) == [("frame", 7)]  # "handshake" dropped none: no counter row
    assert ledger.due(9.0) == []  # reported once
    assert ledger.admit("frame", 9.0)  # a new window, with its own rows


def test_every_refusal_is_either_a_row_or_counted_in_exactly_one_report() -> None:
    ledger = RefusalLedger(window=1.0, max_rows=5)
    rows = dropped = 0
    for n in range(10_000):
        now = n * 0.001
        dropped += sum(count for _kind, count in ledger.due(now))
        rows += ledger.admit("frame", now)
    dropped += sum(count for _kind, count in ledger.due(1e9))
    assert rows + dropped == 10_000
    assert rows == 5 * 10  # ten windows of a second
