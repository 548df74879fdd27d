"""The store actor: the only process that opens the SQLite database (DESIGN §3).

Its protocol is `lineup.actors.store.messages`; other actors import that module only.

The actor is exported lazily: importing `messages` (the protocol) runs this file, and must not
load the actor or what the actor imports (apsw, h11, hypercorn).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lineup._lazy import exports

if TYPE_CHECKING:
    from ._actor import StoreActor

__all__ = ["StoreActor"]


__getattr__ = exports(__name__, {"StoreActor": "._actor"})
