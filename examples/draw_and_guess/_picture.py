"""The drawing as a PNG for the Agent (`get_drawing`), drawn with the SDK's `raster` canvas.

The canvas is the round's (WIDTH × HEIGHT, a white background, the one pen colour), each stroke
a line PEN_WIDTH across. The PNG goes inline in a tool result, so it is capped: a drawing whose
PNG is over `MAX_INLINE_PNG` is drawn again at half the size in each direction, and again,
until it fits (a line drawing this size takes a few KiB, so that is rare). Pure CPU: the app
runs it in a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from lineup.sdk.raster import Canvas

from ._round import HEIGHT, WIDTH, Drawing

__all__ = ["MAX_INLINE_PNG", "PEN", "Picture", "render"]

MAX_INLINE_PNG: Final = 64 * 1024
PEN: Final = "#1f2328"
BACKGROUND: Final = "#ffffff"
PEN_WIDTH: Final = 6
MAX_SCALE: Final = 64  # 800 × 600 / 64: the smallest picture, 12 × 9


@dataclass(frozen=True)
class Picture:
    png: bytes
    width: int
    height: int


def render(drawing: Drawing, *, cap: int = MAX_INLINE_PNG) -> Picture:
    """The drawing as a PNG of at most `cap` bytes (the smallest one tried, if none fits)."""
    scale = 1
    while True:
        picture = _drawn(drawing, scale)
        if len(picture.png) <= cap or scale >= MAX_SCALE:
            return picture
        scale *= 2


def _drawn(drawing: Drawing, scale: int) -> Picture:
    width, height = WIDTH // scale, HEIGHT // scale
    canvas = Canvas(width, height, (PEN,), background=BACKGROUND)
    for line in drawing.polylines():
        canvas.stroke([(x / scale, y / scale) for x, y in line], PEN_WIDTH / scale, PEN)
    return Picture(canvas.png(), width, height)
