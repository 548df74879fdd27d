"""The Whiteboard's board model: ops applied once, undo, bounds, its session data document."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lineup.facts.limits import MAX_SESSION_DATA_BYTES
from lineup.miniapps.whiteboard._board import (
    APPLIED_KEPT,
    MAX_OPS_PER_PATCH,
    MAX_POINTS,
    PALETTE,
    Board,
)


def stroke(op_id: str, points: list[int] | None = None, **extra: Any) -> dict[str, Any]:
    return {"op_id": op_id, "kind": "stroke", "points": points or [10, 10, 20, 20], **extra}


def text(op_id: str, words: str = "hi", **extra: Any) -> dict[str, Any]:
    return {"op_id": op_id, "kind": "text", "x": 5, "y": 6, "text": words, **extra}


def size(document: dict[str, Any]) -> int:
    return len(json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode())


def test_ops_become_items_named_by_their_op_id_in_order() -> None:
    board = Board("b1", "Plan")
    result = board.apply([stroke("a", colour=PALETTE[1], width=7), text("b", "note")])
    assert result.applied == ["a", "b"] and result.refused == []
    assert board.document() == {
        "board": {
            "board_id": "b1",
            "title": "Plan",
            "width": 1600,
            "height": 1000,
            "items": [
                {
                    "id": "a",
                    "kind": "stroke",
                    "mode": "pen",
                    "colour": PALETTE[1],
                    "width": 7,
                    "points": [10, 10, 20, 20],
                },
                {"id": "b", "kind": "text", "x": 5, "y": 6, "text": "note", "colour": PALETTE[0]},
            ],
        },
        "applied": ["a", "b"],
        "refused": [],
    }


def test_an_op_seen_before_is_a_no_op_even_after_a_round_trip_through_its_document() -> None:
    board = Board("b1", "Plan")
    board.apply([stroke("a")])
    again = Board.from_document(board.document())
    assert again is not None
    result = again.apply([stroke("a"), stroke("a", [1, 1])])
    assert not result.changed
    assert [i["id"] for i in again.items.values()] == ["a"]
    assert again.items["a"]["points"] == [10, 10, 20, 20]


def test_undo_removes_the_item_its_target_made_and_is_applied_once() -> None:
    board = Board("b1", "Plan")
    board.apply([stroke("a"), stroke("b")])
    result = board.apply([{"op_id": "u1", "kind": "undo", "target": "a"}])
    assert result.applied == ["u1"]
    assert list(board.items) == ["b"]
    # A re-sent stroke "a" after its undo does not come back: "a" is still remembered.
    assert not board.apply([stroke("a"), {"op_id": "u1", "kind": "undo", "target": "b"}]).changed
    assert list(board.items) == ["b"]


def test_an_undo_of_nothing_is_applied_so_the_surface_stops_sending_it() -> None:
    board = Board("b1", "Plan")
    assert board.apply([{"op_id": "u", "kind": "undo", "target": "never"}]).applied == ["u"]


@pytest.mark.parametrize(
    "op",
    [
        stroke("x", [10]),  # half a point
        stroke("x", [1601, 10]),  # off the canvas
        stroke("x", [10, -1]),
        stroke("x", [10, 10] * (MAX_POINTS + 1)),
        stroke("x", width=41),
        stroke("x", width=0),
        stroke("x", colour="#000000"),  # not a palette colour
        stroke("x", mode="spray"),
        {**stroke("x"), "points": ["1", "2"]},  # strings are not coordinates
        text("x", "t" * 501),
        text("x", ""),
        {"op_id": "x", "kind": "fill"},
        {**text("x"), "style": "bold"},
    ],
)
def test_an_op_out_of_bounds_is_refused_invalid_arguments_and_draws_nothing(
    op: dict[str, Any],
) -> None:
    board = Board("b1", "Plan")
    result = board.apply([op])
    assert result.refused == [("x", "invalid_arguments")]
    assert board.items == {}
    assert board.document()["refused"] == [{"op_id": "x", "code": "invalid_arguments"}]


def test_what_is_not_a_list_of_ops_or_has_no_op_id_is_dropped() -> None:
    board = Board("b1", "Plan")
    assert not board.apply({"ops": []}).changed
    assert not board.apply([{"kind": "stroke"}, "x", 3]).changed


def test_a_patch_is_bounded_in_ops() -> None:
    board = Board("b1", "Plan")
    result = board.apply([stroke(f"s{n}") for n in range(MAX_OPS_PER_PATCH + 5)])
    assert len(result.applied) == MAX_OPS_PER_PATCH


def test_ops_past_the_session_data_bound_are_refused_quota_exceeded() -> None:
    board = Board("b" * 100, "T" * 200)
    big = [1600, 1000] * MAX_POINTS
    refused: list[tuple[str, str]] = []
    n = 0
    while not refused:
        refused = board.apply([stroke(f"s{n}", big, width=40)]).refused
        n += 1
    assert refused == [(f"s{n - 1}", "quota_exceeded")]
    # Smaller ops fill what is left; the document stays under the store's bound even with
    # `applied` and `refused` full of the longest op ids.
    for k in range(2_000):
        board.apply([text(f"t{k}", "w" * 500)])
    assert board.apply([text("one-more", "w" * 500)]).refused == [("one-more", "quota_exceeded")]
    for k in range(APPLIED_KEPT):
        board.apply([{"op_id": f"{'u' * 58}{k:06d}", "kind": "undo", "target": "never"}])
    for k in range(40):
        board.apply([stroke(f"{'r' * 58}{k:06d}", [1])])
    document = board.document()
    assert len(document["applied"]) == APPLIED_KEPT and len(document["refused"]) == 32
    assert size(document) <= MAX_SESSION_DATA_BYTES


def test_undo_frees_room_for_more() -> None:
    board = Board("b1", "Plan")
    big = [800, 500] * MAX_POINTS
    n = 0
    while not board.apply([stroke(f"s{n}", big)]).refused:
        n += 1
    board.apply([{"op_id": "u", "kind": "undo", "target": "s0"}])
    assert board.apply([stroke("again", big)]).applied == ["again"]


def test_only_the_last_op_ids_are_kept_and_a_forgotten_op_still_draws_once() -> None:
    board = Board("b1", "Plan")
    board.apply([stroke(f"s{n}") for n in range(APPLIED_KEPT + 10)][:MAX_OPS_PER_PATCH])
    board.apply([stroke(f"s{n}") for n in range(MAX_OPS_PER_PATCH, APPLIED_KEPT + 10)])
    assert len(board.applied) == APPLIED_KEPT and board.applied[0] == "s10"
    # Its item is there: nothing is drawn twice, but it is listed so the Surface stops sending.
    assert board.apply([stroke("s0", [1, 1])]).applied == ["s0"]
    assert board.items["s0"]["points"] == [10, 10, 20, 20]
    assert len(board.items) == APPLIED_KEPT + 10


@pytest.mark.parametrize(
    "document",
    [
        None,
        {},
        {"board": "x"},
        {"board": {"board_id": "b", "title": "t", "items": "x"}},
        {
            "board": {
                "board_id": "b",
                "title": "t",
                "items": [{"id": "a", "kind": "stroke", "points": [1]}],
            }
        },
        {"board": {"board_id": "b", "title": "t", "items": []}, "applied": [1]},
        {
            "board": {
                "board_id": "b",
                "title": "t",
                "items": [{"id": "u", "kind": "undo", "target": "a"}],
            }
        },
    ],
)
def test_a_document_that_is_not_a_board_reads_as_none(document: Any) -> None:
    assert Board.from_document(document) is None


def test_the_summary_counts_pen_strokes_text_boxes_and_colours_in_palette_order() -> None:
    board = Board("b1", "Plan")
    board.apply(
        [
            stroke("a", colour=PALETTE[2]),
            stroke("b", colour=PALETTE[1]),
            stroke("c", mode="erase", colour=PALETTE[5]),
            text("d", colour=PALETTE[2]),
        ]
    )
    assert board.summary() == {
        "strokes": 2,
        "text_boxes": 1,
        "colours": [PALETTE[1], PALETTE[2]],
        "width": 1600,
        "height": 1000,
    }
