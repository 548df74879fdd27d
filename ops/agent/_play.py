"""`/play draw-and-guess`: a naive guesser, so the Draw-and-Guess loop is visible without a model.
Pure: the messages of its calls in, moves out.

Theory of operation: `/play draw-and-guess` asks `draw-and-guess.start_round` (a launch: the
game comes to the front and shows the user a word to draw) and starts watching. Watching is a
chain of `Tick`s: each says "in `poll_s` seconds, look at the drawing", and its firing
(`Game.tick`) asks `draw-and-guess.get_drawing`. When the drawing has strokes and changed since
the last guess, the Agent guesses the next word of `WORDS` (`draw-and-guess.guess`); whatever
the answer, the next tick follows, up to `MAX_POLLS` looks. The round ends with the start call's
one result (the word, the guesses, the outcome), or its error; a guess that says the round is
over, or `round_not_running`, stops the watching and leaves the telling to that ending.

Keys: each call id derives from the call before it in the chain (`demo-draw-<digest>`,
`demo-guess-<digest>`), the first from the user's `/play` message; a tick fires only when it
is still the round's next one. So a restarted Agent replaying the conversation makes the same
calls under the same keys (the AppServer stores none twice), and stale ticks do nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from lineup import wire

from ._questions import markdown_text
from ._tour import Ask, Move, Say
from ._words import explained

__all__ = [
    "DRAWING",
    "GAME",
    "GUESS",
    "MAX_POLLS",
    "POLL_S",
    "START",
    "WORDS",
    "Game",
    "Step",
    "Tick",
    "digest",
]

GAME: Final = "draw-and-guess"
START: Final = "draw-and-guess.start_round"
DRAWING: Final = "draw-and-guess.get_drawing"
GUESS: Final = "draw-and-guess.guess"
POLL_S: Final = 3.0  # between two looks at the drawing
MAX_POLLS: Final = 60  # looks per round (three minutes), then the Agent stops watching
MAX_CALLS: Final = 256  # calls of all rounds remembered; the oldest are forgotten
# The guesser's own list, on purpose not the game's: it guesses as a stranger would.
WORDS: Final = (
    "cat", "house", "sun", "tree", "car", "fish", "flower", "dog", "boat", "star",
    "apple", "moon", "bird", "hat", "ball",
)  # fmt: skip
INSTALL_HINT: Final = (
    "**Draw-and-Guess** is not installed. Open the **App Registry** from the launcher, install "
    "*Draw-and-Guess* from **Available** (`make run` builds that catalog), then write "
    "`/play draw-and-guess` again."
)
ENDED: Final = frozenset({"rejected", "activation_failed", "activation_cancelled"})


def digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Tick:
    """Look at the drawing in `delay_s` seconds, with the call `call_id`."""

    conversation_id: str
    call_id: str
    delay_s: float


Step = Move | Tick


@dataclass
class _Round:
    conversation_id: str
    start_call: str
    polls: int = 0
    guessed: list[str] = field(default_factory=list)
    seen: tuple[int, str] | None = None  # (strokes, digest of the PNG) at the last guess
    watching: bool = True
    next_call: str | None = None  # the get_drawing the newest tick is for


@dataclass(frozen=True)
class _Pending:
    purpose: Literal["start", "draw", "guess"]
    start_call: str
    conversation_id: str
    word: str = ""


def _answer(word: str, payload: dict[str, Any]) -> str:
    """What a guess's result says."""
    result = payload.get("result")
    result = result if isinstance(result, dict) else {}
    if result.get("correct"):
        return f"**{markdown_text(word)}** is right!"
    left = result.get("tries_left")
    tries = "try" if left == 1 else "tries"
    return f"Not **{markdown_text(word)}**: {markdown_text(str(left))} {tries} left."


