"""The outbox state machine on its own (`facts/outbox.py`): no database."""

from __future__ import annotations

from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store.messages import OutboxState
from lineup.facts.outbox import TRANSITIONS, OutboxEvent, next_state

STATES: tuple[OutboxState, ...] = get_args(OutboxState)
EVENTS: tuple[OutboxEvent, ...] = get_args(OutboxEvent)


def test_the_table_names_every_state_and_only_known_events() -> None:
    assert set(TRANSITIONS) == set(STATES)
    for moves in TRANSITIONS.values():
        assert set(moves) <= set(EVENTS)
        assert set(moves.values()) <= set(STATES)


@pytest.mark.parametrize(("state", "event", "after"), [
    ("pending", "ack", "sent"), ("pending", "fail", "failed"), ("failed", "retry", "pending"),
    ("failed", "ack", "sent"),
])  # fmt: skip
def test_the_legal_changes_of_an_outbox_row(
    state: OutboxState, event: OutboxEvent, after: OutboxState
) -> None:
    assert next_state(state, event) == after


@pytest.mark.parametrize(("state", "event"), [
    ("pending", "retry"), ("failed", "fail"), ("sent", "ack"),
])  # fmt: skip
def test_repeating_the_event_that_led_to_a_state_changes_nothing(
    state: OutboxState, event: OutboxEvent
) -> None:
    assert next_state(state, event) == state


@pytest.mark.parametrize("event", ["fail", "retry"])
def test_a_sent_row_can_be_neither_failed_nor_retried(event: OutboxEvent) -> None:
    with pytest.raises(LineUpError) as caught:
        next_state("sent", event)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENTS


@settings(deadline=None)
@given(events=st.lists(st.sampled_from(EVENTS), max_size=30))
def test_any_run_of_events_stays_in_known_states_and_sent_is_final(
    events: list[OutboxEvent],
) -> None:
    state: OutboxState = "pending"
    for event in events:
        if state == "sent" and event != "ack":
            with pytest.raises(LineUpError) as caught:
                next_state(state, event)
            assert caught.value.code is ErrorCode.INVALID_ARGUMENTS
            continue
        after = next_state(state, event)  # anything else is legal
        assert after in STATES
        assert state != "sent" or after == "sent"
        assert (after == "sent") == (event == "ack")
        state = after
