"""One round of Draw-and-Guess, as data: the word, the guesses, the outcome and the drawing.

Theory of operation
-------------------
A round is born `playing` for one `start_round` call (its `call_id`) with a word the app
picked and a number of tries. Its outcome moves by the table below and nowhere else; a final
outcome never moves again (`RoundNotRunning`, code `round_not_running`):

    playing --right guess---------------> won
    playing --wrong guess, tries left---> playing
    playing --wrong guess, none left----> lost
    playing --give up-------------------> gave_up

A guess is kept with the id of the `guess` call that made it, so a call told again (a
restarted process, a re-delivered call) gets the answer it had and costs no second try.
Comparison folds case and drops white space ("Ice Cream" is "icecream").

The drawing is the user's strokes on a fixed WIDTH × HEIGHT canvas. The Surface sends each
stroke in batches as it is drawn (`stroke.add`: a stroke id, the batch's `seq` in it, its
points), and a batch is applied once by its key `<stroke id>:<seq>`: a re-sent one changes
nothing. A stroke's points are its batches' in `seq` order, so a batch that arrives late
still lands in its place. Points are rounded and clamped to the canvas. A batch over the
bounds (points per batch, strokes, points in all) is refused `quota_exceeded` and one that
does not parse `invalid_arguments`; either is listed in `refused`, which the Surface reads
to stop re-sending it. `drawing.clear` (by a clear id, once) empties the canvas.

The whole round is one JSON document, the instance's session data:

    {"round": {"call_id", "word", "max_tries", "guesses": [{"call_id", "word", "correct"}],
               "outcome"},
     "drawing": {"strokes": [{"id", "parts": [[seq, [x0, y0, x1, y1, ...]], ...]}]},
     "applied": [the last APPLIED_KEPT keys], "refused": [{"key", "code"}, ...]}

Nothing here does I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

__all__ = [
    "APPLIED_KEPT",
    "HEIGHT",
    "MAX_POINTS",
    "MAX_STROKES",
    "WIDTH",
    "WORDS",
    "Drawing",
    "Guess",
    "Outcome",
    "Round",
    "RoundNotRunning",
    "normalised",
]

WIDTH: Final = 800
HEIGHT: Final = 600
MAX_BATCH_POINTS: Final = 256  # points in one `stroke.add`
MAX_SEQ: Final = 10_000  # batches in one stroke
MAX_STROKES: Final = 400
MAX_POINTS: Final = 12_000  # in the whole drawing: ~100 KiB of the session data's 256
APPLIED_KEPT: Final = 256  # keys remembered for dedupe (the Surface re-sends within seconds)
REFUSED_KEPT: Final = 32
MAX_GUESS: Final = 40
DEFAULT_TRIES: Final = 5
MAX_TRIES: Final = 10

# Easily drawn nouns: a shape or two says each of them.
WORDS: Final = (
    "apple", "banana", "bicycle", "bird", "boat", "book", "bridge", "butterfly", "cake",
    "candle", "car", "castle", "cat", "chair", "clock", "cloud", "crown", "cup", "dog",
    "door", "duck", "elephant", "fish", "flower", "guitar", "hammer", "hat", "heart",
    "house", "key", "kite", "ladder", "lamp", "leaf", "moon", "mountain", "mushroom",
    "pencil", "rainbow", "rocket", "shoe", "snake", "snowman", "spider", "star", "sun",
    "table", "tree", "umbrella", "whale",
)  # fmt: skip

Outcome = Literal["playing", "won", "lost", "gave_up"]
Event = Literal["right", "wrong", "last_wrong", "give_up"]
# The legal moves of a round's outcome: state -> {event: next state}. Anything else raises.
TRANSITIONS: Final[dict[str, dict[str, Outcome]]] = {
    "playing": {"right": "won", "wrong": "playing", "last_wrong": "lost", "give_up": "gave_up"},
    "won": {},
    "lost": {},
    "gave_up": {},
}
_ID: Final = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


class RoundNotRunning(Exception):
    """The round is over (or there is none): nothing more can be guessed or given up. The
    app fails the call that tried with `code`."""

    code: Final = "round_not_running"


def normalised(word: str) -> str:
    """`word` as guesses are compared: case folded, white space dropped."""
    return "".join(word.split()).casefold()


@dataclass(frozen=True)
class Guess:
    call_id: str
    word: str
    correct: bool


@dataclass
class Drawing:
    """The strokes, each its batches by `seq`; `applied` and `refused` as the Surface reads
    them. Change it only through `add` and `clear`."""

    strokes: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    applied: list[str] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)

    @property
    def points(self) -> int:
        return sum(len(pts) // 2 for parts in self.strokes.values() for pts in parts.values())

    def add(self, data: Mapping[str, Any]) -> bool:
        """Apply one `stroke.add` batch; False when it changed nothing (seen before, refused,
        or not a batch at all)."""
        stroke_id, seq, raw = data.get("stroke_id"), data.get("seq"), data.get("points")
        if not isinstance(stroke_id, str) or not _ID.match(stroke_id):
            return False  # no key to answer by: dropped
        if type(seq) is not int or not 0 <= seq <= MAX_SEQ:
            return False
        key = f"{stroke_id}:{seq}"
        if key in self.applied or any(r["key"] == key for r in self.refused):
            return False
        points = _points(raw)
        if points is None:
            return self._refuse(key, "invalid_arguments")
        parts = self.strokes.get(stroke_id)
        if parts is not None and seq in parts:
            return False  # applied long ago (its key no longer kept)
        if (parts is None and len(self.strokes) >= MAX_STROKES) or (
            self.points + len(points) // 2 > MAX_POINTS
        ):
            return self._refuse(key, "quota_exceeded")
        self.strokes.setdefault(stroke_id, {})[seq] = points
        self._applied(key)
        return True

    def clear(self, clear_id: Any) -> bool:
        """Empty the canvas, once per `clear_id`."""
        if not isinstance(clear_id, str) or not _ID.match(clear_id):
            return False
        key = f"clear:{clear_id}"
        if key in self.applied:
            return False
        self.strokes.clear()
        self._applied(key)
        return True

    def polylines(self) -> list[list[tuple[int, int]]]:
        """Each stroke's points in order, as (x, y) pairs: what the picture paints."""
        lines = []
        for parts in self.strokes.values():
            flat = [v for seq in sorted(parts) for v in parts[seq]]
            lines.append([(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)])
        return lines

    def document(self) -> dict[str, Any]:
        return {
            "strokes": [
                {"id": sid, "parts": [[seq, parts[seq]] for seq in sorted(parts)]}
                for sid, parts in self.strokes.items()
            ]
        }

    @classmethod
    def from_document(cls, doc: Mapping[str, Any], applied: Any, refused: Any) -> Drawing:
        drawing = cls()
        for stroke in doc.get("strokes", []):
            drawing.strokes[stroke["id"]] = {int(seq): list(pts) for seq, pts in stroke["parts"]}
        drawing.applied = [k for k in applied if isinstance(k, str)]
        drawing.refused = [dict(r) for r in refused if isinstance(r, dict)]
        return drawing

    def _applied(self, key: str) -> None:
        self.applied.append(key)
        del self.applied[:-APPLIED_KEPT]

    def _refuse(self, key: str, code: str) -> bool:
        self.refused.append({"key": key, "code": code})
        del self.refused[:-REFUSED_KEPT]
        return True  # the document changed: the Surface learns of the refusal from it


