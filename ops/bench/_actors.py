"""Benchmark-only actor and messages (spawned through the real zygote)."""

from __future__ import annotations

from typing import Literal

from lineup.actors.kernel import Actor, ActorKind, Envelope, Message, handles

__all__ = ["PingReply", "PingRequest", "PongActor"]


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
