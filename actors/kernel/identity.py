"""Who is on the other end of a channel. Bound by the supervisor, never read from a frame."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["RUNTIME_KINDS", "ActorKind", "Identity", "app_scope_of"]


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


def app_scope_of(identity: Identity) -> str:
    """A MiniApp's `app_scope`, from its channel identity (`miniapp:<scope>`), never from a
    field it sends. Raises LineUpError(app_scope_mismatch) for anything but a MiniApp."""
    from .errors import ErrorCode, LineUpError

    if identity.kind is not ActorKind.MINIAPP or not identity.name.startswith("miniapp:"):
        raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, identity.name)
    return identity.name.removeprefix("miniapp:")
