"""Draw-and-Guess: the user draws a word the app picked, the Agent guesses it (seed 004 §4.5).

Theory of operation
-------------------
`draw-and-guess.start_round` (handling `launch`) is the round: the runtime puts the game's new
instance in front, and the handler picks a word from `WORDS`, writes the round to the
instance's session data (`_round`: the whole round is that one document), opens the Surface
on it and returns None, keeping the `ToolCall`. The word goes to the Surface only, never to
the Agent. The user draws with pointer events; the Surface sends `stroke.add` batches, each
applied once, and reads what was applied from the session data it subscribes to.
`draw-and-guess.get_drawing` (`direct`) renders the drawing (`_picture`, with the SDK's
`raster`) as a PNG artifact of the app's and inline, and `draw-and-guess.guess`
(`operation`) takes a word and answers right or wrong and the tries left; the Surface shows
each guess. A right guess, the last wrong one or the Surface's Give up ends the round: the
start_round call completes, once, with the word, the guesses and the outcome; then the app
closes the Surface and its instance, and the runtime brings the chat back.

Restarts. Everything the round is lives in the session data, and a call is kept by the
runtime until it is final: a restarted process is handed the start_round call again (the
SDK asks for the pending calls at start), finds the round by the call's id, and opens the
Surface on it as it was; a round that ended meanwhile completes the call then, and closes.
A guess call told twice gets the answer it had (kept with its call id), never a second try.

Closing the game's tab. The app declares `CLOSE_REQUESTS_FEATURE`, so the user's close in the
Shell is told here (`app.close_requested`) instead of being done. With no round in play the
instance closes at once; with one, the game comes to the front and asks the user (a standard
`confirm`, tied to the round's call), and only an approval closes it: the round's call then
ends `cancelled(app_closed)`, as any close ends it. Cancelling keeps the round playing. A
round that ends while the question is open withdraws it.

One round at a time. A start_round while another round this process runs is still playing
fails `round_already_running` (and the instance opened for it closes): the Agent is to go on
with the round in play, whose result it still waits for. A guess or get_drawing with no round
in its instance fails `round_not_running`.
"""

from __future__ import annotations

import base64
import logging
import secrets
from collections.abc import Awaitable
from typing import Final, Literal

import trio
from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import (
    AppContext,
    AppInfo,
    Entrypoint,
    ErrorCode,
    LineUpError,
    MiniApp,
    ToolCall,
    protocol,
    tool,
)
from lineup.sdk.interactions import ConfirmRequest
from lineup.sdk.manifest import CLOSE_REQUESTS_FEATURE

from ._picture import MAX_INLINE_PNG, render
from ._round import (
    DEFAULT_TRIES,
    HEIGHT,
    MAX_GUESS,
    MAX_TRIES,
    WIDTH,
    WORDS,
    Drawing,
    Round,
    RoundNotRunning,
)

__all__ = ["DrawAndGuess"]

log = logging.getLogger("draw_and_guess")

