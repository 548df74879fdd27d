from __future__ import annotations

from typing import Any

from lineup import wire
from lineup.ops.agent._tour import (
    CHOICE,
    MENU_ACTIONS,
    Ask,
    Dismiss,
    Move,
    Say,
    Tour,
    echo,
    markdown_text,
)

CONV = "conv-a"
TOOLS = [
    {"method": "interaction.notice"},
    {"method": "interaction.choice"},
    {"method": "interaction.confirm"},
    {"method": "interaction.input"},
    {"method": "task-dashboard.open", "handling": "launch"},
    {"method": "task-dashboard.update", "handling": "operation"},
]


def _message(kind: str, payload: dict[str, Any], **header: Any) -> dict[str, Any]:
    return {"type": kind, "conversation_id": CONV, "payload": payload, **header}


def _inventory(revision: str = "7", tools: list[dict[str, Any]] = TOOLS) -> dict[str, Any]:
    return _message(wire.INVENTORY, {"revision": revision, "tools": tools})


def _result(call_id: str, result: dict[str, Any]) -> dict[str, Any]:
    return _message(wire.RESULT, {"call_id": call_id, "result": result})


def _error(call_id: str, code: str) -> dict[str, Any]:
    return _message(wire.TOOL_ERROR, {"call_id": call_id, "code": code})


def _asks(moves: list[Move]) -> list[Ask]:
    return [m for m in moves if isinstance(m, Ask)]


def _says(moves: list[Move]) -> list[str]:
    return [m.markdown for m in moves if isinstance(m, Say)]


def _menu(tour: Tour) -> Ask:
    (menu,) = _asks(tour.take(_inventory()))
    return menu


def _choose(tour: Tour, menu: Ask, choice: str) -> list[Move]:
    return tour.take(_result(menu.call_id, {"action_ids": [choice]}))


def test_the_first_inventory_with_the_standard_interactions_asks_the_menu_once() -> None:
    tour = Tour()
    menu = _menu(tour)
    assert (menu.tool, menu.revision, menu.app_session_id) == (CHOICE, "7", None)
    assert menu.input["prompt"] == "What would you like to try?"
    assert [a["id"] for a in menu.input["actions"]] == [i for i, _, _ in MENU_ACTIONS]
    assert tour.take(_inventory("8")) == []  # a new revision asks nothing again
    assert tour.revisions[CONV] == "8"


def test_an_inventory_without_interactions_asks_nothing_and_text_is_still_echoed() -> None:
    tour = Tour()
    assert tour.take(_inventory(tools=[{"method": "drill.echo"}])) == []
    text = _message(wire.TEXT, {"markdown": "menu"}, id="u-1", sender={"kind": "user"})
    assert _says(tour.take(text)) == [echo("menu")]


def test_the_same_messages_give_the_same_moves_under_the_same_keys() -> None:
    def run() -> list[Move]:
        tour = Tour()
        menu = _menu(tour)
        (question,) = _asks(_choose(tour, menu, "confirm"))
        return [menu, question, *tour.take(_result(question.call_id, {"approved": True}))]

    assert run() == run()


def test_each_kind_is_asked_and_its_answer_said_then_the_menu_again() -> None:
    answers: dict[str, tuple[dict[str, Any], str]] = {
        "notice": ({"acknowledged": False}, "The notice was shown in the chat."),
        "choice": ({"action_ids": ["apple", "cherry"]}, "You picked **Apple**, **Cherry**."),
        "confirm": ({"approved": False}, "You answered **no**."),
    }
    for choice, (answer, said) in answers.items():
        tour = Tour()
        (question,) = _asks(_choose(tour, _menu(tour), choice))
        assert question.tool == f"interaction.{choice}"
        moves = tour.take(_result(question.call_id, answer))
        assert _says(moves) == [said]
        (again,) = _asks(moves)
        assert again.input["prompt"] == "What would you like to try?"
        assert again.call_id not in (question.call_id,)


def test_a_form_answer_is_said_as_a_table_of_escaped_text() -> None:
    tour = Tour()
    (question,) = _asks(_choose(tour, _menu(tour), "input"))
    assert [f["type"] for f in question.input["fields"]] == ["text", "number", "textarea"]
    moves = tour.take(_result(question.call_id, {"values": {"name": "*Ada* | x", "cups": 3}}))
    (said,) = _says(moves)
    assert "| Your name | \\*Ada\\* \\| x |" in said
    assert "| Cups of tea a day | 3 |" in said
    assert "| Anything else? | — |" in said


def test_a_dismissed_or_expired_menu_is_not_asked_again_until_the_user_writes_menu() -> None:
    for code in ("operation_expired", "interaction_dismissed", "cancelled_by_user", "weird"):
        tour = Tour()
        menu = _menu(tour)
        moves = tour.take(_error(menu.call_id, code))
        assert _asks(moves) == [] and len(_says(moves)) == 1
        assert tour.take(_error(menu.call_id, code)) == []  # told once
        text = _message(wire.TEXT, {"markdown": " Menu "}, id="u-9", sender={"kind": "user"})
        (again,) = _asks(tour.take(text))
        assert again.input["prompt"] == "What would you like to try?"


