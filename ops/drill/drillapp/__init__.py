"""The drill's MiniApp (`app_scope = drill`): cheap tools for a high call rate under faults.

`lineup drill` loads it with `--dev-app`, so it runs sandboxed like any third-party app and
imports only the SDK. `drill.session` (launch) opens an instance and stays running until the
user closes it; `drill.echo` (direct) answers at once; `drill.work` (operation) reports
progress, works for a while, then answers, so closes and kills catch it running.
"""

from __future__ import annotations

import trio
from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, MiniApp, ToolCall, tool

__all__ = ["Drill"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Numbered(_Model):
    n: int = Field(ge=0, le=10**9)


class WorkInput(_Model):
    n: int = Field(ge=0, le=10**9)
    ms: int = Field(ge=0, le=5_000)


class Drill(MiniApp):
    app_info = AppInfo(app_scope="drill", version="1.0.0", kind="installed")

    async def start(self, app: AppContext) -> None:
        self.app = app

    @tool(
        "drill.session",
        handling="launch",
        input=Numbered,
        output=Numbered,
        timeout_ms=120_000,
        description="Open a drill instance; it runs until the user closes it.",
    )
    async def session(self, call: ToolCall[Numbered]) -> Numbered | None:
        await self.app.ui.render(call.instance_id, {"kind": "drill", "n": call.input.n})
        await call.progress({"opened": call.input.n})
        return None  # the call ends when the instance is closed (cancelled: app_closed)

    @tool(
        "drill.echo",
        handling="direct",
        input=Numbered,
        output=Numbered,
        timeout_ms=15_000,
        description="Answer the number at once.",
    )
    async def echo(self, call: ToolCall[Numbered]) -> Numbered:
        return Numbered(n=call.input.n)

    @tool(
        "drill.work",
        handling="operation",
        input=WorkInput,
        output=Numbered,
        timeout_ms=15_000,
        description="Report progress, work for `ms` milliseconds, answer the number.",
    )
    async def work(self, call: ToolCall[WorkInput]) -> Numbered:
        await call.progress({"n": call.input.n})
        await trio.sleep(call.input.ms / 1000)
        return Numbered(n=call.input.n)
