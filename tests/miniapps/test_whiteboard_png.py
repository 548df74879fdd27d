"""The Whiteboard's PNG: a valid indexed PNG of the canvas, strokes, erasing and text boxes."""

from __future__ import annotations

from typing import Any

from lineup.miniapps.whiteboard._board import HEIGHT, PALETTE, WIDTH
from lineup.miniapps.whiteboard._png import SIGNATURE, render_png

from ._png_decode import decode

WHITE = "#ffffff"
BLACK, RED, BLUE = PALETTE[0], PALETTE[1], PALETTE[2]


def stroke(
    points: list[int], *, colour: str = RED, width: int = 10, mode: str = "pen"
) -> dict[str, Any]:
    return {
        "id": f"s{len(points)}",
        "kind": "stroke",
        "mode": mode,
        "colour": colour,
        "width": width,
        "points": points,
    }


def test_an_empty_board_is_a_white_canvas_of_the_board_s_size() -> None:
    png = render_png([])
    assert png.startswith(SIGNATURE)
    image = decode(png)
    assert (image.width, image.height, image.bit_depth, image.colour_type) == (WIDTH, HEIGHT, 8, 3)
    assert image.palette == [WHITE, *PALETTE]
    assert {image.pixel(x, y) for x, y in [(0, 0), (800, 500), (WIDTH - 1, HEIGHT - 1)]} == {WHITE}


def test_a_stroke_paints_its_width_around_its_line_and_nothing_beyond() -> None:
    image = decode(render_png([stroke([100, 100, 300, 100], width=10)]))
    assert image.pixel(200, 100) == RED
    assert image.pixel(200, 104) == RED  # within half the width
    assert image.pixel(200, 107) == WHITE
    assert image.pixel(96, 100) == RED  # a round end
    assert image.pixel(90, 100) == WHITE
    assert image.pixel(310, 100) == WHITE


def test_a_diagonal_stroke_is_thick_across_its_direction() -> None:
    image = decode(render_png([stroke([0, 0, 400, 400], width=20, colour=BLUE)]))
    assert image.pixel(200, 200) == BLUE
    assert image.pixel(207, 193) == BLUE  # ~9.9 px off the line
    assert image.pixel(210, 190) == WHITE  # ~14 px off


def test_a_one_point_stroke_is_a_dot() -> None:
    image = decode(render_png([stroke([50, 60], width=8, colour=BLACK)]))
    assert image.pixel(50, 60) == BLACK
    assert image.pixel(53, 60) == BLACK
    assert image.pixel(56, 60) == WHITE


def test_an_eraser_stroke_paints_the_background_over_what_came_before() -> None:
    image = decode(
        render_png(
            [
                stroke([100, 100, 300, 100], width=10),
                stroke([200, 80, 200, 120], width=6, mode="erase"),
            ]
        )
    )
    assert image.pixel(200, 100) == WHITE
    assert image.pixel(150, 100) == RED


def test_a_text_box_is_an_outlined_box_at_its_place() -> None:
    text = {"id": "t", "kind": "text", "x": 100, "y": 200, "text": "hello", "colour": BLUE}
    image = decode(render_png([text]))
    assert image.pixel(100, 200) == BLUE  # its corner
    assert image.pixel(120, 200) == BLUE  # its top edge
    assert image.pixel(100, 215) == BLUE  # its left edge
    assert image.pixel(99 - 3, 215) == WHITE


def test_strokes_off_the_edge_are_clipped_not_wrapped() -> None:
    image = decode(
        render_png(
            [stroke([0, 500, WIDTH, 500], width=40), stroke([WIDTH, 0, WIDTH, HEIGHT], width=40)]
        )
    )
    assert image.pixel(0, 500) == RED
    assert image.pixel(WIDTH - 1, 0) == RED
    assert image.pixel(0, 0) == WHITE  # nothing wrapped round to the next row


def test_half_scale_halves_the_canvas() -> None:
    image = decode(render_png([stroke([100, 100, 300, 100], width=10)], scale=2))
    assert (image.width, image.height) == (WIDTH // 2, HEIGHT // 2)
    assert image.pixel(100, 50) == RED
