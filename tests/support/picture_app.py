"""A MiniApp whose one tool answers a picture inline, as `draw-and-guess.get_drawing` does: a
small PNG as `png_base64`, with its size. For the e2e tests of the demo Agent's `/call` (the
receipts and the result in the chat) and of `lineup mcp` (a PNG inline becomes MCP image
content)."""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, MiniApp, ToolCall, tool

SIDE: Final = 4  # pixels; the picture is a square of one grey


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DrawInput(_Model):
    title: str = Field(min_length=1, max_length=40)


class DrawOutput(_Model):
    title: str = Field(max_length=40)
    png_base64: str = Field(max_length=10_000)
    width: int
    height: int


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def grey_png(side: int = SIDE) -> bytes:
    """A `side` × `side` 8-bit greyscale PNG."""
    header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x80" * side for _ in range(side))
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows))
        + _chunk(b"IEND", b"")
    )


class Picture(MiniApp):
    app_info = AppInfo(app_scope="picture", version="1.0.0", kind="bundled-reference")

    async def start(self, app: AppContext) -> None:
        self.app = app

    @tool(
        "picture.draw",
        handling="launch",
        input=DrawInput,
        output=DrawOutput,
        timeout_ms=10_000,
        description="Draw a small grey square, answered inline as a PNG.",
    )
    async def draw(self, call: ToolCall[DrawInput]) -> DrawOutput:
        await call.progress({"message": "drawing"})
        png = base64.b64encode(grey_png()).decode("ascii")
        return DrawOutput(title=call.input.title, png_base64=png, width=SIDE, height=SIDE)
