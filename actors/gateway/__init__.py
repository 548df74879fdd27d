"""The gateway actor (DESIGN §1). Its public protocol is `messages`.

The actor is exported lazily: importing `messages` (the protocol) runs this file, and must not
load the actor or what the actor imports (apsw, h11, hypercorn).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lineup._lazy import exports

if TYPE_CHECKING:
    from ._actor import GatewayActor

__all__ = ["GatewayActor"]


__getattr__ = exports(__name__, {"GatewayActor": "._actor"})
