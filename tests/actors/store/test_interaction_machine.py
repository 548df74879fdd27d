"""The interaction machine on its own (`facts/interactions.py`): no database."""

from __future__ import annotations

from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.facts.interactions import (
    BIRTH,
    CODED,
    DECIDED,
    FINAL,
    OPEN,
    TABLE,
    TARGET,
    WAITING,
    InteractionEvent,
    InteractionState,
    move,
)

STATES: tuple[InteractionState, ...] = get_args(InteractionState)
EVENTS: tuple[InteractionEvent, ...] = get_args(InteractionEvent)
ORDER: dict[InteractionState | None, int] = {None: -1} | {s: i for i, s in enumerate(STATES)}
Source = InteractionState | None
MOVES = [(None, e, to) for e, to in BIRTH.items()] + [
    (s, e, to) for s, moves in TABLE.items() for e, to in moves.items()
]
LEGAL = {(source, event) for source, event, _ in MOVES}
ILLEGAL = [(s, e) for s in (None, *STATES) for e in EVENTS if (s, e) not in LEGAL]


def _id(value: object) -> str:
    return "none" if value is None else str(value)


def _expected(source: Source) -> ErrorCode:
    return ErrorCode.INTERACTION_FINAL if source in DECIDED else ErrorCode.INVALID_ARGUMENTS


def test_the_table_names_every_state_and_uses_every_event() -> None:
    assert tuple(TABLE) == STATES
    assert {event for _, event, _ in MOVES} == set(EVENTS) == set(TARGET)
    assert {"completed", "cancelled", "expired", "failed"} == FINAL
    assert {"pending", "presented", "submitted"} == OPEN
    assert {"pending", "presented"} == WAITING  # what an answer, a cancel, an expiry may end
    assert {"submitted", "completed", "cancelled", "expired", "failed"} == DECIDED
    assert {"cancel", "expire", "fail"} == CODED


@pytest.mark.parametrize(("source", "event", "to"), MOVES, ids=_id)
def test_every_move_goes_forward_to_its_events_one_target(
    source: Source, event: InteractionEvent, to: InteractionState
) -> None:
    assert move(source, event) == to == TARGET[event]
    assert ORDER[to] > ORDER[source]


@pytest.mark.parametrize(("source", "event"), ILLEGAL, ids=_id)
def test_every_illegal_move_raises_with_the_right_code(
    source: Source, event: InteractionEvent
) -> None:
    with pytest.raises(LineUpError) as caught:
        move(source, event)
    assert caught.value.code is _expected(source)


def test_the_contracts_moves_and_no_others() -> None:
    assert {
        (None, "ask"),
        ("pending", "present"),
        *((s, e) for s in ("pending", "presented") for e in ("answer", "cancel", "expire", "fail")),
        ("submitted", "settle"),
        ("submitted", "fail"),
    } == LEGAL


def test_an_answered_interaction_is_decided_no_cancel_or_expiry_changes_it() -> None:
    for event in ("answer", "cancel", "expire", "present"):
        with pytest.raises(LineUpError) as caught:
            move("submitted", event)
        assert caught.value.code is ErrorCode.INTERACTION_FINAL
    for state in FINAL:
        for event in EVENTS:
            with pytest.raises(LineUpError) as caught:
                move(state, event)
            assert caught.value.code is ErrorCode.INTERACTION_FINAL


@settings(deadline=None)
@given(events=st.lists(st.sampled_from(EVENTS), max_size=30))
def test_any_run_of_events_reaches_at_most_one_final_state(events: list[InteractionEvent]) -> None:
    state: Source = None
    finals = []
    for event in events:
        if (state, event) not in LEGAL:
            with pytest.raises(LineUpError) as caught:
                move(state, event)
            assert caught.value.code is _expected(state)
            continue
        state = move(state, event)
        if state in FINAL:
            finals.append(state)
    assert finals == ([state] if state in FINAL else [])
