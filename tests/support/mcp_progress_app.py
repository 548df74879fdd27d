"""A MiniApp whose MCP App page (written by the test, `PAGE`) calls its own tool with a progress
token: the tool reports progress twice, then answers (tests/browser/test_mcp_app_tool_lifecycle_
e2e.py). The page speaks the MCP Apps protocol by hand, so the test reads every message."""

from __future__ import annotations

from typing import Final

import trio
from pydantic import BaseModel, ConfigDict

from lineup.sdk import AppContext, AppInfo, MiniApp, ToolCall, tool
from lineup.sdk.manifest import Entrypoint, ToolUi
from lineup.sdk.mcp_apps import McpAppUi

__all__ = ["PAGE", "CountApp"]

PAGE: Final = """<!doctype html>
<html><body><p id="said">0</p><script>
window.__said = [];
let next = 0;
function ask(method, params) {
  next += 1;
  parent.postMessage({ jsonrpc: "2.0", id: next, method, params }, "*");
  return next;
}
window.addEventListener("message", (e) => {
  if (e.source !== parent) return;
  window.__said.push(e.data);
  document.getElementById("said").textContent = String(window.__said.length);
  if (e.data.id === 1 && e.data.result) {
    parent.postMessage({ jsonrpc: "2.0", method: "ui/notifications/initialized", params: {} }, "*");
  }
});
window.count = () =>
  ask("tools/call", { name: "count", arguments: {}, _meta: { progressToken: "tok" } });
ask("ui/initialize", {
  protocolVersion: "2026-01-26", appInfo: { name: "count", version: "1" }, appCapabilities: {},
});
</script></body></html>
"""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CountInput(_Model):
    pass


class CountOutput(_Model):
    counted: int


class CountApp(MiniApp):
    app_info = AppInfo(
        app_scope="counter",
        version="1.0.0",
        kind="bundled-reference",
        entrypoints=(
            Entrypoint(id="ui", kind="surface", document="index.html", mcp_app=McpAppUi()),
        ),
    )

    async def start(self, app: AppContext) -> None:
        self.app = app

    @tool(
        "counter.count",
        handling="launch",
        input=CountInput,
        output=CountOutput,
        ui=ToolUi(entrypoint="ui"),
    )
    async def count(self, call: ToolCall[CountInput]) -> CountOutput:
        for done in (1, 2):
            await call.progress({"done": done, "total": 2, "message": f"step {done}"})
            await trio.sleep(0.2)  # the runtime passes at most one report a tenth of a second
        return CountOutput(counted=2)
