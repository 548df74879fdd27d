"""The drill's Surface app (`app_scope = drill-pad`): instances that show a Surface, for the
`surfaces` exercise (`ops/drill/_surfaces.py`).

`lineup drill` loads it with `--dev-app` beside the drill app, sandboxed and importing only
the SDK. `drill-pad.open` (launch) opens an instance, opens its Surface (`web/index.html`, the
`pad` entrypoint) and stays running until the user closes the instance. The app itself never
writes the instance's session data: the Surface does, through the Shell's bridge, and the drill
checks that no write the runtime acknowledged is lost. When focus restarts it forgets the
Surfaces it held, so the app opens them again (`on_view_refresh`: the same ids); a restart of
this process re-runs the open call, which opens the same Surface again (idempotent).

A second app, rather than the drill app's own Surface, because the runtime's permission prompt
is per app: a Deny hushes that app's requests of the capability for 30 s and answers its other
waiting prompts too. The Surface's requests (allowed, left to expire) and the drill app's
(denied, dismissed, hushed) then end the way each script says.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, ErrorCode, LineUpError, MiniApp, ToolCall, tool
from lineup.sdk import protocol as p
from lineup.sdk.manifest import Entrypoint

__all__ = ["DrillPad"]

ENTRYPOINT = "pad"


class Numbered(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int = Field(ge=0, le=10**9)


class DrillPad(MiniApp):
    app_info = AppInfo(
        app_scope="drill-pad",
        version="1.0.0",
        kind="installed",
        entrypoints=(Entrypoint(id=ENTRYPOINT, kind="surface", document="index.html"),),
        requested_capabilities=("notification.show",),
    )

    async def start(self, app: AppContext) -> None:
        self.app = app
        self.open: dict[str, int] = {}  # instance id -> its number, while it is live

    @tool(
        "drill-pad.open",
        handling="launch",
        input=Numbered,
        output=Numbered,
        timeout_ms=3_600_000,  # longer than a drill: the capability pad stays open throughout
        description="Open an instance with the pad Surface; it runs until the user closes it.",
    )
    async def open_pad(self, call: ToolCall[Numbered]) -> Numbered | None:
        self.open[call.instance_id] = call.input.n
        await self._surface(call.instance_id)
        await call.progress({"opened": call.input.n})
        return None  # the call ends when the instance is closed (cancelled: app_closed)

    async def _surface(self, instance_id: str) -> None:
        try:
            await self.app.surfaces.request_open(
                instance_id, entrypoint=ENTRYPOINT, state={"n": self.open.get(instance_id, 0)}
            )
        except LineUpError as exc:
            if exc.code is not ErrorCode.APP_INSTANCE_NOT_FOUND:
                raise
            self.open.pop(instance_id, None)  # closed meanwhile

    async def on_view_refresh(self) -> None:
        # Focus restarted: the Surfaces it held are to be opened again (the same ids).
        for instance_id in list(self.open):
            await self._surface(instance_id)

    async def on_surface_closed(self, event: p.SurfaceClosedEvent) -> None:
        if event.reason == "instance_ended":
            self.open.pop(event.instance_id, None)

    async def on_tool_cancelled(self, call_id: str, code: str) -> None:
        pass  # the instance's end (on_surface_closed) is what forgets it
