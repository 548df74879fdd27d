"""The board as a PNG, in pure Python (zlib and struct): what `whiteboard.submit` hands over.

An 8-bit indexed image (colour type 3): index 0 is the white background, then the board's
fixed palette, so a pixel is one byte and a drawing compresses to little. Items paint in
order: a stroke is a chain of capsules (each segment with round ends, `width` across), an
eraser stroke the same in the background colour, a text box an outlined box with one bar per
line of its text (no font is shipped; the JSON artifact carries the words). Each row of a
capsule is one interval, so a segment costs one slice assignment per row it covers.
`scale` divides the canvas (2: half the size in each direction).
"""

from __future__ import annotations

import itertools
import math
import struct
import zlib
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ._board import BACKGROUND, HEIGHT, PALETTE, WIDTH

__all__ = ["SIGNATURE", "render_png"]

SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"
TEXT_CHAR_W: Final = 9  # px per character of a text box's bars, at scale 1
TEXT_LINE_H: Final = 22
TEXT_PAD: Final = 8
TEXT_WRAP: Final = 60  # characters per line
Point = tuple[float, float]
_INDEX: Final = {colour: i + 1 for i, colour in enumerate(PALETTE)}


def render_png(items: Iterable[Mapping[str, Any]], *, scale: int = 1) -> bytes:
    """The items (a board's `items`, as `_board` makes them) drawn on the canvas, as PNG."""
    canvas = _Canvas(WIDTH // scale, HEIGHT // scale)
    for item in items:
        colour = 0 if item.get("mode") == "erase" else _INDEX[item["colour"]]
        if item["kind"] == "stroke":
            points = item["points"]
            r = max(0.5, item["width"] / 2 / scale)
            xy = _thinned(
                [(points[i] / scale, points[i + 1] / scale) for i in range(0, len(points), 2)], r
            )
            if len(xy) == 1:
                canvas.capsule(xy[0], xy[0], r, colour)
            for a, b in itertools.pairwise(xy):
                canvas.capsule(a, b, r, colour)
        else:
            _text_box(canvas, item, scale, colour)
    return canvas.png()


def _thinned(xy: list[Point], r: float) -> list[Point]:
    """The points with those nearer than r/3 to the last one kept left out (the last always
    kept): a thick line through them strays under r/3 from the drawn one, at a fraction of the
    rows to paint (a pointer reports a point every few pixels)."""
    near = max(1.0, r / 3) ** 2
    kept = xy[:1]
    for x, y in xy[1:-1]:
        kx, ky = kept[-1]
        if (x - kx) ** 2 + (y - ky) ** 2 >= near:
            kept.append((x, y))
    if len(xy) > 1:
        kept.append(xy[-1])
    return kept


def _text_box(canvas: _Canvas, item: Mapping[str, Any], scale: int, colour: int) -> None:
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


class _Canvas:
    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.pixels = bytearray(width * height)  # all index 0: the background
        self._fills = [bytes([i]) * width for i in range(len(PALETTE) + 1)]

    def capsule(self, a: Point, b: Point, r: float, colour: int) -> None:
        """Paint every pixel centre within `r` of the segment a–b."""
        (ax, ay), (bx, by) = a, b
        dx, dy = bx - ax, by - ay
        length = math.hypot(dx, dy)
        # The rectangle part's corners (none for a dot): the segment moved r along its normal.
        corners: list[Point] = []
        if length > 0:
            nx, ny = -dy / length * r, dx / length * r
            corners = [(ax + nx, ay + ny), (bx + nx, by + ny), (bx - nx, by - ny)]
            corners.append((ax - nx, ay - ny))
        top = max(0, math.ceil(min(ay, by) - r))
        bottom = min(self.height - 1, math.floor(max(ay, by) + r))
        fill = self._fills[colour]
        for y in range(top, bottom + 1):
            left, right = math.inf, -math.inf
            for px, py in (a, b):
                off = y - py
                if abs(off) <= r:
                    half = math.sqrt(r * r - off * off)
                    left, right = min(left, px - half), max(right, px + half)
            for i in range(len(corners)):
                (px, py), (qx, qy) = corners[i], corners[(i + 1) % 4]
                if py == qy:
                    if py == y:
                        left, right = min(left, px, qx), max(right, px, qx)
                elif min(py, qy) <= y <= max(py, qy):
                    x = px + (y - py) * (qx - px) / (qy - py)
                    left, right = min(left, x), max(right, x)
            x0, x1 = max(0, math.ceil(left)), min(self.width - 1, math.floor(right))
            if x0 <= x1:
                row = y * self.width
                self.pixels[row + x0 : row + x1 + 1] = fill[: x1 - x0 + 1]

    def png(self) -> bytes:
        w, h = self.width, self.height
        raw = b"".join(b"\x00" + self.pixels[y * w : (y + 1) * w] for y in range(h))
        palette = b"".join(bytes.fromhex(c[1:]) for c in (BACKGROUND, *PALETTE))
        return b"".join(
            (
                SIGNATURE,
                _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 3, 0, 0, 0)),
                _chunk(b"PLTE", palette),
                _chunk(b"IDAT", zlib.compress(raw, 9)),
                _chunk(b"IEND", b""),
            )
        )


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
