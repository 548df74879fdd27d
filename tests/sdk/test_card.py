"""`lineup.sdk.card`: the view of the Shell's generic card, as focus takes it from any app."""

from __future__ import annotations

import math

import pytest

from lineup.actors.focus._views import ViewBook
from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.sdk import card


def test_a_card_is_its_title_text_and_fields_in_order_without_progress_unless_given() -> None:
    assert card(title="Hi", text="Body", fields={"b": "2", "a": "1"}) == {
        "kind": "card",
        "title": "Hi",
        "text": "Body",
        "fields": [{"label": "b", "value": "2"}, {"label": "a", "value": "1"}],
    }
    assert card(title="Hi") == {"kind": "card", "title": "Hi", "text": "", "fields": []}


@pytest.mark.parametrize("progress", [0, 0.0, 0.25, 1])
def test_a_progress_within_0_and_1_is_kept_as_a_float(progress: float) -> None:
    view = card(title="Hi", progress=progress)
    assert view["progress"] == progress
    assert isinstance(view["progress"], float)


@pytest.mark.parametrize("progress", [-0.01, 1.01, 100, math.nan, math.inf])
def test_a_progress_outside_0_and_1_is_refused_invalid_arguments(progress: float) -> None:
    with pytest.raises(LineUpError) as refused:
        card(title="Hi", progress=progress)
    assert refused.value.code is ErrorCode.INVALID_ARGUMENTS


def test_focus_takes_a_card_from_a_development_or_installed_app() -> None:
    book = ViewBook(frozenset({"chat"}))  # "hello" is none of the catalogue's own apps
    book.set_view("hello", "hello:1", card(title="Hi", fields={"Name": "Ada"}, progress=0.5))
    shown = book.view("hello:1")
    assert shown is not None
    assert shown.view["kind"] == "card"


def test_a_cards_actions_are_its_buttons_in_order_and_absent_unless_given() -> None:
    view = card(title="T", actions={"interrupt": "Interrupt", "snooze.5": "Snooze 5 min"})
    assert view["actions"] == [
        {"id": "interrupt", "label": "Interrupt"},
        {"id": "snooze.5", "label": "Snooze 5 min"},
    ]
    assert "actions" not in card(title="T") and "actions" not in card(title="T", actions={})


@pytest.mark.parametrize(
    "actions",
    [
        {f"a{i}": "A" for i in range(5)},  # more than MAX_CARD_ACTIONS
        {"Interrupt": "Interrupt"},  # an id is a short machine word
        {"stop now": "Stop"},
        {"stop": ""},
        {"stop": "   "},
        {"stop": "x" * 41},
    ],
)
def test_a_card_action_out_of_bounds_is_refused_invalid_arguments(actions: dict[str, str]) -> None:
    with pytest.raises(LineUpError) as refused:
        card(title="T", actions=actions)
    assert refused.value.code is ErrorCode.INVALID_ARGUMENTS


def test_a_countdown_is_the_shells_to_redraw_from_its_start_and_end() -> None:
    view = card(title="Focus", countdown=(100.0, 1600.0))
    assert view["countdown"] == {"started_at": 100.0, "ends_at": 1600.0}
    assert "countdown" not in card(title="Focus")


@pytest.mark.parametrize("countdown", [(5.0, 5.0), (6.0, 5.0), (math.nan, 5.0), (0.0, math.inf)])
def test_a_countdown_that_does_not_end_after_it_starts_is_refused(
    countdown: tuple[float, float],
) -> None:
    with pytest.raises(LineUpError) as refused:
        card(title="T", countdown=countdown)
    assert refused.value.code is ErrorCode.INVALID_ARGUMENTS
