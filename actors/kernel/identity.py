"""Who is on the other end of a channel. Bound by the supervisor, never read from a frame."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["RUNTIME_KINDS", "ActorKind", "Identity"]


class ActorKind(StrEnum):
    SUPERVISOR = "supervisor"
    STORE = "store"
    TRANSPORT = "transport"
    ROUTER = "router"
    FOCUS = "focus"
    GATEWAY = "gateway"
    HOSTBRIDGE = "hostbridge"
    MINIAPP = "miniapp"  # untrusted: one sandboxed process per installed MiniApp
    CLI = "cli"  # a `lineup` command on the owner-only control socket
    DEV = "dev"  # development parts of the embedded default: reference AppServer, demo Agent


RUNTIME_KINDS = frozenset(
    {
        ActorKind.STORE,
        ActorKind.TRANSPORT,
        ActorKind.ROUTER,
        ActorKind.FOCUS,
        ActorKind.GATEWAY,
        ActorKind.HOSTBRIDGE,
    }
)


@dataclass(frozen=True, slots=True)
class Identity:
    kind: ActorKind
    name: str  # unique in the tree: "store", "router", "miniapp:chat", "cli:4711"

    def __str__(self) -> str:
        return self.name
