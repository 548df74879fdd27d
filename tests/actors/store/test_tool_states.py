"""The tool call state machine on its own (`actors/store/_tool_states.py`): no database."""

from __future__ import annotations

from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store._tool_states import (
    EVENT_TO,
    FINAL,
    TRANSITIONS,
    ToolCallEvent,
    next_state,
    step,
)
from lineup.actors.store.messages import ToolCallFinalState, ToolCallState, ToolCallStep

STATES: tuple[ToolCallState, ...] = get_args(ToolCallState)
EVENTS: tuple[ToolCallEvent, ...] = get_args(ToolCallEvent)
# DESIGN §5's order; a call only ever moves to the right.
ORDER = {state: index for index, state in enumerate(STATES)}
LEGAL = {(state, event) for state, moves in TRANSITIONS.items() for event in moves}


def test_the_table_names_every_state_and_only_known_events() -> None:
    assert tuple(TRANSITIONS) == STATES
    for moves in TRANSITIONS.values():
        assert set(moves) <= set(EVENTS)
        assert set(moves.values()) <= set(STATES)


def test_the_final_states_are_exactly_the_ones_finish_may_reach() -> None:
    assert set(get_args(ToolCallFinalState)) == FINAL
    assert set(get_args(ToolCallStep)) == set(STATES) - FINAL - {"received"}


def test_each_state_but_received_is_reached_by_exactly_one_event() -> None:
    for state in STATES:
        events = {event for moves in TRANSITIONS.values()
                  for event, after in moves.items() if after == state}  # fmt: skip
        assert events == ({EVENT_TO[state]} if state != "received" else set())


@pytest.mark.parametrize(("state", "event", "after"), sorted(
    (state, event, after) for state, moves in TRANSITIONS.items() for event, after in moves.items()
))  # fmt: skip
def test_every_legal_move_goes_forward(
    state: ToolCallState, event: ToolCallEvent, after: ToolCallState
) -> None:
    assert next_state(state, event) == after
    assert ORDER[after] > ORDER[state]


@pytest.mark.parametrize(("state", "event"), sorted(
    (state, event) for state in STATES for event in EVENTS
    if state not in FINAL and (state, event) not in LEGAL
))  # fmt: skip
def test_every_illegal_move_of_a_live_call_is_refused_with_invalid_arguments(
    state: ToolCallState, event: ToolCallEvent
) -> None:
    with pytest.raises(LineUpError) as caught:
        next_state(state, event)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENTS


@pytest.mark.parametrize(("state", "event"), sorted(
    (state, event) for state in FINAL for event in EVENTS
))  # fmt: skip
def test_every_move_of_a_final_call_is_refused_with_call_already_final(
    state: ToolCallState, event: ToolCallEvent
) -> None:
    with pytest.raises(LineUpError) as caught:
        next_state(state, event)
    assert caught.value.code is ErrorCode.CALL_ALREADY_FINAL


@pytest.mark.parametrize("state", ["received", "routing", "waiting_for_app", "running"])
def test_a_call_not_yet_submitted_can_be_cancelled_or_expired(state: ToolCallState) -> None:
    assert next_state(state, "cancel") == "cancelled"
    assert next_state(state, "expire") == "expired"


@pytest.mark.parametrize("event", ["cancel", "expire", "reject"])
def test_a_submitted_result_is_never_cancelled_expired_or_rejected(event: ToolCallEvent) -> None:
    with pytest.raises(LineUpError) as caught:
        next_state("submitted", event)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENTS


@pytest.mark.parametrize("state", ["received", "routing", "waiting_for_app"])
def test_only_a_call_the_app_ran_can_complete(state: ToolCallState) -> None:
    with pytest.raises(LineUpError) as caught:
        next_state(state, "complete")
    assert caught.value.code is ErrorCode.INVALID_ARGUMENTS


def test_naming_the_state_a_live_call_is_in_is_a_repeat_without_change() -> None:
    for state in set(STATES) - FINAL:
        assert step(state, state) == (state, False)
    assert step("routing", "running") == ("running", True)


@pytest.mark.parametrize("state", sorted(FINAL))
def test_naming_any_state_for_a_final_call_is_refused_even_its_own(state: ToolCallState) -> None:
    for to_state in STATES:
        with pytest.raises(LineUpError) as caught:
            step(state, to_state)
        assert caught.value.code is ErrorCode.CALL_ALREADY_FINAL


def test_nothing_moves_a_call_back_to_received() -> None:
    with pytest.raises(LineUpError) as caught:
        step("routing", "received")
    assert caught.value.code is ErrorCode.INVALID_ARGUMENTS


@settings(deadline=None)
@given(events=st.lists(st.sampled_from(EVENTS), max_size=40))
def test_any_run_of_events_reaches_at_most_one_final_state_and_never_leaves_it(
    events: list[ToolCallEvent],
) -> None:
    state: ToolCallState = "received"
    finals: list[ToolCallState] = []
    for event in events:
        if state in FINAL:
            with pytest.raises(LineUpError) as caught:
                next_state(state, event)
            assert caught.value.code is ErrorCode.CALL_ALREADY_FINAL
            continue
        if (state, event) not in LEGAL:
            with pytest.raises(LineUpError) as caught:
                next_state(state, event)
            assert caught.value.code is ErrorCode.INVALID_ARGUMENTS
            continue
        after = next_state(state, event)
        assert ORDER[after] > ORDER[state]
        if after in FINAL:
            finals.append(after)
        state = after
    assert len(finals) <= 1
    assert finals == ([state] if state in FINAL else [])
