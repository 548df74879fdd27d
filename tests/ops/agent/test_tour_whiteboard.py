"""The demo Agent's tour ends, where the runtime offers it, with a Whiteboard to draw on."""

from __future__ import annotations

from lineup.ops.agent._tour import CHOICE, Tour

from .test_tour import TOOLS, _asks, _choose, _error, _inventory, _result, _says

WITH_WHITEBOARD = [*TOOLS, {"method": "whiteboard.open", "handling": "launch"}]


def _dashboard_launched(tour: Tour) -> str:
    (menu,) = _asks(tour.take(_inventory(tools=WITH_WHITEBOARD)))
    (launch,) = _asks(_choose(tour, menu, "dashboard"))
    return launch.call_id


def test_after_the_dashboard_closes_the_agent_opens_a_whiteboard_and_says_how_to_submit() -> None:
    tour = Tour()
    launch = _dashboard_launched(tour)
    moves = tour.take(_result(launch, {"status": "completed"}))
    closed, how = _says(moves)
    assert closed == "The Task Dashboard closed: the task was **completed**."
    assert "**Submit**" in how
    (board,) = _asks(moves)
    assert board.tool == "whiteboard.open" and board.input["title"] == "Try the Whiteboard"
    assert tour.take(_result(launch, {"status": "completed"})) == []  # answered once
    # Its result: the Agent thanks for the picture and offers the menu again.
    png = {"artifact_id": "art_1", "name": "Try the Whiteboard - submitted.png"}
    done = {"status": "completed", "artifact_id": "art_1", "artifacts": [png]}
    moves = tour.take(_result(board.call_id, done))
    assert _says(moves) == [
        "Thank you for the board: I have it as a picture, "
        "**Try the Whiteboard \\- submitted\\.png**."
    ]
    (menu,) = _asks(moves)
    assert menu.tool == CHOICE


def test_the_same_dashboard_result_opens_the_same_board_under_the_same_key() -> None:
    first, second = Tour(), Tour()
    launches = [_dashboard_launched(t) for t in (first, second)]
    moves = [
        t.take(_result(c, {"status": "cancelled"}))
        for t, c in zip((first, second), launches, strict=True)
    ]
    assert moves[0] == moves[1]


def test_a_whiteboard_that_ends_unsubmitted_is_said_so() -> None:
    tour = Tour()
    launch = _dashboard_launched(tour)
    (board,) = _asks(tour.take(_result(launch, {"status": "completed"})))
    assert _says(tour.take(_error(board.call_id, "app_closed"))) == [
        "The Whiteboard ended. The app was closed.\n\n*Details: `app_closed`*"
    ]


def test_without_a_whiteboard_the_tour_ends_with_the_dashboard() -> None:
    tour = Tour()
    (menu,) = _asks(tour.take(_inventory()))
    (launch,) = _asks(_choose(tour, menu, "dashboard"))
    assert _asks(tour.take(_result(launch.call_id, {"status": "completed"}))) == []
