"""The link to the AppServer as the runtime shows it (the Shell's header, `lineup status`), and
what the transport keeps of it in the store's cursors.

Theory of operation
-------------------
The transport moves the link by its news, one event each, through `TABLE`:

    created  --restore-->  restoring  --log_in-->  authenticating  --logged_in-->  synchronizing
    synchronizing | reconnecting | offline_degraded | online  --synced-->  online
    any state past restoring  --failed-->  reconnecting   --degraded-->  offline_degraded
    any state past authenticating  --log_in-->  authenticating   (the token was refused)

`failed` is an exchange that failed as a link (its `appserver_*` code is the reason shown);
`degraded`, one that failed `DEGRADED_AFTER` times in a row. A login's retries run while the
link is down, so `logged_in` also leaves `reconnecting` and `offline_degraded`; a sync answered
while a login for a refused token is under way moves it to `online` at once. A move the table
lacks is news another loop has overtaken: `move` answers None, and the state stays.

`restoring`, `stopping` and `stopped` are also the supervisor's own part of the lifecycle
(`SUPERVISOR_PHASES`): it says them before the transport speaks and after it stops (its phases
and which part is whose: `facts/supervisor.py`).

`SESSION_CURSOR` holds the AppServer session of the last login (its user, Agent and
conversation: JSON), written by the transport after each login and read by the router to know
which conversation it is in; `SYNC_CURSOR`, how far inbound sync has persisted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

__all__ = [
    "BEFORE_LOGIN",
    "DEGRADED_AFTER",
    "SESSION_CURSOR",
    "SUPERVISOR_PHASES",
    "SYNC_CURSOR",
    "TABLE",
    "LinkEvent",
    "RuntimeState",
    "move",
]

RuntimeState = Literal[
    "created",
    "restoring",
    "authenticating",
    "synchronizing",
    "online",
    "reconnecting",
    "offline_degraded",
    "stopping",
    "stopped",
]
LinkEvent = Literal["restore", "log_in", "logged_in", "synced", "failed", "degraded"]

DEGRADED_AFTER: Final = 3  # failures in a row before `reconnecting` becomes `offline_degraded`

_DOWN: Final[Mapping[LinkEvent, RuntimeState]] = {
    "failed": "reconnecting",
    "degraded": "offline_degraded",
}
_UP: Final[Mapping[LinkEvent, RuntimeState]] = {
    "synced": "online",
    "log_in": "authenticating",
    "logged_in": "synchronizing",
    **_DOWN,
}

TABLE: Final[Mapping[RuntimeState, Mapping[LinkEvent, RuntimeState]]] = {
    "created": {"restore": "restoring"},
    "restoring": {"log_in": "authenticating"},
    "authenticating": {"logged_in": "synchronizing", "synced": "online", **_DOWN},
    "synchronizing": {"synced": "online", "log_in": "authenticating", **_DOWN},
    "online": dict(_UP),
    "reconnecting": dict(_UP),
    "offline_degraded": {**_UP, "failed": "offline_degraded"},
    "stopping": {},
    "stopped": {},
}

# The supervisor's own parts of the lifecycle, told to the hostbridge as states.
SUPERVISOR_PHASES: Final[frozenset[RuntimeState]] = frozenset({"restoring", "stopping", "stopped"})
# The link's states before its first login was answered (the session stored, or the link
# failed): a tree that waits for the link (`Supervisor(link_wait=…)`) waits for it to leave them.
BEFORE_LOGIN: Final[frozenset[RuntimeState]] = frozenset({"created", "restoring", "authenticating"})

SESSION_CURSOR: Final = "transport.session"
SYNC_CURSOR: Final = "transport.sync.cursor"


def move(state: RuntimeState, event: LinkEvent) -> RuntimeState | None:
    """The state `event` leads to from `state`, or None where the table has no such move."""
    return TABLE[state].get(event)
