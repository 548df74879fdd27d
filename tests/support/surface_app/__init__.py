"""A MiniApp with a Surface, for the tests of Surfaces through the real tree (and the Shell's
browser tests): `surfacer.open` opens its instance's Surface from the `board` entrypoint; the
Surface's `note.add` events are added to the instance's session data (a compare-and-set write,
retried on `stale_revision`); every newer revision it hears of (its own writes and the
Surface's) it shows in the Surface's state as `seen`. Its package is laid out as a development
app's: `manifest.json` (`lineup app manifest`) beside `web/`, the Surface's files."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, ErrorCode, LineUpError, MiniApp, ToolCall, tool
from lineup.sdk import protocol as p
from lineup.sdk.manifest import Entrypoint

__all__ = ["SurfaceApp"]

MAX_NOTES = 100


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OpenInput(_Model):
    mode: Literal["open", "future", "reach"] = "open"
    other_surface: str | None = Field(default=None, max_length=250)  # another app's Surface


class OpenOutput(_Model):
    surface_id: str | None = Field(default=None, max_length=250)
    codes: tuple[str, ...] = ()


class SurfaceApp(MiniApp):
    app_info = AppInfo(
        app_scope="surfacer",
        version="1.0.0",
        kind="bundled-reference",
        entrypoints=(
            Entrypoint(id="board", kind="surface", document="index.html", events=("note.add",)),
            Entrypoint(id="future", kind="surface", surface_version=2),
        ),
    )

    async def start(self, app: AppContext) -> None:
        self.app = app
        # Also after a restart of this process: the Surface lives on in focus, and the app
        # hears of its session data again.
        await app.session_data.subscribe(app.instance_id, self._seen)

    async def _seen(self, snapshot: p.SessionDataSnapshot) -> None:
        try:
            await self.app.surfaces.update(
                "lu:surface:" + snapshot.instance_id, {"seen": snapshot.revision}
            )
        except LineUpError:
            pass  # no Surface open (yet): nothing to show it in

    async def on_view_refresh(self) -> None:
        # Focus restarted: it lost its Surfaces, the app opens its own again.
        await self.app.surfaces.request_open(self.app.instance_id, state={"seen": 0})

    @tool("surfacer.open", handling="launch", input=OpenInput, output=OpenOutput, timeout_ms=60_000)
    async def open(self, call: ToolCall[OpenInput]) -> OpenOutput:
        surfaces = self.app.surfaces
        if call.input.mode == "open":
            reply = await surfaces.request_open(
                call.instance_id, state={"seen": 0}, tool_input={"call": call.call_id}
            )
            return OpenOutput(surface_id=reply.surface_id)
        codes: list[str] = []
        if call.input.mode == "future":
            try:
                await surfaces.request_open(call.instance_id, entrypoint="future")
            except LineUpError as exc:
                codes.append(exc.code.value)
        else:
            other = call.input.other_surface or ""
            for attempt in (surfaces.update(other, {"x": 1}), surfaces.request_close(other)):
                try:
                    await attempt
                    codes.append("ok")
                except LineUpError as exc:
                    codes.append(exc.code.value)
        return OpenOutput(codes=tuple(codes))

    async def on_surface_event(self, event: p.SurfaceEvent) -> None:
        text = str(event.data.get("text", ""))[:200]
        for _ in range(5):  # another writer (the Surface) may come first: re-read, again
            current = await self.app.session_data.get(event.instance_id)
            notes = list((current.data or {}).get("notes", []))[-MAX_NOTES:]
            try:
                await self.app.session_data.replace(
                    event.instance_id, {"notes": [*notes, text]}, current.revision
                )
                return
            except LineUpError as exc:
                if exc.code is not ErrorCode.STALE_REVISION:
                    raise
