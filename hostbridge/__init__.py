"""hostbridge: the HTTP + WebSocket server the browser Shell attaches to (DESIGN §7).

The actor is exported lazily: importing `messages` (the protocol) runs this file, and must not
load the actor or what the actor imports (apsw, httpx, hypercorn).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._actor import HostbridgeActor

__all__ = ["HostbridgeActor"]


def __getattr__(name: str) -> object:
    if name == "HostbridgeActor":
        from ._actor import HostbridgeActor

        return HostbridgeActor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
