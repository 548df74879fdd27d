"""A small palette canvas and its PNG, in pure Python (zlib and struct): a drawing for the Agent.

    canvas = Canvas(800, 600, palette=("#1f2328", "#d1242f"))
    canvas.stroke([(10, 10), (200, 40), (210, 300)], width=6, colour="#1f2328")
    png = canvas.png()          # bytes of a valid PNG, e.g. for `app.artifacts.create`

Theory of operation
-------------------
The image is 8-bit indexed (PNG colour type 3): index 0 is the background, then the palette
the canvas was made with, so a pixel is one byte and a line drawing compresses to little. A
stroke is a chain of capsules, one per segment (the segment with round ends, `width` across),
so its joins and caps are round; one point is a dot. Points nearer than a sixth of the width to
the last one kept are left out first (a pointer reports a point every few pixels, and a thick
line through them strays less than that from the drawn one). Each row of a capsule is one
interval, so a segment costs one slice assignment per row it covers; what falls off the canvas
is clipped, never wrapped to the next row. Nothing here does I/O, and nothing is random: the
same strokes give the same bytes.
"""

from __future__ import annotations

import itertools
import math
import re
import struct
import zlib
from collections.abc import Sequence
from typing import Final

__all__ = ["MAX_SIDE", "SIGNATURE", "Canvas", "Point"]

SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"
MAX_SIDE: Final = 4096  # px, either side: a canvas is width × height bytes in memory
MAX_COLOURS: Final = 255  # the palette, beside the background (an index is one byte)
_HEX: Final = re.compile(r"^#[0-9a-f]{6}$")
Point = tuple[float, float]


class Canvas:
    """A `width` × `height` canvas filled with `background`, painted in `palette`'s colours
    ("#rrggbb", lower case). Raises `ValueError` for a size outside 1..MAX_SIDE or a colour
    that is not of that form."""

    def __init__(
        self,
        width: int,
        height: int,
        palette: Sequence[str] = ("#1f2328",),
        *,
        background: str = "#ffffff",
    ) -> None:
        if not (1 <= width <= MAX_SIDE and 1 <= height <= MAX_SIDE):
            raise ValueError("a canvas side is outside 1..MAX_SIDE")
        colours = (background, *palette)
        if len(colours) > MAX_COLOURS + 1 or not all(_HEX.match(c) for c in colours):
            raise ValueError('a colour is not "#rrggbb", or there are too many')
        self.width, self.height = width, height
        self.colours: tuple[str, ...] = colours  # index 0 is the background
        self.pixels = bytearray(width * height)  # all index 0: the background
        self._index: dict[str, int] = {}
        for i, colour in enumerate(colours):
            self._index.setdefault(colour, i)
        self._fills = [bytes([i]) * width for i in range(len(colours))]

    def index(self, colour: str) -> int:
        """The palette index of `colour` (0: the background). Raises `ValueError` for one
        the canvas was not made with."""
        try:
            return self._index[colour]
        except KeyError:
            raise ValueError("a colour that is not in the canvas's palette") from None

    def stroke(self, points: Sequence[Point], width: float, colour: str) -> None:
        """Paint a line `width` across through `points` (round caps and joins; one point is a
        dot, no point paints nothing). `colour` is the background's to erase. Raises
        `ValueError` for a colour not in the palette."""
        if not points:
            return
        fill = self.index(colour)
        r = max(0.5, width / 2)
        xy = _thinned(list(points), r)
        if len(xy) == 1:
            self._capsule(xy[0], xy[0], r, fill)
        for a, b in itertools.pairwise(xy):
            self._capsule(a, b, r, fill)

    def capsule(self, a: Point, b: Point, radius: float, colour: str) -> None:
        """Paint every pixel whose centre is within `radius` of the segment a–b."""
        self._capsule(a, b, radius, self.index(colour))

    def png(self) -> bytes:
        """The canvas as a PNG file: IHDR, PLTE, one IDAT (zlib level 9), IEND."""
        w, h = self.width, self.height
        raw = b"".join(b"\x00" + self.pixels[y * w : (y + 1) * w] for y in range(h))
        palette = b"".join(bytes.fromhex(c[1:]) for c in self.colours)
        return b"".join(
            (
                SIGNATURE,
                _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 3, 0, 0, 0)),
                _chunk(b"PLTE", palette),
                _chunk(b"IDAT", zlib.compress(raw, 9)),
                _chunk(b"IEND", b""),
            )
        )

    def _capsule(self, a: Point, b: Point, r: float, colour: int) -> None:
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
            if left > right:
                continue  # a row at the very edge that rounding left with no interval
            x0, x1 = max(0, math.ceil(left)), min(self.width - 1, math.floor(right))
            if x0 <= x1:
                row = y * self.width
                self.pixels[row + x0 : row + x1 + 1] = fill[: x1 - x0 + 1]


def _thinned(xy: list[Point], r: float) -> list[Point]:
    """The points with those nearer than r/3 to the last one kept left out (the last always
    kept): a thick line through them strays under r/3 from the drawn one, at a fraction of the
    rows to paint."""
    near = max(1.0, r / 3) ** 2
    kept = xy[:1]
    for x, y in xy[1:-1]:
        kx, ky = kept[-1]
        if (x - kx) ** 2 + (y - ky) ** 2 >= near:
            kept.append((x, y))
    if len(xy) > 1:
        kept.append(xy[-1])
    return kept


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
