"""The gateway actor process. For now it boots, answers health and is supervised; its real work
lands with the issues that need it (DESIGN §4, §13)."""

from __future__ import annotations

from lineup.actors.kernel import Actor, ActorKind

__all__ = ["GatewayActor"]


class GatewayActor(Actor):
    kind = ActorKind.GATEWAY