def test_a_question_that_ended_unanswered_says_so_and_asks_the_menu_again() -> None:
    tour = Tour()
    (question,) = _asks(_choose(tour, _menu(tour), "choice"))
    moves = tour.take(_error(question.call_id, "operation_expired"))
    assert len(_says(moves)) == 1 and len(_asks(moves)) == 1


def test_a_stale_revision_is_retried_with_the_newest_a_bounded_number_of_times() -> None:
    tour = Tour()
    call = _menu(tour)
    tour.take(_inventory("9"))
    retries = []
    while asks := _asks(tour.take(_error(call.call_id, "inventory_revision_mismatch"))):
        (call,) = asks
        retries.append(call)
    assert [r.revision for r in retries] == ["9", "9", "9"]
    assert len({r.call_id for r in retries}) == 3


def test_the_dashboard_gets_a_question_in_its_sub_session_that_moves_its_progress() -> None:
    tour = Tour()
    moves = _choose(tour, _menu(tour), "dashboard")
    (launch,) = _asks(moves)
    assert launch.tool == "task-dashboard.open"
    opened = {
        "agent_id": "agent-1",
        "conversation_id": CONV,
        "app_session_id": "lu:app_session:i-1",
        "app_scope": "task-dashboard",
        "instance_id": "i-1",
    }
    (progress,) = _asks(tour.take(_message(wire.APP_SESSION_OPENED, opened)))
    assert (progress.tool, progress.app_session_id) == (CHOICE, "lu:app_session:i-1")
    moves = tour.take(_result(progress.call_id, {"action_ids": ["p60"]}))
    update, menu = _asks(moves)
    # The answer's one-line short result goes into the sub-session (its group), keyed by it.
    (said,) = [m for m in moves if isinstance(m, Say)]
    assert (said.app_session_id, said.key) == ("lu:app_session:i-1", f"answered:{progress.call_id}")
    assert said.markdown == "Progress set to **60 %**: the dashboard shows it now."
    assert "\n" not in said.markdown
    assert update.tool == "task-dashboard.update" and update.instance_id == "i-1"
    assert update.input == {"task_id": launch.input["task_id"], "progress": 60}
    assert menu.tool == CHOICE and menu.app_session_id is None
    assert tour.take(_result(update.call_id, {"progress": 60})) == []  # said already
    closed = {**opened, "pending_interaction_call_ids": []}
    assert tour.take(_message(wire.APP_SESSION_CLOSED, closed)) == []
    assert _says(tour.take(_result(launch.call_id, {"status": "cancelled"}))) == [
        "The Task Dashboard closed: the task was **cancelled**."
    ]


def test_a_sub_session_the_tour_did_not_launch_gets_no_question() -> None:
    tour = Tour()
    _menu(tour)
    opened = {"app_session_id": "s", "app_scope": "task-dashboard", "instance_id": "i"}
    assert tour.take(_message(wire.APP_SESSION_OPENED, opened)) == []


def test_markdown_text_escapes_what_could_be_markup() -> None:
    assert markdown_text("[a](b)\n`c`") == "\\[a\\]\\(b\\) \\`c\\`"


def test_a_sub_session_closed_with_its_question_open_says_where_to_answer_it() -> None:
    tour = Tour()
    _choose(tour, _menu(tour), "dashboard")
    opened = {"app_session_id": "s", "app_scope": "task-dashboard", "instance_id": "i"}
    (progress,) = _asks(tour.take(_message(wire.APP_SESSION_OPENED, opened)))
    closed = {**opened, "pending_interaction_call_ids": [progress.call_id]}
    (said,) = _says(tour.take(_message(wire.APP_SESSION_CLOSED, closed)))
    assert "stays open" in said
    assert _says(tour.take(_message(wire.APP_SESSION_CLOSED, closed))) == [said]  # same key


def test_a_new_menu_withdraws_the_older_one_still_open_and_its_ending_says_nothing() -> None:
    tour = Tour()
    first = _menu(tour)
    text = _message(wire.TEXT, {"markdown": "menu"}, id="u-1", sender={"kind": "user"})
    withdrawn, second = tour.take(text)
    assert withdrawn == Dismiss(CONV, first.call_id)
    assert withdrawn.key == f"dismiss:{first.call_id}"
    assert isinstance(second, Ask) and second.call_id != first.call_id
    assert tour.take(_error(first.call_id, "interaction_dismissed")) == []
    (again,) = _asks(tour.take(_result(second.call_id, {"action_ids": ["confirm"]})))
    assert again.tool == "interaction.confirm"
