"""The gateway actor (DESIGN §1). Its public protocol is `messages`.

The actor is exported lazily: importing `messages` (the protocol) runs this file, and must not
load the actor or what the actor imports (apsw, httpx, hypercorn).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._actor import GatewayActor

__all__ = ["GatewayActor"]


def __getattr__(name: str) -> object:
    if name == "GatewayActor":
        from ._actor import GatewayActor

        return GatewayActor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
