"""The tool call machine on its own (`facts/tool_calls.py`): no database."""

from __future__ import annotations

from collections.abc import Iterator
from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.facts.tool_calls import (
    BIRTH,
    CODED,
    DECIDED,
    ENDINGS,
    FINAL,
    ROWS,
    TABLE,
    TARGET,
    Move,
    Row,
    ToolCallEvent,
    ToolCallState,
    move,
)

STATES: tuple[ToolCallState, ...] = get_args(ToolCallState)
EVENTS: tuple[ToolCallEvent, ...] = get_args(ToolCallEvent)
RECEIPTS: tuple[Row, ...] = tuple(row for row in get_args(Row) if row != "terminal")
# DESIGN §5's order; a call only ever moves to the right. Not existing comes before everything.
ORDER: dict[ToolCallState | None, int] = {None: -1} | {s: i for i, s in enumerate(STATES)}

Source = ToolCallState | None
# Every move the machine has: (where from, None for a birth; by which event; the move).
MOVES: list[tuple[Source, ToolCallEvent, Move]] = [
    (None, event, found) for event, found in BIRTH.items()
] + [(state, event, found) for state, moves in TABLE.items() for event, found in moves.items()]
LEGAL = {(source, event) for source, event, _ in MOVES}
ILLEGAL = [
    (source, event)
    for source in (None, *STATES)
    for event in EVENTS
    if (source, event) not in LEGAL
]


def _id(value: object) -> str:
    return "none" if value is None else str(value)


# ---------------------------------------------------------------------------------- the table


def test_the_table_names_every_state_and_only_known_events() -> None:
    assert tuple(TABLE) == STATES
    for _, event, found in MOVES:
        assert event in EVENTS
        assert found.to in STATES
    assert set(ROWS) == set(TARGET) == set(EVENTS)
    assert {event for _, event, _ in MOVES} == set(EVENTS)  # no event the table never uses


def test_final_states_are_the_five_endings_and_have_no_moves() -> None:
    assert {"completed", "failed", "cancelled", "expired", "rejected"} == FINAL
    assert {"submitted", "completed", "failed", "cancelled", "expired", "rejected"} == DECIDED
    for state in STATES:
        assert (TABLE[state] == {}) == (state in FINAL), state


@pytest.mark.parametrize(("source", "event", "found"), MOVES, ids=_id)
def test_every_move_goes_forward_in_design_order(
    source: Source, event: ToolCallEvent, found: Move
) -> None:
    assert ORDER[found.to] > ORDER[source]


@pytest.mark.parametrize(("source", "event", "found"), MOVES, ids=_id)
def test_every_event_leads_to_its_one_target_from_wherever_it_is_legal(
    source: Source, event: ToolCallEvent, found: Move
) -> None:
    assert found.to == TARGET[event]


@pytest.mark.parametrize(("source", "event"), ILLEGAL, ids=_id)
def test_every_illegal_move_is_refused_with_the_right_code(
    source: Source, event: ToolCallEvent
) -> None:
    with pytest.raises(LineUpError) as caught:
        move(source, event)
    expected = ErrorCode.CALL_ALREADY_FINAL if source in DECIDED else ErrorCode.INVALID_ARGUMENTS
    assert caught.value.code is expected


def test_the_illegal_moves_cover_every_decided_state_and_the_unborn_call() -> None:
    assert {(state, event) for state in FINAL for event in EVENTS} <= set(ILLEGAL)
    assert {("submitted", e) for e in EVENTS} - set(ILLEGAL) == {
        ("submitted", "settle"),
        ("submitted", "settle_refused"),
    }
    assert {e for s, e in ILLEGAL if s is None} == set(EVENTS) - set(BIRTH)


@pytest.mark.parametrize("state", ["received", "routing", "waiting_for_app", "running"])
def test_a_call_not_yet_submitted_can_fail_be_cancelled_closed_or_expire(
    state: ToolCallState,
) -> None:
    endings: dict[ToolCallEvent, ToolCallState] = {
        "fail": "failed", "cancel": "cancelled", "close": "cancelled", "expire": "expired",
    }  # fmt: skip
    for event, after in endings.items():
        assert move(state, event).to == after


def test_only_a_call_no_app_has_yet_can_be_rejected() -> None:
    assert {state for state in STATES if "reject" in TABLE[state]} == {"received", "routing"}


def test_only_the_appservers_word_moves_a_submitted_result() -> None:
    assert set(TABLE["submitted"]) == {"settle", "settle_refused"}
    assert (move("submitted", "settle").to, move("submitted", "settle_refused").to) == (
        "completed",
        "failed",
    )
    assert {state for state in STATES if "submit" in TABLE[state]} == {"running"}


