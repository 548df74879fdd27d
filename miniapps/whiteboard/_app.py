"""The Whiteboard: a board the user draws on in a Surface, handed to the Agent as a PNG.

`whiteboard.open` (handling `launch`) opens the instance's Surface (`web/`: the canvas, its
tools and a Submit button) on a board kept in the instance's session data, and completes when
the board is submitted: `{status: completed, artifact_id}` (the PNG) and `artifacts`, the
metadata of the PNG and the JSON (id, name, media type, size, SHA-256). `whiteboard.submit`
(handling `operation`) submits it from the Agent's side and answers the same artifacts and a
summary. Either way the user first `confirm`s (`sdk.ui.request`, tied to the open call); an
approval renders the PNG (`_png`), makes the PNG and JSON artifacts, completes the open call,
and closes the Surface and the instance (the chat is back, the sub-session folded); a refusal
leaves the board as it is (the submit fails `cancelled_by_user`).

The Surface's Export button saves the board as a PNG file through the runtime: a
`board.export` event (with an id the Surface made, so a repeat makes nothing new) renders the
PNG as an artifact and asks for the `artifact.save` capability (the runtime asks the user, then
the Shell downloads the artifact); the outcome (`completed`, `cancelled_by_user`,
`permission_denied`, … and its code) goes back to the Surface as its state's `export`. Every
artifact is named for the user from the board's title and the action that made it
(`artifact_name`: `Kitchen plan - exported.png`, `Kitchen plan - submitted.json`). An
instance the user opened from the Shell (`#open=whiteboard`: no tool call comes for it) is told
`app.opened` and gets a board of its own, drawn and exported the same way.

The Surface draws at pointer rate on its own and sends batched `board.patch` events; each op
is applied here once (`_board`: dedupe by op id) and written with the revision last read, a
`stale_revision` being answered by re-reading and applying again. The Surface learns what was
applied from the session data revisions it subscribed to, so neither a reload of the iframe
or the Shell nor a restart of this process loses a stroke: the board is the session data.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal

import trio
from pydantic import ValidationError

from lineup.sdk import AppContext, AppInfo, ErrorCode, LineUpError, MiniApp, ToolCall, tool
from lineup.sdk import protocol as p
from lineup.sdk.interactions import ConfirmRequest
from lineup.sdk.manifest import Entrypoint

from ._board import Board, parse_initial
from ._contract import (
    ArtifactMeta,
    BoardSummary,
    InitialBoard,
    OpenInput,
    OpenOutput,
    SubmitInput,
    SubmitOutput,
)
from ._png import render_png

__all__ = ["Whiteboard"]

ENTRYPOINT: Final = "board"
PATCH_EVENT: Final = "board.patch"
SUBMIT_EVENT: Final = "board.submit"
EXPORT_EVENT: Final = "board.export"
EXPORT_PURPOSE: Final = "Save the board as a PNG file on your computer."
OPENED_TITLE: Final = "Whiteboard"
SAVE_ATTEMPTS: Final = 3  # a write that meets a newer revision re-reads and applies again
CONFIRM_WAIT_S: Final = 590.0  # the submit call waits this long for the user's answer
SUBMIT_TIMEOUT_MS: Final = 600_000
LABEL_MAX: Final = 80
TITLE_IN_NAME: Final = 100  # of a board's title in its artifacts' names (at most 128)
_EXPORT_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")


class Whiteboard(MiniApp):
    app_info = AppInfo(
        app_scope="whiteboard",
        version="1.0.0",
        kind="bundled-reference",
        surface_required=True,
        entrypoints=(
            Entrypoint(
                id=ENTRYPOINT,
                kind="surface",
                default_eligible=True,
                document="index.html",
                surface_version=1,
                events=(PATCH_EVENT, SUBMIT_EVENT, EXPORT_EVENT),
            ),
        ),
        requested_capabilities=("artifact.save",),
    )

    def __init__(self) -> None:
        self.boards: dict[str, Board] = {}  # instance_id -> its board as last saved
        self.revisions: dict[str, int] = {}  # instance_id -> the revision that board is
        self.open_calls: dict[str, ToolCall[OpenInput]] = {}
        self.surfaces: dict[str, str] = {}  # instance_id -> its open Surface
        self.confirming: dict[str, str] = {}  # instance_id -> its submit confirmation asked
        # Confirmations a submit call asked or waits on (interaction -> instance): that call
        # acts on the answer, never the hook, which hears of it too (maybe while the call is
        # still making the artifacts: closing the instance then would end the call).
        self.awaited: dict[str, str] = {}
        self.submitted: dict[str, SubmitOutput] = {}
        self.ended: set[str] = set()  # instances closed: never restored again
        self.subscribed: set[str] = set()
        self.exports: dict[tuple[str, str], dict[str, Any]] = {}  # (instance, export id) -> outcome
        self._locks: dict[str, trio.Lock] = {}

    async def start(self, app: AppContext) -> None:
        self.app = app

    # ------------------------------------------------------------------ tools

    @tool(
        "whiteboard.open",
        handling="launch",
        input=OpenInput,
        output=OpenOutput,
        timeout_ms=3_600_000,
        requires_foreground=True,
        description=(
            "Open a whiteboard for the user to draw on (pen, colours, eraser, text boxes, "
            "undo). Completes when the board is submitted, with the PNG's artifact id and "
            "the metadata of the PNG and JSON artifacts."
        ),
    )
    async def open(self, call: ToolCall[OpenInput]) -> OpenOutput | None:
        instance_id = call.instance_id
        try:
            initial = parse_initial(_initial_items(call.input.initial))
        except (ValidationError, ValueError):
            await call.fail("tool_input_invalid", "a stroke is not on the canvas")
            return None
        async with self._lock(instance_id):
            # A restarted process (or a re-delivered call) finds the board as it was drawn.
            board = await self._load(instance_id)
            if board is None or board.board_id != call.input.board_id:
                board, result = Board.initial(call.input.board_id, call.input.title, initial)
                if result.refused:
                    await call.fail("quota_exceeded", "the initial board is too large")
                    return None
                self.revisions.setdefault(instance_id, 0)
                await self._write(instance_id, board)
        self.open_calls[instance_id] = call
        await self._subscribe(instance_id)
        await self._open_surface(instance_id, board)
        await call.progress({"opened": call.input.board_id})
        return None  # completed when the board is submitted

    @tool(
        "whiteboard.submit",
        handling="operation",
        input=SubmitInput,
        output=SubmitOutput,
        timeout_ms=SUBMIT_TIMEOUT_MS,
        description=(
            "Submit the open board (the user confirms first): answers the PNG's and the "
            "JSON's artifact ids, their metadata and a summary of the board."
        ),
    )
    async def submit(self, call: ToolCall[SubmitInput]) -> SubmitOutput | None:
        instance_id = call.instance_id
        done = self.submitted.get(instance_id)
        if done is not None:
            return done
        board = await self._board(instance_id)
        if board is None or board.board_id != call.input.board_id:
            await call.fail("app_instance_not_found", "no such board open")
            return None
        interaction_id = await self._ask_confirm(instance_id, board)
        self.awaited[interaction_id] = instance_id
        try:
            record = await self.app.ui.wait(interaction_id, timeout=CONFIRM_WAIT_S)
        except trio.TooSlowError:
            await self.app.ui.cancel(interaction_id, "deadline_exceeded")
            await call.fail("deadline_exceeded", "no answer")
            return None
        self.confirming.pop(instance_id, None)
        if not _approved(record):
            await self._set_phase(instance_id, "drawing")
            await call.fail("cancelled_by_user", "the user kept the board open")
            return None
        output = await self._submitted(instance_id, interaction_id)
        await call.complete(output)  # before the instance closes, which ends its calls
        await self._finish(instance_id, output)
        return None

    @tool(
        "whiteboard.show",
        handling="foreground",
        input=SubmitInput,
        output=BoardSummary,
        idempotent=True,
        timeout_ms=10_000,
        description=(
            "Bring the open board back in front of the user (it never opens one); answers a "
            "summary of what is drawn so far."
        ),
    )
    async def show(self, call: ToolCall[SubmitInput]) -> BoardSummary | None:
        # The runtime brought the instance forward before handing the call over (`foreground`).
        board = await self._board(call.instance_id)
        if board is None or board.board_id != call.input.board_id:
            await call.fail("app_instance_not_found", "no such board open")
            return None
        return BoardSummary(**board.summary())

    # ------------------------------------------------------------------ hooks

    async def on_surface_event(self, event: p.SurfaceEvent) -> None:
        instance_id = event.instance_id
        if instance_id in self.ended or instance_id in self.submitted:
            return
        if event.name == PATCH_EVENT:
            await self._patch(instance_id, event.data.get("ops"))
        elif event.name == SUBMIT_EVENT:
            board = await self._board(instance_id)
            if board is not None:
                await self._ask_confirm(instance_id, board)
        elif event.name == EXPORT_EVENT:
            await self._export(instance_id, event.data.get("export_id"))

    async def on_ui_event(self, event: p.UiEvent) -> None:
        if event.event.get("kind") != p.UI_APP_OPENED:
            return
        # The user opened the Whiteboard from the Shell: a board of the instance's own (or
        # the one its session data holds), in a Surface. Opened again: the same board.
        instance_id = event.instance_id
        if instance_id in self.ended or instance_id in self.submitted:
            return
        async with self._lock(instance_id):
            board = await self._load(instance_id)
            if board is None:
                board_id = "board-" + hashlib.sha256(instance_id.encode()).hexdigest()[:12]
                board, _ = Board.initial(board_id, OPENED_TITLE, [])
                self.revisions.setdefault(instance_id, 0)
                await self._write(instance_id, board)
        await self._subscribe(instance_id)
        await self._open_surface(instance_id, board)

    async def on_interaction_updated(self, record: p.InteractionRecord) -> None:
        instance_id = record.instance_id
        if record.kind != "confirm" or instance_id is None or record.asked_by != "app":
            return  # only the app's own submit confirmation submits (never its Surface's)
        if record.interaction_id in self.awaited:
            return  # the submit call that asked it acts on the answer
        if self.confirming.get(instance_id) == record.interaction_id:
            del self.confirming[instance_id]
        if instance_id in self.ended:
            return
        if _approved(record):
            if await self._board(instance_id) is not None:
                await self._finish(
                    instance_id, await self._submitted(instance_id, record.interaction_id)
                )
        elif instance_id in self.surfaces:
            await self._set_phase(instance_id, "drawing")

    async def on_surface_closed(self, event: p.SurfaceClosedEvent) -> None:
        if self.surfaces.get(event.instance_id) == event.surface_id:
            del self.surfaces[event.instance_id]
        if event.reason == "instance_ended":
            self._forget(event.instance_id)

    async def on_view_refresh(self) -> None:
        # Focus restarted: the Surfaces it held are to be opened again (the same ids).
        for instance_id in list(self.surfaces):
            board = self.boards.get(instance_id)
            if board is not None and instance_id not in self.ended:
                await self._open_surface(instance_id, board)

    async def on_tool_cancelled(self, call_id: str, code: str) -> None:
        for instance_id, call in list(self.open_calls.items()):
            if call.call_id == call_id:
                del self.open_calls[instance_id]
                if code == "app_closed":  # its instance is gone: nothing left to draw on
                    self._forget(instance_id)

    # ------------------------------------------------------------------ the board

    async def _patch(self, instance_id: str, ops: Any) -> None:
        async with self._lock(instance_id):
            board = await self._load(instance_id)
            if board is None:
                return  # no board yet (its open has not written it): the Surface re-sends
            await self._mutate(instance_id, lambda b: b.apply(ops).changed)

    async def _mutate(self, instance_id: str, change: Callable[[Board], bool]) -> None:
        """Apply `change` to the board and write it at the revision it was read at; on a
        newer revision (another writer: a Surface's own replace), re-read and apply again."""
        for attempt in range(SAVE_ATTEMPTS):
            board = self._copy(instance_id)
            if not change(board):
                return
            try:
                await self._write(instance_id, board)
                return
            except LineUpError as exc:
                if exc.code is not ErrorCode.STALE_REVISION or attempt == SAVE_ATTEMPTS - 1:
                    raise
            stored = await self.app.session_data.get(instance_id)
            self.revisions[instance_id] = stored.revision
            fresh = Board.from_document(stored.data)
            if fresh is not None:  # else the other writer wrote no board: ours stands
                self.boards[instance_id] = fresh

    async def _write(self, instance_id: str, board: Board) -> None:
        self.revisions[instance_id] = await self.app.session_data.replace(
            instance_id, board.document(), self.revisions.get(instance_id, 0)
        )
        self.boards[instance_id] = board

    def _copy(self, instance_id: str) -> Board:
        held = self.boards[instance_id]
        copy = Board.from_document(held.document())
        assert copy is not None  # a board's own document always parses back
        return copy

    async def _board(self, instance_id: str) -> Board | None:
        async with self._lock(instance_id):
            return await self._load(instance_id)

    async def _load(self, instance_id: str) -> Board | None:
        """The instance's board: in memory, else from its session data (this process
        restarted), else None. Hold the instance's lock."""
        if instance_id in self.ended:
            return None
        if instance_id not in self.boards:
            try:
                stored = await self.app.session_data.get(instance_id)
            except LineUpError as exc:
                if exc.code in (ErrorCode.APP_INSTANCE_NOT_FOUND, ErrorCode.APP_SCOPE_MISMATCH):
                    return None
                raise
            self.revisions[instance_id] = stored.revision
            board = Board.from_document(stored.data)
            if board is None:
                return None
            self.boards[instance_id] = board
        return self.boards[instance_id]

    async def _subscribe(self, instance_id: str) -> None:
        if instance_id in self.subscribed:
            return
        self.subscribed.add(instance_id)
        await self.app.session_data.subscribe(instance_id, self._on_session_data)

    async def _on_session_data(self, snapshot: p.SessionDataSnapshot) -> None:
        # Only another writer's revision is news: ours is known the moment it is written.
        instance_id = snapshot.instance_id
        if snapshot.revision <= self.revisions.get(instance_id, 0) or instance_id in self.ended:
            return
        board = Board.from_document(snapshot.data)
        if board is not None:
            self.boards[instance_id] = board
            self.revisions[instance_id] = snapshot.revision

    # ------------------------------------------------------------------ the Surface

    async def _open_surface(self, instance_id: str, board: Board) -> None:
        reply = await self.app.surfaces.request_open(
            instance_id,
            entrypoint=ENTRYPOINT,
            state={"board_id": board.board_id, "title": board.title, "phase": "drawing"},
            tool_input={"board_id": board.board_id, "title": board.title},
        )
        self.surfaces[instance_id] = reply.surface_id

    async def _set_phase(self, instance_id: str, phase: str) -> None:
        surface_id = self.surfaces.get(instance_id)
        if surface_id is None:
            return
        try:
            await self.app.surfaces.update(surface_id, {"phase": phase})
        except LineUpError as exc:
            if exc.code is not ErrorCode.SURFACE_NOT_FOUND:
                raise
            self.surfaces.pop(instance_id, None)

    # ------------------------------------------------------------------ exporting

    async def _export(self, instance_id: str, export_id: Any) -> None:
        """Render the board as a PNG artifact and ask the runtime to save it (`artifact.save`:
        the user confirms in the runtime's own prompt, then downloads it); the outcome goes to
        the Surface. An export id seen before answers its outcome again and makes nothing."""
        if not isinstance(export_id, str) or not _EXPORT_ID.fullmatch(export_id):
            return
        done = self.exports.get((instance_id, export_id))
        if done is not None:
            await self._set_export(instance_id, done)
            return
        board = await self._board(instance_id)
        if board is None:
            return
        # (A state patch merges: None takes away what an earlier export left.)
        saving = {"status": "saving", "code": None, "artifact_id": None, "sha256": None}
        await self._set_export(instance_id, {"export_id": export_id, **saving})
        png = await trio.to_thread.run_sync(_render, list(board.items.values()))
        info = await self.app.artifacts.create(
            instance_id,
            "image/png",
            png,
            artifact_name(board.title, "exported", ".png"),
            request_id=_request_id(f"export\x00{instance_id}", export_id),
        )
        result = await self.app.capabilities.request(
            "artifact.save",
            EXPORT_PURPOSE,
            {"artifact_id": info.artifact_id},
            instance_id=instance_id,
            request_id=_request_id(f"save\x00{instance_id}", export_id),
        )
        outcome = {
            "export_id": export_id,
            "status": result.status,
            "code": result.code,
            "artifact_id": info.artifact_id,
            "sha256": info.sha256,
        }
        self.exports[(instance_id, export_id)] = outcome
        await self._set_export(instance_id, outcome)

    async def _set_export(self, instance_id: str, outcome: dict[str, Any]) -> None:
        surface_id = self.surfaces.get(instance_id)
        if surface_id is None:
            return
        try:
            await self.app.surfaces.update(surface_id, {"export": outcome})
        except LineUpError as exc:
            if exc.code is not ErrorCode.SURFACE_NOT_FOUND:
                raise
            self.surfaces.pop(instance_id, None)

    # ------------------------------------------------------------------ submitting

    async def _ask_confirm(self, instance_id: str, board: Board) -> str:
        """The submit confirmation of the instance: the one still open, else a new one."""
        asked = await self.app.ui.find(self.confirming.get(instance_id))
        if asked is not None and asked.is_open:
            return asked.interaction_id
        summary = board.summary()
        call = self.open_calls.get(instance_id)
        record = await self.app.ui.request(
            ConfirmRequest(
                kind="confirm",
                title="Submit this board?",
                prompt=(
                    f"“{board.title}” ({summary['strokes']} strokes, "
                    f"{summary['text_boxes']} text boxes) goes to the Agent as a picture."
                ),
                approve_label="Submit",
                cancel_label="Keep drawing",
            ),
            instance_id=instance_id,
            parent_call_id=call.call_id if call is not None and not call.final else None,
        )
        self.confirming[instance_id] = record.interaction_id
        await self._set_phase(instance_id, "confirming")
        return record.interaction_id

    async def _submitted(self, instance_id: str, key: str) -> SubmitOutput:
        """Render the board and make its artifacts, once (`key`, the approval, names the
        artifacts' requests: a retry, or a second path to the same approval, makes none)."""
        async with self._lock(instance_id):
            done = self.submitted.get(instance_id)
            if done is not None:
                return done
            board = await self._load(instance_id)
            if board is None:
                raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, "no board")
            await self._set_phase(instance_id, "submitting")
            items = list(board.items.values())
            png = await trio.to_thread.run_sync(_render, items)
            png_info = await self.app.artifacts.create(
                instance_id,
                "image/png",
                png,
                artifact_name(board.title, "submitted", ".png"),
                request_id=_request_id(key, "png"),
            )
            document = json.dumps(
                board.document()["board"], separators=(",", ":"), ensure_ascii=False
            ).encode()
            json_info = await self.app.artifacts.create(
                instance_id,
                "application/json",
                document,
                artifact_name(board.title, "submitted", ".json"),
                request_id=_request_id(key, "json"),
            )
            done = SubmitOutput(
                artifact_id=png_info.artifact_id,
                json_artifact_id=json_info.artifact_id,
                summary=BoardSummary(**board.summary()),
                artifacts=[_meta(png_info), _meta(json_info)],
            )
            self.submitted[instance_id] = done
            return done

    async def _finish(self, instance_id: str, output: SubmitOutput) -> None:
        call = self.open_calls.pop(instance_id, None)
        if call is not None and not call.final:
            await call.complete(
                OpenOutput(
                    status="completed",
                    artifact_id=output.artifact_id,
                    artifacts=output.artifacts,
                )
            )
        surface_id = self.surfaces.pop(instance_id, None)
        if surface_id is not None:
            closing = self.app.surfaces.request_close(surface_id)
            await _ignoring(ErrorCode.SURFACE_NOT_FOUND, closing)
        await _ignoring(
            ErrorCode.APP_INSTANCE_NOT_FOUND, self.app.lifecycle.request_close(instance_id)
        )
        self._forget(instance_id)

    def _forget(self, instance_id: str) -> None:
        self.ended.add(instance_id)
        for kept in (self.boards, self.revisions, self.surfaces, self.confirming):
            kept.pop(instance_id, None)
        for key in [k for k in self.exports if k[0] == instance_id]:
            del self.exports[key]
        self.open_calls.pop(instance_id, None)
        for interaction_id, owner in list(self.awaited.items()):
            if owner == instance_id:
                del self.awaited[interaction_id]

    def _lock(self, instance_id: str) -> trio.Lock:
        return self._locks.setdefault(instance_id, trio.Lock())


