"""A minimal PNG reader for the Whiteboard's tests: chunks, IHDR, and the pixels of an 8-bit
indexed image with filter type 0 on every row (what `_png` writes), as palette colours."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass
class Decoded:
    width: int
    height: int
    bit_depth: int
    colour_type: int
    palette: list[str]
    rows: list[bytes]

    def pixel(self, x: int, y: int) -> str:
        return self.palette[self.rows[y][x]]


def decode(data: bytes) -> Decoded:
    assert data[:8] == SIGNATURE
    at, chunks = 8, []
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        assert crc == zlib.crc32(kind + body), kind
        chunks.append((kind, body))
        at += 12 + length
    kinds = [k for k, _ in chunks]
    assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND"
    width, height, depth, colour_type, _, _, _ = struct.unpack(">IIBBBBB", chunks[0][1])
    plte = next(b for k, b in chunks if k == b"PLTE")
    palette = ["#" + plte[i : i + 3].hex() for i in range(0, len(plte), 3)]
    raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
    assert len(raw) == height * (width + 1)
    rows = []
    for y in range(height):
        row = raw[y * (width + 1) : (y + 1) * (width + 1)]
        assert row[0] == 0  # filter: none
        rows.append(row[1:])
    return Decoded(width, height, depth, colour_type, palette, rows)
