"""A page of our own on the published ext-apps `App` class (issue 30): the app behind it.

The page (`web/index.html`, `web/page.js`) imports the class from `app-with-deps.js`, the
self-contained build npm ships in `@modelcontextprotocol/ext-apps` (`dist/src/`), which the test
copies beside it, pinned and checked (`EXT_APPS_PACKAGE`): nothing of it is vendored here. The
app has two tools linked to the page: `extpage.echo`, the Agent's (and the page's), and
`extpage.add`, the page's alone (`visibility` `app`: never in the Agent's inventory).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, MiniApp, ToolCall, tool
from lineup.sdk.manifest import Entrypoint, ToolUi
from lineup.sdk.mcp_apps import McpAppUi

__all__ = ["EXT_APPS_PACKAGE", "WEB", "ExtAppsPageApp"]

EXT_APPS_PACKAGE: Final = (
    "@modelcontextprotocol/ext-apps",
    "2.0.4",
    "sha512-B+PcbuGiaf0e5I3uy4iO5tS3Abo+5w8JvZFzHMzQdq9yVwP836zJkw2+KCGOQ0r4TM1fuQi4JdnbuWjkS4aBvg==",
)
WEB: Final = Path(__file__).parent / "web"  # the page's own files (the class is copied beside)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EchoInput(_Model):
    text: str = Field(max_length=200)


class EchoOutput(_Model):
    echo: str = Field(max_length=200)


class AddInput(_Model):
    a: int = Field(ge=-1000, le=1000)
    b: int = Field(ge=-1000, le=1000)


class AddOutput(_Model):
    sum: int


class ExtAppsPageApp(MiniApp):
    app_info = AppInfo(
        app_scope="extpage",
        version="1.0.0",
        kind="bundled-reference",
        requested_capabilities=("artifact.save",),  # the page's `downloadFile`
        entrypoints=(
            Entrypoint(id="ui", kind="surface", document="index.html", mcp_app=McpAppUi()),
        ),
    )

    async def start(self, app: AppContext) -> None:
        self.app = app

    @tool(
        "extpage.echo",
        handling="launch",
        input=EchoInput,
        output=EchoOutput,
        ui=ToolUi(entrypoint="ui"),
    )
    async def echo(self, call: ToolCall[EchoInput]) -> EchoOutput:
        return EchoOutput(echo=call.input.text)

    @tool(
        "extpage.add",
        handling="direct",
        input=AddInput,
        output=AddOutput,
        ui=ToolUi(entrypoint="ui", visibility=("app",)),
    )
    async def add(self, call: ToolCall[AddInput]) -> AddOutput:
        return AddOutput(sum=call.input.a + call.input.b)