ENTRYPOINT: Final = "game"
STROKE_EVENT: Final = "stroke.add"
CLEAR_EVENT: Final = "drawing.clear"
GIVE_UP_EVENT: Final = "round.give_up"
ROUND_NOT_RUNNING: Final = RoundNotRunning.code
ROUND_ALREADY_RUNNING: Final = "round_already_running"
ROUND_TIMEOUT_MS: Final = 3_600_000
SAVE_ATTEMPTS: Final = 3
_INLINE_B64: Final = 4 * -(-MAX_INLINE_PNG // 3)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StartInput(_Model):
    max_tries: int = Field(default=DEFAULT_TRIES, ge=1, le=MAX_TRIES, description="wrong guesses")


class StartOutput(_Model):
    word: str = Field(min_length=1, max_length=MAX_GUESS)
    guesses: list[str] = Field(max_length=MAX_TRIES)
    outcome: Literal["won", "lost", "gave_up"]


class DrawingInput(_Model):
    pass


class DrawingOutput(_Model):
    artifact_id: str = Field(min_length=1, max_length=200)
    png_base64: str = Field(min_length=1, max_length=_INLINE_B64)
    width: int = Field(ge=1, le=WIDTH)
    height: int = Field(ge=1, le=HEIGHT)
    strokes: int = Field(ge=0)


class GuessInput(_Model):
    word: str = Field(min_length=1, max_length=MAX_GUESS)


class GuessOutput(_Model):
    correct: bool
    tries_left: int = Field(ge=0, le=MAX_TRIES)
    outcome: Literal["playing", "won", "lost"]


class DrawAndGuess(MiniApp):
    app_info = AppInfo(
        app_scope="draw-and-guess",
        title="Draw and Guess",
        version="1.0.0",
        kind="installed",
        surface_required=True,
        optional_features=(CLOSE_REQUESTS_FEATURE,),
        entrypoints=(
            Entrypoint(
                id=ENTRYPOINT,
                kind="surface",
                document="index.html",
                events=(STROKE_EVENT, CLEAR_EVENT, GIVE_UP_EVENT),
            ),
        ),
    )
    words: tuple[str, ...] = WORDS

    def __init__(self) -> None:
        self.rounds: dict[str, Round] = {}  # instance_id -> its round as last written
        self.revisions: dict[str, int] = {}  # instance_id -> the revision that round is
        self.calls: dict[str, ToolCall[StartInput]] = {}  # instance_id -> its start_round
        self.surfaces: dict[str, str] = {}  # instance_id -> its open Surface
        self.ended: set[str] = set()  # instances closed: never shown again
        self.confirming: dict[str, str] = {}  # instance_id -> its close confirmation asked
        self._locks: dict[str, trio.Lock] = {}

    async def start(self, app: AppContext) -> None:
        self.app = app

    # ------------------------------------------------------------------ tools

    @tool(
        "draw-and-guess.start_round",
        handling="launch",
        input=StartInput,
        output=StartOutput,
        timeout_ms=ROUND_TIMEOUT_MS,
        requires_foreground=True,
        description=(
            "Start a round of Draw-and-Guess: the app picks a word and shows it to the user "
            "alone, who draws it. Look with get_drawing, guess with guess. Completes when the "
            "round ends, with the word, the guesses and the outcome (won, lost, gave_up)."
        ),
    )
    async def start_round(self, call: ToolCall[StartInput]) -> StartOutput | None:
        instance_id = call.instance_id
        async with self._lock(instance_id):
            held = await self._load(instance_id)
            if held is None or held.call_id != call.call_id:
                playing = self._playing_elsewhere(call.call_id)
                if playing is not None or (held is not None and not held.over):
                    await call.fail(ROUND_ALREADY_RUNNING, "a round is being played")
                    if playing is not None and playing != instance_id:
                        await self._close(instance_id)  # the instance opened for it
                        self._forget(instance_id)
                    return None
                held = Round(call.call_id, secrets.choice(self.words), call.input.max_tries)
                await self._write(instance_id, held)
            self.calls[instance_id] = call
            if held.over:  # it ended while this process was down: the call learns it now
                await self._finish(instance_id, held)
                return None
            await self._open_surface(instance_id, held)
        await call.progress({"round": "started"})
        return None  # completed when the round ends

    @tool(
        "draw-and-guess.get_drawing",
        handling="direct",
        input=DrawingInput,
        output=DrawingOutput,
        timeout_ms=30_000,
        description=(
            "The user's drawing so far, as a PNG: an artifact id, and the PNG inline "
            f"(base64, at most {MAX_INLINE_PNG // 1024} KiB; scaled down to fit)."
        ),
    )
    async def get_drawing(self, call: ToolCall[DrawingInput]) -> DrawingOutput | None:
        instance_id = call.instance_id
        async with self._lock(instance_id):
            held = await self._load(instance_id)
            drawing = None if held is None else Drawing(strokes=dict(held.drawing.strokes))
        if drawing is None:
            await call.fail(ROUND_NOT_RUNNING, "no round in this instance")
            return None
        picture = await trio.to_thread.run_sync(render, drawing)
        info = await self.app.artifacts.create(instance_id, "image/png", picture.png, "drawing.png")
        return DrawingOutput(
            artifact_id=info.artifact_id,
            png_base64=base64.b64encode(picture.png).decode(),
            width=picture.width,
            height=picture.height,
            strokes=len(drawing.strokes),
        )

    @tool(
        "draw-and-guess.guess",
        handling="operation",
        input=GuessInput,
        output=GuessOutput,
        timeout_ms=30_000,
        description=(
            "Guess the word being drawn (case and spaces do not matter). Answers whether it "
            "was right and how many tries are left; a right guess or the last wrong one ends "
            "the round."
        ),
    )
    async def guess(self, call: ToolCall[GuessInput]) -> GuessOutput | None:
        instance_id = call.instance_id
        async with self._lock(instance_id):
            held = await self._load(instance_id)
            try:
                if held is None:
                    raise RoundNotRunning
                taken = len(held.guesses)
                made = held.guess(call.call_id, call.input.word)
            except RoundNotRunning:
                await call.fail(ROUND_NOT_RUNNING, "no round is being played")
                return None
            if len(held.guesses) > taken:
                await self._write(instance_id, held)
            tries_left, outcome = held.after(made)
            # Answered before the round ends: closing the instance ends its running calls.
            await call.complete(
                GuessOutput(correct=made.correct, tries_left=tries_left, outcome=outcome)
            )
            if held.over:
                await self._finish(instance_id, held)
            else:
                await self._show(instance_id, held)
        return None

    # ------------------------------------------------------------------ hooks

    async def on_surface_event(self, event: protocol.SurfaceEvent) -> None:
        instance_id = event.instance_id
        if instance_id in self.ended:
            return
        async with self._lock(instance_id):
            held = await self._load(instance_id)
            if held is None or held.over:
                return  # no round to draw in, or over: the Surface is closing
            if event.name == STROKE_EVENT:
                if held.drawing.add(event.data):
                    await self._write(instance_id, held)
            elif event.name == CLEAR_EVENT:
                if held.drawing.clear(event.data.get("clear_id")):
                    await self._write(instance_id, held)
            elif event.name == GIVE_UP_EVENT:
                held.give_up()
                await self._write(instance_id, held)
                await self._finish(instance_id, held)

    async def on_ui_event(self, event: protocol.UiEvent) -> None:
        if event.event.get("kind") == protocol.UI_CLOSE_REQUESTED:
            await self._close_requested(event.instance_id)
            return
        if event.event.get("kind") != protocol.UI_APP_OPENED or event.instance_id in self.ended:
            return
        # The user opened the game from the Shell: its round if it has one, else a Surface
        # that says a round starts when the Agent starts one.
        async with self._lock(event.instance_id):
            held = await self._load(event.instance_id)
            if held is not None and not held.over:
                await self._open_surface(event.instance_id, held)
                return
            reply = await self.app.surfaces.request_open(
                event.instance_id, entrypoint=ENTRYPOINT, state={"phase": "idle"}
            )
            self.surfaces[event.instance_id] = reply.surface_id

    async def on_interaction_updated(self, record: protocol.InteractionRecord) -> None:
        instance_id = record.instance_id
        if record.kind != "confirm" or instance_id is None or record.asked_by != "app":
            return  # the app asks nothing else; a Surface's own question closes nothing
        if self.confirming.get(instance_id) == record.interaction_id:
            del self.confirming[instance_id]
        # Stateless on purpose: an approval told to a restarted process still closes the game.
        if record.result is not None and record.result.get("approved") is True:
            async with self._lock(instance_id):
                await self._close(instance_id)
                self._forget(instance_id)

    async def on_view_refresh(self) -> None:
        # Focus restarted: the Surfaces it held are to be opened again.
        for instance_id in list(self.surfaces):
            held = self.rounds.get(instance_id)
            if held is not None and not held.over and instance_id not in self.ended:
                await self._open_surface(instance_id, held)

    async def on_surface_closed(self, event: protocol.SurfaceClosedEvent) -> None:
        if self.surfaces.get(event.instance_id) == event.surface_id:
            del self.surfaces[event.instance_id]
        if event.reason == "instance_ended":
            self._forget(event.instance_id)

    async def on_tool_cancelled(self, call_id: str, code: str) -> None:
        for instance_id, call in list(self.calls.items()):
            if call.call_id != call_id:
                continue
            # Its round can report to no one now (expired, cancelled, its instance closed):
            # the game goes, and the chat comes back.
            del self.calls[instance_id]
            await self._withdraw_close_question(instance_id)
            if code != "app_closed":
                await self._close(instance_id)
            self._forget(instance_id)

    # ------------------------------------------------------------------ closing

    async def _close_requested(self, instance_id: str) -> None:
        """The user closes the game's tab: at once with no round in play, else once they
        confirm (`on_interaction_updated`). A close while the question is open asks nothing
        more: the game comes to the front again, where the question is."""
        async with self._lock(instance_id):
            held = await self._load(instance_id)
            if held is None or held.over:
                await self._close(instance_id)
                self._forget(instance_id)
                return
            await _ignoring(
                ErrorCode.APP_INSTANCE_NOT_FOUND,
                self.app.lifecycle.request_foreground(instance_id),
            )
            asked = await self.app.ui.find(self.confirming.get(instance_id))
            if asked is not None and asked.is_open:
                return  # still asking
            call = self.calls.get(instance_id)
            record = await self.app.ui.request(
                ConfirmRequest(
                    title="End this round?",
                    prompt="Closing the game ends the round you are drawing.",
                    approve_label="Close the game",
                    cancel_label="Keep playing",
                ),
                instance_id=instance_id,
                parent_call_id=call.call_id if call is not None and not call.final else None,
            )
            self.confirming[instance_id] = record.interaction_id

    async def _withdraw_close_question(self, instance_id: str) -> None:
        asked = self.confirming.pop(instance_id, None)
        if asked is not None:
            await _ignoring(ErrorCode.INTERACTION_NOT_FOUND, self.app.ui.cancel(asked))

    # ------------------------------------------------------------------ the round

    async def _finish(self, instance_id: str, held: Round) -> None:
        """The round is over (and written): show it, complete its start_round call, close.
        With no call in hand (this process restarted and is not handed it yet), the round
        stays until it is: closing the instance now would end the call with no result."""
        await self._show(instance_id, held)
        await self._withdraw_close_question(instance_id)  # nothing left to end
        call = self.calls.get(instance_id)
        if call is None or call.call_id != held.call_id:
            return
        if not call.final:
            await call.complete(StartOutput.model_validate(held.result()))
        await self._close(instance_id)
        self._forget(instance_id)

    def _playing_elsewhere(self, call_id: str) -> str | None:
        """The instance of a round still playing for another start_round call, if any."""
        for instance_id, held in self.rounds.items():
            call = self.calls.get(instance_id)
            if (
                not held.over
                and held.call_id != call_id
                and instance_id not in self.ended
                and call is not None
                and not call.final
            ):
                return instance_id
        return None

    async def _write(self, instance_id: str, held: Round) -> None:
        """Write the round at the revision last read. This app is its only writer: a newer
        revision (a Surface's own write) is overwritten, the round here being the truth."""
        for attempt in range(SAVE_ATTEMPTS):
            try:
                self.revisions[instance_id] = await self.app.session_data.replace(
                    instance_id, held.document(), self.revisions.get(instance_id, 0)
                )
                break
            except LineUpError as exc:
                if exc.code is not ErrorCode.STALE_REVISION or attempt == SAVE_ATTEMPTS - 1:
                    raise
            stored = await self.app.session_data.get(instance_id)
            self.revisions[instance_id] = stored.revision
        self.rounds[instance_id] = held

    async def _load(self, instance_id: str) -> Round | None:
        """The instance's round: in memory, else from its session data (this process
        restarted), else None. Hold the instance's lock."""
        if instance_id in self.ended:
            return None
        if instance_id not in self.rounds:
            try:
                stored = await self.app.session_data.get(instance_id)
            except LineUpError as exc:
                if exc.code in (ErrorCode.APP_INSTANCE_NOT_FOUND, ErrorCode.APP_SCOPE_MISMATCH):
                    return None
                raise
            self.revisions[instance_id] = stored.revision
            held = Round.from_document(stored.data)
            if held is None:
                return None
            self.rounds[instance_id] = held
        return self.rounds[instance_id]

    # ------------------------------------------------------------------ the Surface

    async def _open_surface(self, instance_id: str, held: Round) -> None:
        state = held.surface_state()
        reply = await self.app.surfaces.request_open(
            instance_id, entrypoint=ENTRYPOINT, state=state
        )
        self.surfaces[instance_id] = reply.surface_id
        if not reply.changed:  # open already (a restart): its state may be from before
            await self._show(instance_id, held)

    async def _show(self, instance_id: str, held: Round) -> None:
        surface_id = self.surfaces.get(instance_id)
        if surface_id is None:
            return
        try:
            await self.app.surfaces.update(surface_id, held.surface_state())
        except LineUpError as exc:
            if exc.code is not ErrorCode.SURFACE_NOT_FOUND:
                raise
            self.surfaces.pop(instance_id, None)

    async def _close(self, instance_id: str) -> None:
        surface_id = self.surfaces.pop(instance_id, None)
        if surface_id is not None:
            await _ignoring(
                ErrorCode.SURFACE_NOT_FOUND, self.app.surfaces.request_close(surface_id)
            )
        await _ignoring(
            ErrorCode.APP_INSTANCE_NOT_FOUND, self.app.lifecycle.request_close(instance_id)
        )

    def _forget(self, instance_id: str) -> None:
        self.ended.add(instance_id)
        for kept in (self.rounds, self.revisions, self.surfaces, self.calls, self.confirming):
            kept.pop(instance_id, None)

    def _lock(self, instance_id: str) -> trio.Lock:
        return self._locks.setdefault(instance_id, trio.Lock())


async def _ignoring(code: ErrorCode, request: Awaitable[object]) -> None:
    try:
        await request
    except LineUpError as exc:
        if exc.code is not code:
            raise
