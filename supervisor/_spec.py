"""Child specs, restart types and strategies (OTP's vocabulary)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from lineup.actors.kernel import ActorKind

__all__ = ["ChildSpec", "Intensity", "Restart", "Strategy", "runtime_specs"]


class Restart(StrEnum):
    PERMANENT = "permanent"  # always restarted
    TRANSIENT = "transient"  # restarted only after an abnormal exit
    TEMPORARY = "temporary"  # never restarted


class Strategy(StrEnum):
    ONE_FOR_ONE = "one_for_one"  # restart only the child that died
    REST_FOR_ONE = "rest_for_one"  # restart it and every child started after it


SHUTDOWN_GRACE: Final = 0.5  # a child's, unless its spec says otherwise


@dataclass(frozen=True)
class ChildSpec:
    name: str
    kind: ActorKind
    target: str  # "lineup.actors.store:StoreActor"
    restart: Restart = Restart.PERMANENT
    config: Mapping[str, Any] = field(default_factory=dict)
    shutdown_grace: float = SHUTDOWN_GRACE  # seconds between closing its channel and SIGTERM
    # A MiniApp that breaks its contract is stopped for good, unless this is set: then it is
    # killed and restarted like a crashed child (whoever plans the tree decides which).
    restart_after_misbehaving: bool = False
    # The children that must have settled (be ready, or have died trying) before this one
    # starts, all listed before it. None: every child listed before it (OTP's one at a time).
    after: tuple[str, ...] | None = None
    # False: a child nothing of the runtime waits for (the demo Agent), started once the tree
    # is ready, so that it takes nothing from the start's critical path.
    before_ready: bool = True


@dataclass(frozen=True)
class Intensity:
    """A child restarted more than `max_restarts` times within `period` seconds escalates:
    the supervisor stops the whole tree and exits non-zero instead of spinning."""

    max_restarts: int = 10
    period: float = 10.0
    backoff_base: float = 0.005  # the first restart in a period is immediate, then doubling
    backoff_cap: float = 1.0
    start_timeout: float = 10.0  # a child that is not ready by then is killed

    def backoff(self, recent_restarts: int) -> float:
        if recent_restarts <= 0:
            return 0.0
        return min(self.backoff_cap, self.backoff_base * 2.0 ** (recent_restarts - 1))


# The hostbridge's grace: on its way out it sends each Shell what was queued for it, for at
# most `SHELLS_CLOSE_WAIT` (1 s, hostbridge/_actor.py), before it is SIGTERMed.
HOSTBRIDGE_GRACE: Final = 1.5

_RUNTIME: Final = (
    ("store", ActorKind.STORE, "lineup.actors.store:StoreActor"),
    ("transport", ActorKind.TRANSPORT, "lineup.actors.transport:TransportActor"),
    ("router", ActorKind.ROUTER, "lineup.actors.router:RouterActor"),
    ("focus", ActorKind.FOCUS, "lineup.actors.focus:FocusActor"),
    ("gateway", ActorKind.GATEWAY, "lineup.actors.gateway:GatewayActor"),
    ("hostbridge", ActorKind.HOSTBRIDGE, "lineup.hostbridge:HostbridgeActor"),
)


def runtime_specs(config: Mapping[str, Any] | None = None) -> list[ChildSpec]:
    """The runtime's actors in start order: the store first, the hostbridge last."""
    shared = dict(config or {})
    return [
        ChildSpec(
            name,
            kind,
            target,
            config=shared,
            shutdown_grace=HOSTBRIDGE_GRACE if kind is ActorKind.HOSTBRIDGE else SHUTDOWN_GRACE,
        )
        for name, kind, target in _RUNTIME
    ]