def _render(items: list[dict[str, Any]]) -> bytes:
    png = render_png(items)
    if len(png) > p.MAX_ARTIFACT_BYTES:  # a very busy board: half the size in each direction
        png = render_png(items, scale=2)
    return png


def _meta(info: p.ArtifactInfo) -> ArtifactMeta:
    return ArtifactMeta.model_validate(
        info.model_dump(include={"artifact_id", "name", "media_type", "size", "sha256"})
    )


def _initial_items(initial: InitialBoard | None) -> list[dict[str, Any]]:
    if initial is None:
        return []
    ops: list[dict[str, Any]] = [
        {"op_id": f"initial-s{n}", "kind": "stroke", **s.model_dump()}
        for n, s in enumerate(initial.strokes)
    ]
    ops += [
        {"op_id": f"initial-t{n}", "kind": "text", **t.model_dump()}
        for n, t in enumerate(initial.text_boxes)
    ]
    return ops


def _approved(record: p.InteractionRecord) -> bool:
    return record.result is not None and record.result.get("approved") is True


def artifact_name(title: str, action: Literal["exported", "submitted"], extension: str) -> str:
    """An artifact's name as the user reads it on its card and as the file it downloads as:
    the board's title and the action that made it (`Kitchen plan - exported.png`). The title
    loses what a name may not hold (a path separator, a control character) and is cut at
    `TITLE_IN_NAME` characters; an empty one is the Whiteboard's own title."""
    cleaned = "".join(" " if _not_in_name(ch) else ch for ch in title)
    shown = " ".join(cleaned.split()).strip(" .")[:TITLE_IN_NAME].rstrip(" .")
    return f"{shown or OPENED_TITLE} - {action}{extension}"


def _not_in_name(ch: str) -> bool:
    return ch in "/\\" or unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp"}


def _request_id(key: str, part: str) -> str:
    return hashlib.sha256(f"{key}\x00{part}".encode()).hexdigest()[:32]


async def _ignoring(code: ErrorCode, request: Awaitable[object]) -> None:
    try:
        await request
    except LineUpError as exc:
        if exc.code is not code:
            raise
