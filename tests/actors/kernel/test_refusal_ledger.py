"""The per-offender bound on refusal audit rows (actors/kernel/audit.py `RefusalLedger`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lineup.actors.kernel.audit import SUPPRESSED, RefusalLedger

CODE = "acl_denied"
TAG = "supervisor.child.start"


def test_the_first_refusals_of_a_window_get_rows_and_the_rest_are_counted() -> None:
    ledger = RefusalLedger(window=1.0, rows=8, stop_after=32)
    verdicts = [ledger.note("miniapp:x", CODE, TAG, 10.0 + i * 0.001) for i in range(20)]
    assert [v.write for v in verdicts] == [True] * 8 + [False] * 12
    assert [v.first_suppressed for v in verdicts].count(True) == 1
    assert verdicts[8].first_suppressed
    left = ledger.take_suppressed("miniapp:x")
    assert left is not None and left.count == 12
    row = left.record("supervisor", "miniapp:x")
    assert (row.event, row.peer, row.code, row.message_type, row.subject_id) == (
        SUPPRESSED, "miniapp:x", CODE, TAG, "12"
    )  # fmt: skip
    assert ledger.take_suppressed("miniapp:x") is None  # handed over once


def test_a_new_window_reports_what_the_last_one_left_unreported() -> None:
    ledger = RefusalLedger(window=1.0, rows=2, stop_after=100)
    for i in range(5):
        ledger.note("miniapp:x", CODE, TAG, 0.1 * i)
    later = ledger.note("miniapp:x", CODE, TAG, 5.0)
    assert later.write
    assert later.left_over is not None and later.left_over.count == 3


def test_an_offender_past_the_bound_within_one_window_keeps_misbehaving() -> None:
    ledger = RefusalLedger(window=1.0, rows=8, stop_after=32)
    persistent = [ledger.note("miniapp:x", CODE, TAG, 0.01 * i).persistent for i in range(40)]
    assert persistent.index(True) == 31
    # A slow offender never reaches it: each window starts again.
    slow = RefusalLedger(window=1.0, rows=8, stop_after=32)
    assert not any(slow.note("miniapp:y", CODE, TAG, 2.0 * i).persistent for i in range(100))


def test_offenders_are_counted_apart() -> None:
    ledger = RefusalLedger(window=1.0, rows=1, stop_after=3)
    assert ledger.note("miniapp:a", CODE, TAG, 0.0).write
    assert ledger.note("miniapp:b", CODE, TAG, 0.0).write
    assert not ledger.note("miniapp:a", CODE, TAG, 0.1).write


@given(st.lists(st.floats(min_value=0, max_value=10, allow_nan=False), max_size=300))
def test_every_refusal_is_either_a_row_or_counted_exactly_once(times: list[float]) -> None:
    ledger = RefusalLedger(window=1.0, rows=4, stop_after=16)
    rows = counted = 0
    for t in sorted(times):
        verdict = ledger.note("miniapp:x", CODE, TAG, t)
        rows += verdict.write
        if verdict.left_over is not None:
            counted += verdict.left_over.count
    tail = ledger.take_suppressed("miniapp:x")
    counted += tail.count if tail is not None else 0
    assert rows + counted == len(times)
