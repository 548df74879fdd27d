"""A MiniApp with one tool per call model and focus option (seed 004 §7.1), so a test proves
through real processes how the runtime honours each: a query, an interactive call, an operation,
a launch that restores the previous app on close and one that does not, and a `foreground`
handling. Each handler answers at once with its instance id: what the test reads is what the
runtime did around it (focus, progress, receipts)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, MiniApp, ToolCall, tool

SCOPE = "models"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Empty(_Model):
    pass


class Where(_Model):
    instance_id: str = Field(max_length=200)


class Models(MiniApp):
    app_info = AppInfo(app_scope=SCOPE, version="1.0.0", kind="bundled-reference")

    async def start(self, app: AppContext) -> None:
        self.app = app

    @tool(
        "models.peek", handling="direct", input=Empty, output=Where, call_model="query",
        idempotent=True, title="Peek", timeout_ms=5_000,
    )  # fmt: skip
    async def peek(self, call: ToolCall[Empty]) -> Where:
        return Where(instance_id=call.instance_id)

    @tool(
        "models.ask", handling="direct", input=Empty, output=Where, call_model="interactive",
        timeout_ms=5_000,
    )  # fmt: skip
    async def ask(self, call: ToolCall[Empty]) -> Where:
        return Where(instance_id=call.instance_id)

    @tool("models.note", handling="direct", input=Empty, output=Where, timeout_ms=5_000)
    async def note(self, call: ToolCall[Empty]) -> Where:
        return Where(instance_id=call.instance_id)

    @tool(
        "models.export", handling="operation", input=Empty, output=Where, launch="background",
        timeout_ms=5_000,
    )  # fmt: skip
    async def export(self, call: ToolCall[Empty]) -> Where:
        return Where(instance_id=call.instance_id)

    @tool("models.open", handling="launch", input=Empty, output=Where, timeout_ms=5_000)
    async def open(self, call: ToolCall[Empty]) -> Where:
        return Where(instance_id=call.instance_id)

    @tool(
        "models.visit", handling="launch", input=Empty, output=Where,
        restore_previous_focus=False, timeout_ms=5_000,
    )  # fmt: skip
    async def visit(self, call: ToolCall[Empty]) -> Where:
        return Where(instance_id=call.instance_id)

    @tool("models.front", handling="foreground", input=Empty, output=Where, timeout_ms=5_000)
    async def front(self, call: ToolCall[Empty]) -> Where:
        return Where(instance_id=call.instance_id)