@dataclass
class Game:
    """The rounds being played, by the start call's id. Not thread-safe; pure."""

    poll_s: float = POLL_S
    rounds: dict[str, _Round] = field(default_factory=dict)
    calls: dict[str, _Pending] = field(default_factory=dict)

    def start(
        self,
        conversation_id: str,
        message_id: str,
        game: str,
        tools: dict[str, Any],
        revision: str,
    ) -> list[Step]:
        """The moves answering `/play <game>`."""
        key = f"reply:{message_id}"
        if game != GAME:
            return [Say(conversation_id, f"I can play `{GAME}`: write `/play {GAME}`.", key)]
        if not all(t in tools for t in (START, DRAWING, GUESS)):
            return [Say(conversation_id, INSTALL_HINT, key)]
        if any(r.conversation_id == conversation_id for r in self.rounds.values()):
            text = "A round is running already: draw, or give up in the game."
            return [Say(conversation_id, text, key)]
        start_call = f"demo-play-{digest(message_id)}"
        self.rounds[start_call] = _Round(conversation_id, start_call)
        self._remember(start_call, _Pending("start", start_call, conversation_id))
        text = "Starting a round of **Draw-and-Guess**: draw the word the game shows you."
        return [
            Say(conversation_id, text, key),
            Ask(conversation_id, START, {}, start_call, revision),
            *self._watch(self.rounds[start_call], start_call),
        ]

    def tick(self, tick: Tick, revision: str) -> list[Step]:
        """The moves of a tick that fired: a look at the drawing, unless the round is over
        or moved on."""
        pending = self.calls.get(tick.call_id)
        round_ = self.rounds.get(pending.start_call) if pending else None
        if round_ is None or not round_.watching or round_.next_call != tick.call_id:
            return []
        return [Ask(round_.conversation_id, DRAWING, {}, tick.call_id, revision)]

    def step(
        self, call_id: str, kind: str, payload: dict[str, Any], revision: str
    ) -> list[Step] | None:
        """The moves answering a receipt, progress, result or error of one of the game's
        calls; None when it is none of them."""
        pending = self.calls.get(call_id)
        if pending is None:
            return None
        if kind in (wire.RESULT, wire.TOOL_ERROR):
            del self.calls[call_id]
        round_ = self.rounds.get(pending.start_call)
        if round_ is None:
            # The game may end the round before it answers the guess that ended it.
            if pending.purpose != "guess" or kind != wire.RESULT:
                return []
            text = _answer(pending.word, payload)
            return [Say(pending.conversation_id, text, f"result:{call_id}")]
        if pending.purpose == "start":
            return self._started(round_, kind, payload)
        if kind not in (wire.RESULT, wire.TOOL_ERROR):
            return []
        if pending.purpose == "draw":
            result = payload.get("result") if kind == wire.RESULT else None
            return self._looked(round_, call_id, result, revision)
        return self._guessed(round_, call_id, pending.word, kind, payload)

    # ------------------------------------------------------------------------------ steps

    def _remember(self, call_id: str, pending: _Pending) -> None:
        while len(self.calls) >= MAX_CALLS:
            self.calls.pop(next(iter(self.calls)))
        self.calls[call_id] = pending

    def _watch(self, round_: _Round, after: str) -> list[Step]:
        if not round_.watching:
            return []
        conv = round_.conversation_id
        if round_.polls >= MAX_POLLS:
            round_.watching = False
            text = "I stop watching the drawing now: finish the round, or give up, in the game."
            return [Say(conv, text, f"watched:{round_.start_call}")]
        round_.polls += 1
        call_id = f"demo-draw-{digest(after)}"
        self._remember(call_id, _Pending("draw", round_.start_call, conv))
        round_.next_call = call_id
        return [Tick(conv, call_id, self.poll_s)]

    def _started(self, round_: _Round, kind: str, payload: dict[str, Any]) -> list[Step]:
        conv, start = round_.conversation_id, round_.start_call
        if kind == wire.RECEIPT:
            status = str(payload.get("status", ""))
            if status not in ENDED:
                return []
            del self.rounds[start]
            code = str(payload.get("code") or status)
            text = explained("The round could not start.", code)
            return [Say(conv, text, f"receipt:{start}")]
        if kind == wire.PROGRESS:
            return []
        del self.rounds[start]
        if kind == wire.TOOL_ERROR:
            text = explained("The round ended without an outcome.", str(payload.get("code", "")))
            return [Say(conv, text, f"result:{start}")]
        result = payload.get("result")
        result = result if isinstance(result, dict) else {}
        outcome = markdown_text(str(result.get("outcome", "?")))
        word = markdown_text(str(result.get("word", "?")))
        guesses = result.get("guesses")
        tried = ", ".join(markdown_text(str(g)) for g in guesses) if guesses else "none"
        text = f"The round is over: **{outcome}**. The word was **{word}**; the guesses: {tried}."
        return [Say(conv, text, f"result:{start}")]

    def _looked(self, round_: _Round, call_id: str, result: Any, revision: str) -> list[Step]:
        if not isinstance(result, dict) or not round_.watching:
            return self._watch(round_, call_id)  # a failed look: look again later
        strokes, png = result.get("strokes"), result.get("png_base64")
        if not isinstance(strokes, int) or strokes <= 0 or not isinstance(png, str):
            return self._watch(round_, call_id)
        seen = (strokes, digest(png))
        if seen == round_.seen:
            return self._watch(round_, call_id)
        round_.seen = seen
        conv = round_.conversation_id
        if len(round_.guessed) >= len(WORDS):
            round_.watching = False
            text = "I am out of words: tell me in the game, or give up."
            return [Say(conv, text, f"guess:{call_id}")]
        word = WORDS[len(round_.guessed)]
        round_.guessed.append(word)
        guess_call = f"demo-guess-{digest(call_id)}"
        self._remember(guess_call, _Pending("guess", round_.start_call, conv, word))
        noun = "stroke" if strokes == 1 else "strokes"
        return [
            Say(conv, f"I see {strokes} {noun}: I guess **{word}**.", f"guess:{call_id}"),
            Ask(conv, GUESS, {"word": word}, guess_call, revision),
        ]

    def _guessed(
        self, round_: _Round, call_id: str, word: str, kind: str, payload: dict[str, Any]
    ) -> list[Step]:
        conv, key = round_.conversation_id, f"result:{call_id}"
        if kind == wire.TOOL_ERROR:
            code = str(payload.get("code", ""))
            if code == "round_not_running":
                round_.watching = False  # the start call's ending tells the rest
                return []
            text = explained(f"My guess **{word}** was refused.", code)
            return [Say(conv, text, key), *self._watch(round_, call_id)]
        result = payload.get("result")
        text = _answer(word, payload)
        if not isinstance(result, dict) or result.get("outcome", "playing") != "playing":
            round_.watching = False
            return [Say(conv, text, key)]
        return [Say(conv, text, key), *self._watch(round_, call_id)]
