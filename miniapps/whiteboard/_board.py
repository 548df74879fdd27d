"""The Whiteboard's board: items drawn on a fixed canvas, changed by ops the Surface sends.

Theory of operation
-------------------
The Surface draws at pointer rate inside its iframe and sends what the user did as *ops*, each
named by a client `op_id`: a `stroke` (pen, or eraser: a stroke in `erase` mode, painted in the
background colour), a `text` box, or an `undo` of an earlier stroke or text box (by the op id
that made it; the item's `id` is that op id). The app applies them here and writes the result
to the instance's session data, the document being

    {"board": {"board_id", "title", "width", "height", "items": [...]},
     "applied": [the last APPLIED_KEPT op ids], "refused": [{"op_id", "code"}, ...]}

The Surface keeps each op it sent until the op id shows up in `applied` (or `refused`) of a
session data revision, and re-sends it meanwhile: applying an op id seen before is a no-op, so
a re-sent or duplicated op never draws twice. An op that would take the document past the
session data bound is refused `quota_exceeded` (and one that does not parse,
`invalid_arguments`): the Surface drops it and says so. Nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from lineup.facts.limits import MAX_SESSION_DATA_BYTES  # the store's bound on session data

__all__ = [
    "APPLIED_KEPT",
    "HEIGHT",
    "ITEMS_BUDGET",
    "MAX_OPS_PER_PATCH",
    "MAX_POINTS",
    "MAX_TEXT",
    "PALETTE",
    "WIDTH",
    "ApplyResult",
    "Board",
    "StrokeOp",
    "TextOp",
    "UndoOp",
]

WIDTH: Final = 1600
HEIGHT: Final = 1000
BACKGROUND: Final = "#ffffff"
# The pen colours, fixed: the Surface shows these swatches and the PNG's palette is these.
PALETTE: Final = ("#1f2328", "#d1242f", "#0969da", "#1a7f37", "#bf8700", "#8250df")
MIN_STROKE_WIDTH: Final = 1
MAX_STROKE_WIDTH: Final = 40
MAX_POINTS: Final = 2_000  # per stroke
MAX_TEXT: Final = 500  # characters in one text box
MAX_OPS_PER_PATCH: Final = 200
APPLIED_KEPT: Final = 256  # op ids remembered for dedupe (the Surface re-sends within seconds)
REFUSED_KEPT: Final = 32
# What the items may take of it, as compact UTF-8 JSON: the rest is kept for the board's
# ids and title (at most 300 characters, 4 bytes each), `applied` (256 ids of at most 64
# characters, quoted, comma-separated) and `refused` (32 small objects).
ITEMS_BUDGET: Final = MAX_SESSION_DATA_BYTES - 24 * 1024

OpId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")]
Colour = Literal["#1f2328", "#d1242f", "#0969da", "#1a7f37", "#bf8700", "#8250df"]
X = Annotated[int, Field(ge=0, le=WIDTH)]
Y = Annotated[int, Field(ge=0, le=HEIGHT)]


class _Op(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class StrokeOp(_Op):
    """A stroke: `points` flat, `[x0, y0, x1, y1, ...]`, 1..MAX_POINTS points on the canvas."""

    op_id: OpId
    kind: Literal["stroke"]
    mode: Literal["pen", "erase"] = "pen"
    colour: Colour = PALETTE[0]
    width: int = Field(default=4, ge=MIN_STROKE_WIDTH, le=MAX_STROKE_WIDTH)
    points: list[int] = Field(min_length=2, max_length=2 * MAX_POINTS)

    @model_validator(mode="after")
    def _on_the_canvas(self) -> StrokeOp:
        if len(self.points) % 2:
            raise ValueError("points come in x, y pairs")
        xs, ys = self.points[0::2], self.points[1::2]
        if min(xs) < 0 or max(xs) > WIDTH or min(ys) < 0 or max(ys) > HEIGHT:
            raise ValueError("a point is off the canvas")
        return self


class TextOp(_Op):
    op_id: OpId
    kind: Literal["text"]
    x: X
    y: Y
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    colour: Colour = PALETTE[0]


class UndoOp(_Op):
    """Remove the item the op `target` made (nothing if it is gone or never came)."""

    op_id: OpId
    kind: Literal["undo"]
    target: OpId


Op = Annotated[StrokeOp | TextOp | UndoOp, Field(discriminator="kind")]
_OP: Final = TypeAdapter[StrokeOp | TextOp | UndoOp](Op)


@dataclass
class ApplyResult:
    """What one patch did: the op ids it applied (new ones only) and refused, by code."""

    applied: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.applied or self.refused)


class Board:
    """One board and its op bookkeeping. Mutable; `document()` is what session data holds."""

    def __init__(
        self,
        board_id: str,
        title: str,
        items: Iterable[Mapping[str, Any]] = (),
        *,
        applied: Iterable[str] = (),
        refused: Iterable[Mapping[str, str]] = (),
    ) -> None:
        self.board_id = board_id
        self.title = title
        self.items: dict[str, dict[str, Any]] = {}
        self._items_bytes = 0
        for item in items:
            self._add(dict(item))
        self.applied: list[str] = list(applied)[-APPLIED_KEPT:]
        self._seen = set(self.applied)
        self.refused: list[dict[str, str]] = [dict(r) for r in refused][-REFUSED_KEPT:]
        self._seen.update(r["op_id"] for r in self.refused)

    @classmethod
    def from_document(cls, document: Mapping[str, Any] | None) -> Board | None:
        """The board a session data document holds, or None if it holds none (never written,
        or not a board: the shape is checked, every item re-validated as an op)."""
        if not isinstance(document, Mapping):
            return None
        board = document.get("board")
        if not isinstance(board, Mapping):
            return None
        board_id, title, items = board.get("board_id"), board.get("title"), board.get("items")
        applied, refused = document.get("applied", []), document.get("refused", [])
        if not (
            isinstance(board_id, str)
            and isinstance(title, str)
            and isinstance(items, list)
            and isinstance(applied, list)
            and all(isinstance(a, str) for a in applied)
            and isinstance(refused, list)
            and all(
                isinstance(r, Mapping)
                and isinstance(r.get("op_id"), str)
                and isinstance(r.get("code"), str)
                for r in refused
            )
        ):
            return None
        try:
            parsed = [_item_of(_parse_item(item)) for item in items]
        except (ValidationError, ValueError, TypeError):
            return None
        return cls(board_id, title, parsed, applied=applied, refused=refused)

    @classmethod
    def initial(
        cls, board_id: str, title: str, ops: Sequence[StrokeOp | TextOp]
    ) -> tuple[Board, ApplyResult]:
        board = cls(board_id, title)
        return board, board.apply_ops(ops)

    def document(self) -> dict[str, Any]:
        return {
            "board": {
                "board_id": self.board_id,
                "title": self.title,
                "width": WIDTH,
                "height": HEIGHT,
                "items": list(self.items.values()),
            },
            "applied": list(self.applied),
            "refused": [dict(r) for r in self.refused],
        }

    def apply(self, raw_ops: Any) -> ApplyResult:
        """Apply a patch's `ops` (raw JSON from the Surface), in order. An op that does not
        parse is refused `invalid_arguments` if it has an op id (else dropped); one seen
        before does nothing."""
        result = ApplyResult()
        if not isinstance(raw_ops, list):
            return result
        for raw in raw_ops[:MAX_OPS_PER_PATCH]:
            try:
                op = _OP.validate_python(raw)
            except ValidationError:
                op_id = raw.get("op_id") if isinstance(raw, dict) else None
                if isinstance(op_id, str) and 0 < len(op_id) <= 64 and op_id not in self._seen:
                    self._refuse(op_id, "invalid_arguments", result)
                continue
            self._apply_one(op, result)
        return result

    def apply_ops(self, ops: Iterable[StrokeOp | TextOp | UndoOp]) -> ApplyResult:
        result = ApplyResult()
        for op in ops:
            self._apply_one(op, result)
        return result

    def summary(self) -> dict[str, Any]:
        pens = [i for i in self.items.values() if i["kind"] == "stroke" and i["mode"] == "pen"]
        texts = [i for i in self.items.values() if i["kind"] == "text"]
        colours = {i["colour"] for i in pens} | {i["colour"] for i in texts}
        return {
            "strokes": len(pens),
            "text_boxes": len(texts),
            "colours": [c for c in PALETTE if c in colours],
            "width": WIDTH,
            "height": HEIGHT,
        }

    # ------------------------------------------------------------------ internals

    def _apply_one(self, op: StrokeOp | TextOp | UndoOp, result: ApplyResult) -> None:
        if op.op_id in self._seen:
            return
        if isinstance(op, UndoOp):
            gone = self.items.pop(op.target, None)
            if gone is not None:
                self._items_bytes -= _size(gone) + 1
        elif op.op_id in self.items:
            pass  # made by an op id forgotten since: the item is there already
        else:
            item = _item_of(op)
            if self._items_bytes + _size(item) + 1 > ITEMS_BUDGET:
                self._refuse(op.op_id, "quota_exceeded", result)
                return
            self._add(item)
        self._remember(op.op_id)
        result.applied.append(op.op_id)

    def _add(self, item: dict[str, Any]) -> None:
        self.items[item["id"]] = item
        self._items_bytes += _size(item) + 1

    def _remember(self, op_id: str) -> None:
        self._seen.add(op_id)
        self.applied.append(op_id)
        while len(self.applied) > APPLIED_KEPT:
            self._forget(self.applied.pop(0))

    def _refuse(self, op_id: str, code: str, result: ApplyResult) -> None:
        self._seen.add(op_id)
        self.refused.append({"op_id": op_id, "code": code})
        while len(self.refused) > REFUSED_KEPT:
            self._forget(self.refused.pop(0)["op_id"])
        result.refused.append((op_id, code))

    def _forget(self, op_id: str) -> None:
        if op_id not in self.applied and all(r["op_id"] != op_id for r in self.refused):
            self._seen.discard(op_id)


def parse_initial(raw: Iterable[Mapping[str, Any]]) -> list[StrokeOp | TextOp]:
    """Ops from a tool's `initial` board (already shaped by its schema): undo is not one."""
    ops: list[StrokeOp | TextOp] = []
    for item in raw:
        op = _OP.validate_python(dict(item))
        if isinstance(op, UndoOp):
            raise ValueError("an initial board has no undo")
        ops.append(op)
    return ops


def _parse_item(item: Any) -> StrokeOp | TextOp:
    if not isinstance(item, dict) or "id" not in item:
        raise ValueError("not an item")
    op = _OP.validate_python({"op_id": item["id"], **{k: v for k, v in item.items() if k != "id"}})
    if isinstance(op, UndoOp):
        raise ValueError("an undo is not an item")
    return op


def _item_of(op: StrokeOp | TextOp) -> dict[str, Any]:
    if isinstance(op, StrokeOp):
        return {
            "id": op.op_id,
            "kind": "stroke",
            "mode": op.mode,
            "colour": op.colour,
            "width": op.width,
            "points": list(op.points),
        }
    return {
        "id": op.op_id,
        "kind": "text",
        "x": op.x,
        "y": op.y,
        "text": op.text,
        "colour": op.colour,
    }


def _size(value: Any) -> int:
    """Bytes of `value` as the store measures session data: compact UTF-8 JSON."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
