"""The focus actor (DESIGN §1). Its public protocol is `messages`.

The actor is exported lazily: importing `messages` (the protocol) runs this file, and must not
load the actor or what the actor imports (apsw, hypercorn).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lineup._lazy import exports

if TYPE_CHECKING:
    from ._actor import FocusActor

__all__ = ["FocusActor"]


__getattr__ = exports(__name__, {"FocusActor": "._actor"})
