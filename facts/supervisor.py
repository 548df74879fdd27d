"""The supervisor's own phase (`lineup status`), how it moves, and the part of the runtime's
lifecycle it is the supervisor's to tell. No I/O.

Theory of operation
-------------------
A tree moves once through its phases, one event each, through `TABLE`:

    created  --start-->  starting  --ready-->  running
    created | starting | running | stopping  --stop-->  stopping  --stopped-->  stopped

`ready` is every child that starts before the tree is ready being ready (and the first login
answered, where the tree waits for it); `stop` is shutdown beginning, for whatever reason: a
cancel, an escalation, a child that cannot start. Shutdown says `stop` twice (the tree's run,
then its stop of the children), a repeat. A move the table lacks is a bug: `move` answers None,
the phase stays, and the supervisor logs it loudly.

The runtime's lifecycle (seed 004 §3.3) is the supervisor's to tell before every child was ready
once (`restoring`) and from shutdown on (`stopping`, `stopped`); in between, the link's states
are shown, as the transport reports them (`facts/link.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from lineup.facts.link import RuntimeState

__all__ = ["SHUTDOWN", "TABLE", "Phase", "PhaseEvent", "lifecycle_part", "move", "shell_part"]

Phase = Literal["created", "starting", "running", "stopping", "stopped"]
PhaseEvent = Literal["start", "ready", "stop", "stopped"]

TABLE: Final[Mapping[Phase, Mapping[PhaseEvent, Phase]]] = {
    "created": {"start": "starting", "stop": "stopping"},
    "starting": {"ready": "running", "stop": "stopping"},
    "running": {"stop": "stopping"},
    "stopping": {"stop": "stopping", "stopped": "stopped"},
    "stopped": {},
}


def move(phase: Phase, event: PhaseEvent) -> Phase | None:
    """The phase `event` leads to from `phase`, or None where the table has no such move."""
    return TABLE[phase].get(event)


# The phases whose name the runtime's lifecycle takes as the supervisor's own.
_TOLD: Final[Mapping[Phase, RuntimeState]] = {"stopping": "stopping", "stopped": "stopped"}
# What the hostbridge is told from shutdown on, its end too: the Shell is gone by then.
SHUTDOWN: Final[RuntimeState] = "stopping"


def lifecycle_part(phase: Phase, *, restored: bool) -> RuntimeState | None:
    """The runtime's lifecycle state that is the supervisor's own in `phase` (`restoring` until
    every child was ready once, `stopping`, `stopped`), or None while the link's are shown."""
    told = _TOLD.get(phase)
    if told is not None:
        return told
    return None if restored else "restoring"


def shell_part(phase: Phase, *, restored: bool) -> RuntimeState | None:
    """The supervisor's part of the lifecycle as the hostbridge is told it: `restoring`,
    `SHUTDOWN`, or None while the link's states are shown."""
    if phase in _TOLD:
        return SHUTDOWN
    return lifecycle_part(phase, restored=restored)
