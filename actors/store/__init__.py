"""The store actor: the only process that opens the SQLite database (DESIGN §3).

Its protocol is `lineup.actors.store.messages`; other actors import that module only.
"""

from ._actor import StoreActor

__all__ = ["StoreActor"]
