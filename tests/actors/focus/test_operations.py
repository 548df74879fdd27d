"""The AppOperation machine (`actors/focus/_operations.py`): legal moves only, finals stay."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lineup.actors.focus._operations import (
    FINAL,
    TRANSITIONS,
    IllegalOperationMove,
    Operation,
    OperationEvent,
    OperationState,
    next_state,
)
from lineup.actors.kernel import ErrorCode

EVENTS: list[OperationEvent] = ["start", "complete", "fail"]


def test_an_operation_runs_then_completes_or_fails_with_its_code() -> None:
    op = Operation("op-1", "notes", "install")
    assert op.start().complete().state == "completed"
    failed = op.start().fail(ErrorCode.REVOKED)
    assert (failed.state, failed.code, failed.final) == ("failed", "revoked", True)
    assert op.fail(ErrorCode.APP_PROTECTED).state == "failed"  # refused before it ran


def test_a_requested_operation_cannot_complete_without_running() -> None:
    with pytest.raises(IllegalOperationMove):
        Operation("op-1", "notes", "install").complete()


@given(st.lists(st.sampled_from(EVENTS), max_size=8))
def test_every_sequence_moves_only_along_the_table_and_finals_never_change(
    events: list[OperationEvent],
) -> None:
    state: OperationState = "requested"
    for event in events:
        allowed = TRANSITIONS[state]
        if event in allowed:
            after = next_state(state, event)
            assert after == allowed[event]
            assert state not in FINAL
            state = after
        else:
            with pytest.raises(IllegalOperationMove):
                next_state(state, event)
    assert state in TRANSITIONS


def test_the_final_states_are_exactly_completed_and_failed() -> None:
    assert {"completed", "failed"} == FINAL
    for state, moves in TRANSITIONS.items():
        assert set(moves.values()) <= set(TRANSITIONS), state
