"""A MiniApp whose Surface is an MCP App page that declares a network domain and a device, for
the browser test of the user's grant of them (tests/browser/test_mcp_app_grant_e2e.py).
`mcpnet.open` opens its instance's Surface. The declared origin here is a placeholder
(`PLACEHOLDER_ORIGIN`): the test writes the manifest with its own server's origin in its place.
The page (`PAGE`, written by the test into the app's `web/`) is one inline module script, as an
MCP App's is, offering the test `window.probe(url)`: a `fetch`, answered `ok:<body>` or
`blocked:<error name>`."""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, MiniApp, ToolCall, tool
from lineup.sdk.manifest import Entrypoint
from lineup.sdk.mcp_apps import McpAppCsp, McpAppUi

__all__ = ["PAGE", "PLACEHOLDER_ORIGIN", "NetApp"]

PLACEHOLDER_ORIGIN: Final = "http://127.0.0.1:9"
PAGE: Final = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>Net</title></head>
<body><p>An MCP App page that reaches its declared server.</p>
<script type="module">
window.probe = async (url) => {
  try {
    const response = await fetch(url, { cache: "no-store" });
    return "ok:" + (await response.text());
  } catch (error) {
    return "blocked:" + error.name;
  }
};
document.body.dataset.ready = "1";
</script></body></html>
"""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OpenInput(_Model):
    pass


class OpenOutput(_Model):
    surface_id: str = Field(max_length=250)


class NetApp(MiniApp):
    app_info = AppInfo(
        app_scope="mcpnet",
        version="1.0.0",
        kind="bundled-reference",
        entrypoints=(
            Entrypoint(
                id="ui",
                kind="surface",
                document="index.html",
                mcp_app=McpAppUi(
                    csp=McpAppCsp(connect_domains=(PLACEHOLDER_ORIGIN,)),
                    permissions=("clipboard_write",),
                ),
            ),
        ),
    )

    async def start(self, app: AppContext) -> None:
        self.app = app

    @tool("mcpnet.open", handling="launch", input=OpenInput, output=OpenOutput, timeout_ms=60_000)
    async def open(self, call: ToolCall[OpenInput]) -> OpenOutput:
        reply = await self.app.surfaces.request_open(call.instance_id, state={})
        return OpenOutput(surface_id=reply.surface_id)
