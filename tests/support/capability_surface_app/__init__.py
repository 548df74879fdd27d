"""A MiniApp whose Surface asks for capabilities over the bridge, for the Shell's browser tests
of the runtime's own permission prompt (tests/browser/test_capabilities_e2e.py):
`capsurface.open` opens its instance's Surface (the app comes in front, as a launch does). The
Surface's page (`web/app.js`, a classic script) does the bridge's handshake itself and offers
the test `window.requestCapability(...)`, and `window.attack()`: what a hostile page would try
against the prompt (cover the page, reach into the Shell's DOM, post a forged answer). The app
declares `notification.show`, `file.open` and `artifact.save`. Its package is laid out as a
development app's: `manifest.json` (`lineup app manifest`) beside `web/`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, MiniApp, ToolCall, tool
from lineup.sdk.manifest import Entrypoint

__all__ = ["CapabilitySurfaceApp"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OpenInput(_Model):
    pass


class OpenOutput(_Model):
    surface_id: str = Field(max_length=250)


class CapabilitySurfaceApp(MiniApp):
    app_info = AppInfo(
        app_scope="capsurface",
        version="1.0.0",
        kind="bundled-reference",
        requested_capabilities=("notification.show", "file.open", "artifact.save"),
        entrypoints=(Entrypoint(id="board", kind="surface", document="index.html"),),
    )

    async def start(self, app: AppContext) -> None:
        self.app = app

    async def on_view_refresh(self) -> None:
        await self.app.surfaces.request_open(self.app.instance_id, state={})

    @tool(
        "capsurface.open", handling="launch", input=OpenInput, output=OpenOutput, timeout_ms=60_000
    )
    async def open(self, call: ToolCall[OpenInput]) -> OpenOutput:
        reply = await self.app.surfaces.request_open(call.instance_id, state={})
        return OpenOutput(surface_id=reply.surface_id)
