"""The AppOperation machine (`facts/operations.py`): legal moves only, finals stay."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lineup.facts.operations import (
    COMPLETED,
    FAILED,
    FINAL,
    TRANSITIONS,
    IllegalOperationMove,
    OperationEvent,
    OperationState,
    next_state,
)

EVENTS: list[OperationEvent] = ["start", "complete", "fail"]


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
    assert {"completed", "failed"} == FINAL == {COMPLETED, FAILED}
    for state, moves in TRANSITIONS.items():
        assert set(moves.values()) <= set(TRANSITIONS), state
