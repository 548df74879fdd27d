"""The instance lifecycle on its own (`facts/instances.py`): no database."""

from __future__ import annotations

from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store.messages import InstanceState
from lineup.facts.instances import (
    BIRTH_STATES,
    EVENT_TO,
    FINAL,
    TABLE,
    TRANSITIONS,
    InstanceEvent,
    effects_of,
    next_state,
    step,
)

STATES: tuple[InstanceState, ...] = get_args(InstanceState)
EVENTS: tuple[InstanceEvent, ...] = get_args(InstanceEvent)
LEGAL = {(state, event) for state, moves in TRANSITIONS.items() for event in moves}
LIVE: set[InstanceState] = {"starting", "foreground", "background", "suspended"}


def test_the_table_names_every_state_and_only_known_events() -> None:
    assert tuple(TRANSITIONS) == STATES
    for moves in TRANSITIONS.values():
        assert set(moves) <= set(EVENTS)
        assert set(moves.values()) <= set(STATES)
    assert {"stopped", "failed"} == FINAL
    assert BIRTH_STATES == LIVE


@pytest.mark.parametrize(("state", "to_state"), [
    ("starting", "foreground"), ("starting", "background"), ("starting", "suspended"),
    ("foreground", "background"), ("background", "foreground"), ("foreground", "suspended"),
    ("suspended", "foreground"), ("suspended", "background"), ("background", "stopping"),
    ("stopping", "stopped"), ("stopping", "failed"), ("foreground", "failed"),
    ("starting", "failed"), ("starting", "stopping"),
])  # fmt: skip
def test_the_legal_moves_of_an_instance(state: InstanceState, to_state: InstanceState) -> None:
    assert step(state, to_state) == (to_state, True)


@pytest.mark.parametrize(("state", "to_state"), sorted(
    (state, to_state) for state in STATES for to_state in STATES
    if state != to_state and (state, EVENT_TO.get(to_state)) not in LEGAL
))  # fmt: skip
def test_every_illegal_move_is_refused_with_lifecycle_denied(
    state: InstanceState, to_state: InstanceState
) -> None:
    with pytest.raises(LineUpError) as caught:
        step(state, to_state)
    assert caught.value.code is ErrorCode.LIFECYCLE_DENIED


def test_a_live_instance_stops_only_through_stopping() -> None:
    for state in LIVE:
        with pytest.raises(LineUpError) as caught:
            step(state, "stopped")
        assert caught.value.code is ErrorCode.LIFECYCLE_DENIED


@pytest.mark.parametrize("state", ["starting", "stopping"])
def test_recovery_brings_an_instance_caught_half_way_back_suspended(state: InstanceState) -> None:
    assert next_state(state, "recover") == "suspended"


@pytest.mark.parametrize("state", ["foreground", "background", "suspended", "stopped", "failed"])
def test_recovery_does_not_apply_to_a_settled_instance(state: InstanceState) -> None:
    with pytest.raises(LineUpError) as caught:
        next_state(state, "recover")
    assert caught.value.code is ErrorCode.LIFECYCLE_DENIED


def test_a_stopping_instance_cannot_be_asked_back_to_suspended_only_recovered() -> None:
    with pytest.raises(LineUpError) as caught:
        step("stopping", "suspended")
    assert caught.value.code is ErrorCode.LIFECYCLE_DENIED


def test_naming_the_state_an_instance_is_in_is_a_repeat_without_change() -> None:
    for state in STATES:
        assert step(state, state) == (state, False)


@settings(deadline=None)
@given(events=st.lists(st.sampled_from(EVENTS), max_size=40))
def test_any_run_of_events_never_leaves_a_final_state(events: list[InstanceEvent]) -> None:
    state: InstanceState = "starting"
    for event in events:
        if (state, event) not in LEGAL:
            with pytest.raises(LineUpError) as caught:
                next_state(state, event)
            assert caught.value.code is ErrorCode.LIFECYCLE_DENIED
            continue
        assert state not in FINAL
        state = next_state(state, event)
        assert state in STATES


# ---------------------------------------------------------------------------------- effects

UP = {"foreground", "background"}


@pytest.mark.parametrize(("state", "event"), sorted(LEGAL))
def test_each_move_announces_exactly_what_the_router_and_the_shell_need(
    state: InstanceState, event: InstanceEvent
) -> None:
    after = TABLE[state][event].to
    effects = set(effects_of(state, after))
    assert ("announce_ready" in effects) == (state in ("starting", "suspended") and after in UP)
    assert ("refresh_view" in effects) == (state == "suspended" and after in UP)
    assert ("announce_ended" in effects) == (after == "stopped")
    assert ("announce_failed" in effects) == (after == "failed")
    assert "announce_started" not in effects


def test_only_a_birth_announces_a_start_and_a_repeat_does_nothing() -> None:
    assert effects_of(None, "starting") == ("announce_started",)
    for state in STATES:
        assert effects_of(state, state) == ()


def test_an_end_is_announced_however_focus_reached_it() -> None:
    # Focus keeps no `stopping` in memory: the store has the instance `stopping` first.
    assert effects_of("foreground", "stopped") == ("announce_ended",)
    assert effects_of("background", "failed") == ("announce_failed",)


@pytest.mark.parametrize(
    ("before", "after"),
    [("foreground", "starting"), ("stopped", "foreground"), ("failed", "stopped")],
)
def test_effects_of_a_move_the_table_lacks_are_refused(
    before: InstanceState, after: InstanceState
) -> None:
    with pytest.raises(LineUpError) as refused:
        effects_of(before, after)
    assert refused.value.code is ErrorCode.LIFECYCLE_DENIED


def test_the_transitions_are_the_table_without_its_effects() -> None:
    assert {
        state: {event: found.to for event, found in moves.items()} for state, moves in TABLE.items()
    } == TRANSITIONS
