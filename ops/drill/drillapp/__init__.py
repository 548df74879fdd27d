"""The drill's MiniApp (`app_scope = drill`): cheap tools for a high call rate under faults.

`lineup drill` loads it with `--dev-app`, so it runs sandboxed like any third-party app and
imports only the SDK. `drill.session` (launch) opens an instance and stays running until the
user closes it; `drill.echo` (direct) answers at once; `drill.work` (operation) reports
progress, works for a while, then answers, so closes and kills catch it running. The core
load uses these three.

The exercises (`ops/drill/_artifacts.py`, `_capabilities.py`) use two more: `drill.artifact`
(operation) makes an artifact of `artifact_bytes(n, size)` under a request id derived from the
call (a re-run after a crash names the same artifact), reads it back and answers its id, size,
digest and whether what it read was what it wrote; `drill.ask` (operation) asks for
`notification.show` under a request id derived from the call (a re-run asks nothing new while
the gateway keeps the result) and answers the result's status and code. The Surfaces are the
second drill app's (`drillpad/`).
"""

from __future__ import annotations

import hashlib
from typing import Final

import trio
from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, MiniApp, ToolCall, tool

__all__ = ["ASK_PURPOSE", "Drill", "artifact_bytes", "artifact_request_id", "ask_request_id"]

MAX_ARTIFACT: Final = 256 * 1024  # lineup.sdk.protocol MAX_ARTIFACT_BYTES (a test compares)
ASK_PURPOSE: Final = "drill capability {request_id}"  # the prompt names its request


def artifact_bytes(n: int, size: int) -> bytes:
    """The content of the drill's artifact `n` of `size` bytes: hex text, its own for each `n`."""
    out = bytearray()
    block = hashlib.sha256(f"drill-artifact-{n}".encode()).digest()
    while len(out) < size:
        out += block.hex().encode()
        block = hashlib.sha256(block).digest()
    return bytes(out[:size])


def artifact_request_id(call_id: str) -> str:
    return f"drill-art-{call_id}"[:200]


def ask_request_id(call_id: str) -> str:
    return f"drill-ask-{call_id}"[:200]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Numbered(_Model):
    n: int = Field(ge=0, le=10**9)


class WorkInput(_Model):
    n: int = Field(ge=0, le=10**9)
    ms: int = Field(ge=0, le=5_000)


class ArtifactInput(_Model):
    n: int = Field(ge=0, le=10**9)
    size: int = Field(ge=1, le=MAX_ARTIFACT)


class ArtifactOutput(_Model):
    artifact_id: str = Field(min_length=1, max_length=200)
    size: int = Field(ge=0, le=MAX_ARTIFACT)
    sha256: str = Field(min_length=64, max_length=64)
    verified: bool  # what the app read back was what it wrote


class AskOutput(_Model):
    status: str = Field(min_length=1, max_length=64)
    code: str | None = Field(default=None, max_length=200)


class Drill(MiniApp):
    app_info = AppInfo(
        app_scope="drill",
        version="1.0.0",
        kind="installed",
        requested_capabilities=("notification.show",),
    )

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

    @tool(
        "drill.artifact",
        handling="operation",
        input=ArtifactInput,
        output=ArtifactOutput,
        timeout_ms=30_000,
        description="Make an artifact of `size` bytes, read it back, answer its id and digest.",
    )
    async def artifact(self, call: ToolCall[ArtifactInput]) -> ArtifactOutput:
        data = artifact_bytes(call.input.n, call.input.size)
        info = await self.app.artifacts.create(
            call.instance_id,
            "text/plain",
            data,
            f"drill-{call.input.n}.txt",
            request_id=artifact_request_id(call.call_id),
        )
        read, content = await self.app.artifacts.read(info.artifact_id)
        verified = content == data and read.sha256 == hashlib.sha256(data).hexdigest()
        return ArtifactOutput(
            artifact_id=info.artifact_id, size=info.size, sha256=info.sha256, verified=verified
        )

    @tool(
        "drill.ask",
        handling="operation",
        input=Numbered,
        output=AskOutput,
        timeout_ms=150_000,
        description="Ask for notification.show; answer the result's status and code.",
    )
    async def ask(self, call: ToolCall[Numbered]) -> AskOutput:
        request_id = ask_request_id(call.call_id)
        result = await self.app.capabilities.request(
            "notification.show",
            ASK_PURPOSE.format(request_id=request_id),
            {"title": request_id[:120]},  # the drill's user knows its run by it
            instance_id=call.instance_id,
            request_id=request_id,
        )
        return AskOutput(status=result.status, code=result.code)
