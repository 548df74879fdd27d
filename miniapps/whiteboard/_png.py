"""The board as a PNG, in pure Python (zlib and struct): what `whiteboard.submit` hands over.

An 8-bit indexed image (colour type 3): index 0 is the white background, then the board's
fixed palette, so a pixel is one byte and a drawing compresses to little. Items paint in
order: a stroke is a chain of capsules (each segment with round ends, `width` across), an
eraser stroke the same in the background colour, a text box an outlined box with one bar per
line of its text (no font is shipped; the JSON artifact carries the words). Each row of a
capsule is one interval, so a segment costs one slice assignment per row it covers.
`scale` divides the canvas (2: half the size in each direction). The canvas, its capsules
and the PNG's chunks are the SDK's (`lineup.sdk.raster`): this module only says what to paint.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from lineup.sdk.raster import SIGNATURE, Canvas

from ._board import BACKGROUND, HEIGHT, PALETTE, WIDTH

__all__ = ["SIGNATURE", "render_png"]

TEXT_CHAR_W: Final = 9  # px per character of a text box's bars, at scale 1
TEXT_LINE_H: Final = 22
TEXT_PAD: Final = 8
TEXT_WRAP: Final = 60  # characters per line


def render_png(items: Iterable[Mapping[str, Any]], *, scale: int = 1) -> bytes:
    """The items (a board's `items`, as `_board` makes them) drawn on the canvas, as PNG."""
    canvas = Canvas(WIDTH // scale, HEIGHT // scale, PALETTE, background=BACKGROUND)
    for item in items:
        colour = BACKGROUND if item.get("mode") == "erase" else item["colour"]
        if item["kind"] == "stroke":
            points = item["points"]
            xy = [(points[i] / scale, points[i + 1] / scale) for i in range(0, len(points), 2)]
            canvas.stroke(xy, item["width"] / scale, colour)
        else:
            _text_box(canvas, item, scale, colour)
    return canvas.png()


def _text_box(canvas: Canvas, item: Mapping[str, Any], scale: int, colour: str) -> None:
    text: str = item["text"]
    lines = [text[i : i + TEXT_WRAP] for i in range(0, len(text), TEXT_WRAP)] or [""]
    longest = max(len(line) for line in lines)
    x0, y0 = item["x"] / scale, item["y"] / scale
    w = (longest * TEXT_CHAR_W + 2 * TEXT_PAD) / scale
    h = (len(lines) * TEXT_LINE_H + TEXT_PAD) / scale
    x1, y1 = x0 + w, y0 + h
    edge = max(0.5, 1 / scale)
    box = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    for i in range(4):
        canvas.capsule(box[i], box[(i + 1) % 4], edge, colour)
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        y = y0 + (TEXT_PAD + n * TEXT_LINE_H + TEXT_LINE_H / 2) / scale
        start = x0 + TEXT_PAD / scale
        canvas.capsule((start, y), (start + len(line) * TEXT_CHAR_W / scale, y), 2 / scale, colour)