@dataclass
class Round:
    call_id: str
    word: str
    max_tries: int = DEFAULT_TRIES
    guesses: list[Guess] = field(default_factory=list)
    outcome: Outcome = "playing"
    drawing: Drawing = field(default_factory=Drawing)

    @property
    def tries_left(self) -> int:
        return self.max_tries - sum(1 for g in self.guesses if not g.correct)

    @property
    def over(self) -> bool:
        return self.outcome != "playing"

    def guess(self, call_id: str, word: str) -> Guess:
        """Take the guess of the call `call_id` (the one it had, if it was taken before).
        Raises `RoundNotRunning` when the round is over and this call made no guess in it."""
        for seen in self.guesses:
            if seen.call_id == call_id:
                return seen
        correct = normalised(word) == normalised(self.word)
        event: Event = "right" if correct else "wrong" if self.tries_left > 1 else "last_wrong"
        self._move(event)
        made = Guess(call_id, word.strip(), correct)
        self.guesses.append(made)
        return made

    def after(self, made: Guess) -> tuple[int, Literal["playing", "won", "lost"]]:
        """The tries left and the outcome just after the guess `made` (one of this round's):
        what its call answers, the same when it is asked again later."""
        wrong = 0
        for seen in self.guesses:
            wrong += not seen.correct
            if seen.call_id == made.call_id:
                break
        left = self.max_tries - wrong
        return left, "won" if made.correct else "lost" if left == 0 else "playing"

    def give_up(self) -> None:
        """The user gives up. Raises `RoundNotRunning` when the round is over."""
        self._move("give_up")

    def result(self) -> dict[str, Any]:
        """What `start_round` completes with: the word, the guesses, the outcome."""
        return {
            "word": self.word,
            "guesses": [g.word for g in self.guesses],
            "outcome": self.outcome,
        }

    def surface_state(self) -> dict[str, Any]:
        """The Surface's state: what the user sees beside the canvas."""
        return {
            "phase": self.outcome,
            "word": self.word,
            "max_tries": self.max_tries,
            "tries_left": self.tries_left,
            "guesses": [{"word": g.word, "correct": g.correct} for g in self.guesses],
            "outcome": None if self.outcome == "playing" else self.outcome,
        }

    def document(self) -> dict[str, Any]:
        return {
            "round": {
                "call_id": self.call_id,
                "word": self.word,
                "max_tries": self.max_tries,
                "guesses": [
                    {"call_id": g.call_id, "word": g.word, "correct": g.correct}
                    for g in self.guesses
                ],
                "outcome": self.outcome,
            },
            "drawing": self.drawing.document(),
            "applied": list(self.drawing.applied),
            "refused": list(self.drawing.refused),
        }

    @classmethod
    def from_document(cls, doc: Mapping[str, Any] | None) -> Round | None:
        """The round a session data document holds, or None (none, or not one of ours)."""
        if not doc or not isinstance(doc.get("round"), dict):
            return None
        try:
            r = doc["round"]
            return cls(
                call_id=str(r["call_id"]),
                word=str(r["word"]),
                max_tries=int(r["max_tries"]),
                guesses=[Guess(g["call_id"], g["word"], bool(g["correct"])) for g in r["guesses"]],
                outcome=r["outcome"] if r["outcome"] in TRANSITIONS else "playing",
                drawing=Drawing.from_document(
                    doc.get("drawing") or {}, doc.get("applied") or [], doc.get("refused") or []
                ),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def _move(self, event: Event) -> None:
        following = TRANSITIONS[self.outcome].get(event)
        if following is None:
            raise RoundNotRunning(f"{event} after {self.outcome}")
        self.outcome = following


def _points(raw: Any) -> list[int] | None:
    """A batch's flat points rounded and clamped to the canvas, or None if it is not one."""
    if not isinstance(raw, list) or not 2 <= len(raw) <= 2 * MAX_BATCH_POINTS or len(raw) % 2:
        return None
    out: list[int] = []
    for i, value in enumerate(raw):
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            return None
        bound = WIDTH if i % 2 == 0 else HEIGHT
        out.append(min(bound, max(0, round(value))))
    return out
