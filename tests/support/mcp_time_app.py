"""A MiniApp whose Surface is an MCP App's UI, unchanged: the ext-apps project's "Get Time"
example (`dist/mcp-app.html` of `@modelcontextprotocol/server-basic-vanillajs`, fetched pinned
by the test into the app's `web/` folder). Its one tool, `gettime.get-time`, does what that
example server's `get-time` does: answers the time. It is linked to the page (`ui`, the spec's
`_meta.ui.resourceUri`), so the runtime, not the app, opens the Surface for the Agent's call
and gives the page the call's input and its result, which the page shows; the page's own
"Get Server Time" button calls it too (`tools/call`, as the app)
(tests/browser/test_mcp_app_surface_e2e.py). `SlowTimeApp`'s tool never answers: its calls
end only by their deadline (2 s) or the app's close; `HeldTimeApp`'s likewise, after the default
deadline. `ModelOnlyTimeApp`'s tool is the Agent's alone
(`visibility` `model`): the page's own call of it is refused."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from lineup.facts.npm_pins import BASIC_VANILLAJS
from lineup.sdk import AppContext, AppInfo, MiniApp, ToolCall, tool
from lineup.sdk.manifest import Entrypoint, ToolUi
from lineup.sdk.mcp_apps import McpAppUi

__all__ = [
    "MCP_APP_PACKAGE",
    "MCP_REACT_APP_PACKAGE",
    "HeldTimeApp",
    "ModelOnlyTimeApp",
    "SlowTimeApp",
    "TimeApp",
]

MCP_APP_PACKAGE: Final = (  # the pin `make run`'s catalog packs too: written once, there
    BASIC_VANILLAJS.name,
    BASIC_VANILLAJS.version,
    BASIC_VANILLAJS.integrity,
)

# The same example built with React (`dist/mcp-app.html`: the page's code in two inline scripts).
MCP_REACT_APP_PACKAGE: Final = (
    "@modelcontextprotocol/server-basic-react",
    "2.0.3",
    "sha512-SDCKg2uAA6EfK2ZoWfuPKNWzwgZ3zNjiHzDf+7+Gr3NMWd3c1no+7iczaSJY4BO7I3T3tYrg5OkcJ+rvzmX/MA==",
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

    @tool(
        "gettime.get-time",
        handling="launch",
        input=TimeInput,
        output=TimeOutput,
        ui=ToolUi(entrypoint="ui"),
    )
    async def get_time(self, call: ToolCall[TimeInput]) -> TimeOutput:
        return TimeOutput(time=datetime.now(UTC).isoformat())


class SlowTimeApp(TimeApp):
    """The same app, whose tool keeps its calls (it completes none: `None`, for later)."""

    @tool(
        "gettime.get-time",
        handling="launch",
        input=TimeInput,
        output=TimeOutput,
        timeout_ms=2_000,
        ui=ToolUi(entrypoint="ui"),
    )
    async def get_time(self, call: ToolCall[TimeInput]) -> TimeOutput | None:
        return None


class ModelOnlyTimeApp(TimeApp):
    """The same app, whose tool only the Agent may call."""

    @tool(
        "gettime.get-time",
        handling="launch",
        input=TimeInput,
        output=TimeOutput,
        ui=ToolUi(entrypoint="ui", visibility=("model",)),
    )
    async def get_time(self, call: ToolCall[TimeInput]) -> TimeOutput:
        return TimeOutput(time=datetime.now(UTC).isoformat())


class HeldTimeApp(TimeApp):
    """The same app, whose tool keeps its calls, with the default deadline."""

    @tool(
        "gettime.get-time",
        handling="launch",
        input=TimeInput,
        output=TimeOutput,
        ui=ToolUi(entrypoint="ui"),
    )
    async def get_time(self, call: ToolCall[TimeInput]) -> TimeOutput | None:
        return None
