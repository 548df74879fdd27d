"""What the transport keeps of the link in the store's cursors, for the actors that read them.

`SESSION_CURSOR` holds the AppServer session of the last login (its user, Agent and
conversation: JSON), written by the transport after each login and read by the router to know
which conversation it is in; `SYNC_CURSOR`, how far inbound sync has persisted.
"""

from __future__ import annotations

from typing import Final

__all__ = ["SESSION_CURSOR", "SYNC_CURSOR"]

SESSION_CURSOR: Final = "transport.session"
SYNC_CURSOR: Final = "transport.sync.cursor"
