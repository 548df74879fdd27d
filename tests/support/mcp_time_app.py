"""A MiniApp whose Surface is an MCP App's UI, unchanged: the ext-apps project's "Get Time"
example (`dist/mcp-app.html` of `@modelcontextprotocol/server-basic-vanillajs`, fetched pinned
by the test into the app's `web/` folder). Its one tool, `gettime.get-time`, does what that
example server's `get-time` does: answers the time, here by opening the Surface with the call's
input and giving it the result, which the page shows (tests/browser/test_mcp_app_surface_e2e.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, MiniApp, ToolCall, tool
from lineup.sdk.manifest import Entrypoint
from lineup.sdk.mcp_apps import McpAppUi

__all__ = ["MCP_APP_PACKAGE", "TimeApp"]

MCP_APP_PACKAGE: Final = (
    "@modelcontextprotocol/server-basic-vanillajs",
    "2.0.3",
    "sha512-SGqoYRPkZ83b9VTJGdGzDHqL7+OCzTcEunkA2h7lJr5xpWxqMO43OIBkYFgYLfptxLMbB6K6cVX7dISFXv5xDA==",
)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TimeInput(_Model):
    pass


class TimeOutput(_Model):
    time: str = Field(max_length=64)


class TimeApp(MiniApp):
    app_info = AppInfo(
        app_scope="gettime",
        version="1.0.0",
        kind="bundled-reference",
        requested_capabilities=("artifact.save",),  # the page's `ui/download-file`
        entrypoints=(
            Entrypoint(id="ui", kind="surface", document="index.html", mcp_app=McpAppUi()),
        ),
    )

    async def start(self, app: AppContext) -> None:
        self.app = app

    @tool("gettime.get-time", handling="launch", input=TimeInput, output=TimeOutput)
    async def get_time(self, call: ToolCall[TimeInput]) -> TimeOutput:
        now = datetime.now(UTC).isoformat()
        surface = await self.app.surfaces.request_open(call.instance_id, state={}, tool_input={})
        await self.app.surfaces.update(surface.surface_id, tool_result={"time": now})
        return TimeOutput(time=now)
