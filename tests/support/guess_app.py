"""A stand-in for Draw-and-Guess with its three tools' names and shapes (issue 17's contract), for
the e2e test of the demo Agent's naive guesser: a round whose word is `WORD`, a drawing that
gains a stroke at every look (as if the user kept drawing), a guess compared as the game
compares. No Surface and no word list: only what the Agent sees."""

from __future__ import annotations

import base64
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, MiniApp, ToolCall, tool
from lineup.tests.support.picture_app import grey_png

WORD: Final = "house"  # the guesser's second word: one wrong guess, then the right one
TRIES: Final = 5


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StartInput(_Model):
    max_tries: int = Field(default=TRIES, ge=1, le=10)


class RoundOutput(_Model):
    word: str = Field(max_length=40)
    guesses: tuple[str, ...]
    outcome: Literal["won", "lost", "gave_up"]


class Empty(_Model):
    pass


class Drawing(_Model):
    artifact_id: str = Field(max_length=200)
    png_base64: str = Field(max_length=10_000)
    width: int
    height: int
    strokes: int


class GuessInput(_Model):
    word: str = Field(min_length=1, max_length=40)


class GuessOutput(_Model):
    correct: bool
    tries_left: int
    outcome: Literal["playing", "won", "lost"]


class FakeDrawAndGuess(MiniApp):
    app_info = AppInfo(app_scope="draw-and-guess", version="1.0.0", kind="bundled-reference")

    async def start(self, app: AppContext) -> None:
        self.app = app
        self.round: ToolCall[StartInput] | None = None
        self.guesses: list[str] = []
        self.looks = 0

    @tool("draw-and-guess.start_round", handling="launch", input=StartInput, output=RoundOutput)
    async def start_round(self, call: ToolCall[StartInput]) -> RoundOutput | None:
        self.round, self.guesses, self.looks = call, [], 0
        return None  # the round's one result comes when it ends

    @tool("draw-and-guess.get_drawing", handling="direct", input=Empty, output=Drawing)
    async def get_drawing(self, call: ToolCall[Empty]) -> Drawing:
        self.looks += 1
        png = base64.b64encode(grey_png(self.looks)).decode("ascii")
        side = self.looks
        return Drawing(
            artifact_id="art-fake", png_base64=png, width=side, height=side, strokes=self.looks
        )

    @tool("draw-and-guess.guess", handling="operation", input=GuessInput, output=GuessOutput)
    async def guess(self, call: ToolCall[GuessInput]) -> GuessOutput:
        assert self.round is not None
        word = "".join(call.input.word.split()).lower()
        self.guesses.append(word)
        correct, left = word == WORD, self.round.input.max_tries - len(self.guesses)
        outcome: Literal["playing", "won", "lost"] = (
            "won" if correct else "lost" if left <= 0 else "playing"
        )
        if outcome != "playing":
            ended = RoundOutput(word=WORD, guesses=tuple(self.guesses), outcome=outcome)
            await self.round.complete(ended)
        return GuessOutput(correct=correct, tries_left=left, outcome=outcome)
