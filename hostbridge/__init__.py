"""hostbridge: the HTTP + WebSocket server the browser Shell attaches to (DESIGN §7)."""

from ._actor import HostbridgeActor

__all__ = ["HostbridgeActor"]