def test_the_coded_events_are_exactly_the_ones_that_end_a_call_before_its_outcome() -> None:
    assert ENDINGS <= CODED
    for event in EVENTS:
        if event in ("settle", "settle_refused"):
            continue  # the AppServer's word: its code comes from the outbox fail
        assert (event in CODED) == (TARGET[event] in FINAL - {"completed"}), event


# ---------------------------------------------------------------------------------- the rows


def test_the_terminal_row_is_written_by_exactly_the_events_that_decide_a_call() -> None:
    for event in EVENTS:
        rows = ROWS[event]
        assert len(set(rows)) == len(rows), event  # each row once
        assert rows.count("terminal") <= 1
        assert "terminal" not in rows[:-1], event  # receipts come first, the terminal row last
        deciding = TARGET[event] in DECIDED and event not in ("settle", "settle_refused")
        assert ("terminal" in rows) == deciding, event


def paths(source: Source = None, rows: tuple[Row, ...] = ()) -> Iterator[tuple[Source, list[Row]]]:
    """Every way through the machine from no call at all (forward only, so finite), with the
    rows written on the way: each row once, as the store writes it (`ROWS[event]`, whatever
    the source; a receipt already written is not written again)."""
    yield source, list(rows)
    moves = BIRTH if source is None else TABLE[source]
    for event, found in moves.items():
        fresh = tuple(row for row in ROWS[event] if row == "terminal" or row not in rows)
        yield from paths(found.to, rows + fresh)


def test_the_rows_of_an_event_are_the_same_from_every_source() -> None:
    # The store writes `ROWS[event]` whatever the call's state: so one table of rows must be
    # right from every state the event is legal in. Along every path through the machine:
    everything = list(paths())
    assert len(everything) > 100
    for end, rows in everything:
        assert rows.count("terminal") == (1 if end in DECIDED else 0), (end, rows)
        assert set(rows) - {"terminal"} <= set(RECEIPTS)
        if rows == ["terminal"]:
            assert end == "rejected"  # only a refused call has no `accepted` receipt
        elif end is not None:
            assert rows[0] == "accepted", rows
        # An activation ends once. (The table does not know whether a routing call got there
        # by `activate` or by `hold`; the router sends a launch's events for launches only.)
        ends = [row for row in rows if row.startswith("activation_")]
        assert len(ends) <= 1, rows
        if "starting" in rows and ends:
            assert rows.index("starting") < rows.index(ends[0])


# ---------------------------------------------------------------------------------- effects


@pytest.mark.parametrize(("source", "event"), [(s, e) for s, e, _ in MOVES], ids=_id)
def test_the_effects_of_every_move(source: Source, event: ToolCallEvent) -> None:
    made = move(source, event)  # what the router acts on, checked against the rules below
    effects = made.effects
    assert len(set(effects)) == len(effects)
    # The app is told of a call exactly when it moves into waiting_for_app.
    assert ("tell_app" in effects) == (made.to == "waiting_for_app")
    # The deadline starts with the call: exactly on a birth of a call that lives on.
    assert ("arm_deadline" in effects) == (source is None and made.to not in FINAL)
    # The app is told to stop only when it may be working on the call and the runtime ends it.
    assert ("tell_app_stop" in effects) == (
        event in ("close", "expire") and source in ("waiting_for_app", "running")
    )
    # Held calls are released once their instance is ready.
    assert ("release_held" in effects) == ((source, event) == ("routing", "activated"))


# ---------------------------------------------------------------------------------- walks


@settings(deadline=None)
@given(events=st.lists(st.sampled_from(EVENTS), max_size=40))
def test_any_run_of_events_moves_forward_and_reaches_at_most_one_final_state(
    events: list[ToolCallEvent],
) -> None:
    state: Source = None
    finals: list[ToolCallState] = []
    for event in events:
        if (state, event) not in LEGAL:
            with pytest.raises(LineUpError) as caught:
                move(state, event)
            expected = (
                ErrorCode.CALL_ALREADY_FINAL if state in DECIDED else ErrorCode.INVALID_ARGUMENTS
            )
            assert caught.value.code is expected
            continue
        after = move(state, event).to
        assert ORDER[after] > ORDER[state]
        assert after == TARGET[event]
        if after in FINAL:
            finals.append(after)
        state = after
    assert len(finals) <= 1
    assert finals == ([state] if state in FINAL else [])


# ---------------------------------------------------------------------------------- interactive


def test_an_interactive_call_is_born_asked_running_with_its_receipt_and_its_deadline() -> None:
    # The runtime itself runs it: no app is told, no app takes it.
    assert move(None, "ask") == Move("running", ("arm_deadline",))
    assert ROWS["ask"] == ("accepted",)
    for state in STATES:
        with pytest.raises(LineUpError):
            move(state, "ask")  # only a birth: a recorded call is never asked again
    assert {"submit", "fail", "cancel", "expire"} <= set(TABLE["running"])
