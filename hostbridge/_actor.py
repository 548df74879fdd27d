"""The hostbridge actor process. For now it boots, answers health and is supervised; the Shell
server lands with the AppServer-link issue."""

from __future__ import annotations

from lineup.actors.kernel import Actor, ActorKind

__all__ = ["HostbridgeActor"]


class HostbridgeActor(Actor):
    kind = ActorKind.HOSTBRIDGE
