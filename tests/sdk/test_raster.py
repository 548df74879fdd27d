"""`lineup.sdk.raster`: a palette canvas whose strokes paint where they should, as a valid PNG."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lineup.sdk.raster import MAX_SIDE, SIGNATURE, Canvas
from lineup.tests.miniapps._png_decode import decode

WHITE, BLACK, RED = "#ffffff", "#1f2328", "#d1242f"


def canvas(width: int = 200, height: int = 100) -> Canvas:
    return Canvas(width, height, (BLACK, RED))


def test_an_empty_canvas_is_an_indexed_png_of_its_background() -> None:
    png = canvas().png()
    assert png.startswith(SIGNATURE)
    image = decode(png)
    assert (image.width, image.height, image.bit_depth, image.colour_type) == (200, 100, 8, 3)
    assert image.palette == [WHITE, BLACK, RED]
    assert {image.pixel(x, y) for x in (0, 100, 199) for y in (0, 50, 99)} == {WHITE}


def test_a_stroke_paints_its_width_around_its_line_with_round_ends_and_nothing_beyond() -> None:
    c = canvas()
    c.stroke([(50, 50), (150, 50)], width=10, colour=RED)
    image = decode(c.png())
    assert image.pixel(100, 50) == RED
    assert image.pixel(100, 54) == RED  # within half the width
    assert image.pixel(100, 57) == WHITE
    assert image.pixel(46, 50) == RED  # the round end
    assert image.pixel(40, 50) == WHITE
    assert image.pixel(160, 50) == WHITE


def test_a_stroke_through_several_points_joins_them() -> None:
    c = canvas()
    c.stroke([(20, 20), (100, 20), (100, 80)], width=4, colour=BLACK)
    image = decode(c.png())
    assert image.pixel(60, 20) == BLACK
    assert image.pixel(100, 50) == BLACK
    assert image.pixel(60, 50) == WHITE  # not the diagonal


def test_one_point_is_a_dot_and_no_point_paints_nothing() -> None:
    c = canvas()
    c.stroke([], width=8, colour=BLACK)
    assert decode(c.png()).rows == decode(canvas().png()).rows
    c.stroke([(30, 30)], width=8, colour=BLACK)
    image = decode(c.png())
    assert image.pixel(30, 30) == BLACK
    assert image.pixel(33, 30) == BLACK
    assert image.pixel(36, 30) == WHITE


def test_the_background_colour_erases_what_came_before() -> None:
    c = canvas()
    c.stroke([(50, 50), (150, 50)], width=10, colour=RED)
    c.stroke([(100, 30), (100, 70)], width=6, colour=WHITE)
    image = decode(c.png())
    assert image.pixel(100, 50) == WHITE
    assert image.pixel(70, 50) == RED


def test_strokes_off_the_edge_are_clipped_not_wrapped() -> None:
    c = canvas()
    c.stroke([(-50, 50), (250, 50)], width=20, colour=RED)
    c.stroke([(199, -10), (199, 110)], width=20, colour=BLACK)
    image = decode(c.png())
    assert image.pixel(0, 50) == RED
    assert image.pixel(199, 0) == BLACK
    assert image.pixel(0, 0) == WHITE  # nothing wrapped round to the next row


def test_a_row_that_rounding_leaves_empty_at_a_capsule_s_edge_is_skipped() -> None:
    # Thirds do not add up exactly: the capsule's top row had no interval at all (an overflow).
    c = Canvas(1600, 1000, (BLACK,))
    c.capsule((194.0, 237.33333333333334), (1314.0, 553.0), 3.3333333333333335, BLACK)
    assert decode(c.png()).pixel(700, 380) == BLACK


def test_the_same_strokes_give_the_same_bytes() -> None:
    pngs = []
    for _ in range(2):
        c = canvas()
        c.stroke([(10, 10), (60, 90), (190, 5)], width=7, colour=RED)
        pngs.append(c.png())
    assert pngs[0] == pngs[1]


@pytest.mark.parametrize(
    ("width", "height", "palette", "background"),
    [
        (0, 10, (BLACK,), WHITE),
        (10, MAX_SIDE + 1, (BLACK,), WHITE),
        (10, 10, ("black",), WHITE),
        (10, 10, (BLACK,), "#FFFFFF"),
        (10, 10, tuple(f"#0000{i:02x}" for i in range(256)), WHITE),
    ],
)
def test_a_canvas_out_of_bounds_or_with_a_bad_colour_is_refused(
    width: int, height: int, palette: tuple[str, ...], background: str
) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 (the only error it raises)
        Canvas(width, height, palette, background=background)


def test_a_colour_not_in_the_palette_is_refused_and_paints_nothing() -> None:
    c = canvas()
    with pytest.raises(ValueError):  # noqa: PT011
        c.stroke([(10, 10), (20, 20)], width=4, colour="#0969da")
    assert decode(c.png()).rows == decode(canvas().png()).rows
    assert c.index(WHITE) == 0 and c.index(RED) == 2


coordinate = st.floats(min_value=-100, max_value=300, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(
    points=st.lists(st.tuples(coordinate, coordinate), min_size=1, max_size=12),
    width=st.floats(min_value=0, max_value=40, allow_nan=False),
)
def test_any_stroke_paints_only_palette_colours_into_a_valid_png(
    points: list[tuple[float, float]], width: float
) -> None:
    c = Canvas(120, 80, (BLACK,))
    c.stroke(points, width, BLACK)
    image = decode(c.png())  # checks the chunks' CRCs and every row's length
    assert (image.width, image.height) == (120, 80)
    assert {b for row in image.rows for b in row} <= {0, 1}
