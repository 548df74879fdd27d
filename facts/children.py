"""The supervisor's view of one child process (`lineup status`), and how it moves. No I/O.

Theory of operation
-------------------
The supervisor moves a child by what happened to it, one event each, through `TABLE`:

    new | restarting | stopped | failed  --spawn-->  starting  --ready-->  running
    starting | running | stopping  --exited-->  stopped        (its process ended, status 0)
    starting | running | stopping  --crashed-->  failed        (any other status, or a signal)
    starting | running  --stop-->  stopping  --stopped-->  stopped   (the supervisor's stop)
    stopped | failed  --restart-->  restarting  --spawn-->  starting  (the restart policy)
    stopped | failed  --given_up-->  failed                   (a MiniApp crashing in a loop)
    any state with a process  --killed-->  failed              (stopped for good: a MiniApp
                                                                that misbehaved or is over quota)

A stop sends its signals and waits, each wait bounded: when the process exits, `exited` or
`crashed` moves the child (one stopped by SIGTERM is `failed` for that moment), and the stop's
end, `stopped`, makes it `stopped` whatever its exit said. A process can outlive a stop's or a
kill's last wait (a busy machine reaps it a moment later): its end is still news, so `stopped`
and `failed` take `exited`, `crashed`, `stop` and `killed` too. A start that timed out is started
again before its process is reaped (`starting --spawn-->`), and a MiniApp focus starts while its
stop is under way begins a new process (`stopping --spawn-->`).

A move the table lacks is one no code path makes: `move` answers None. Those that would be
stale news, and would make the state lie, are made by none because the supervisor acts on one
process of a child at a time: a restart starts the child only if its process is still the one
that ended (one focus started during the backoff is left alone); a stop acts on the process it
began with and ends only that one's state (a start during the stop makes a new process, left
alone); a ready read once the stop began (a sandboxed child's report read after it) is not
taken. For the supervisor such a move is a bug, logged loudly, and the state stays; it never
stops the tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

__all__ = ["TABLE", "UP", "ChildEvent", "ChildState", "move"]

ChildState = Literal["new", "starting", "running", "restarting", "stopping", "stopped", "failed"]
ChildEvent = Literal[
    "spawn", "ready", "exited", "crashed", "stop", "stopped", "restart", "given_up", "killed"
]
UP: Final[ChildState] = "running"  # the one state a child answers in

# What may happen to a child whose process may still be there.
_ENDS: Final[Mapping[ChildEvent, ChildState]] = {
    "exited": "stopped",
    "crashed": "failed",
    "stop": "stopping",
    "killed": "failed",
}
# What may happen to a child whose process ended (or outlived the stop's last wait).
_DOWN: Final[Mapping[ChildEvent, ChildState]] = {
    **_ENDS,
    "spawn": "starting",
    "restart": "restarting",
    "given_up": "failed",
    "stopped": "stopped",
}

TABLE: Final[Mapping[ChildState, Mapping[ChildEvent, ChildState]]] = {
    "new": {"spawn": "starting"},
    "starting": {**_ENDS, "ready": "running", "spawn": "starting"},
    "running": dict(_ENDS),
    "restarting": {"spawn": "starting"},
    "stopping": {**_ENDS, "stopped": "stopped", "spawn": "starting"},
    "stopped": dict(_DOWN),
    "failed": dict(_DOWN),
}


def move(state: ChildState, event: ChildEvent) -> ChildState | None:
    """The state `event` leads a child in `state` to, or None where the table has no such move
    (the caller keeps the state, and logs it: see the module's docstring)."""
    return TABLE[state].get(event)
