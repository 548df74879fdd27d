"""Benchmark-only actor and messages (spawned through the real zygote)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from lineup.actors.kernel import Actor, ActorKind, Envelope, Message, handles
from lineup.sdk import AppInfo, MiniApp, ToolCall, tool

__all__ = ["BenchApp", "PingReply", "PingRequest", "PongActor"]


class PingRequest(Message):
    type: Literal["router.inbound.bench_ping"] = "router.inbound.bench_ping"
    n: int
    pad: str  # makes the frame ~300 bytes, the size the raw baseline sends


class PingReply(Message):
    type: Literal["router.inbound.bench_ping.reply"] = "router.inbound.bench_ping.reply"
    n: int
    pad: str


class PongActor(Actor):
    kind = ActorKind.ROUTER

    @handles(PingRequest)
    def on_ping(self, msg: PingRequest, env: Envelope) -> PingReply:
        return PingReply(n=msg.n, pad=msg.pad)


# ---------------------------------------------------------------------------------- a MiniApp


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EchoInput(_Model):
    text: str = Field(max_length=200)


class EchoOutput(_Model):
    text: str = Field(max_length=200)


class BenchApp(MiniApp):
    """One launch tool (to have an instance) and one `direct` tool that answers at once."""

    app_info = AppInfo(app_scope="bench", version="1.0.0", kind="bundled-reference")

    @tool("bench.open", handling="launch", input=EchoInput, output=EchoOutput)
    async def open(self, call: ToolCall[EchoInput]) -> EchoOutput:
        return EchoOutput(text=call.input.text)

    @tool("bench.echo", handling="direct", input=EchoInput, output=EchoOutput)
    async def echo(self, call: ToolCall[EchoInput]) -> EchoOutput:
        return EchoOutput(text=call.input.text)
