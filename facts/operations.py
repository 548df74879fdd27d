"""The AppOperation machine: how one operation on the app registry moves. No I/O.

Theory of operation: an operation (an install, an update, an enable, …: `OperationKind`) is
`requested` when focus has recorded it, `running` once its work began, and ends `completed` or
`failed` (with a code). A final state never changes. The table below is every legal move;
anything else raises `IllegalOperationMove`, a bug in the caller (the store independently keeps a
final operation as it is). Focus moves its operations by it (`actors/focus/_operations.py`); the
store's rows, the SDK's `AppOperationInfo` and `lineup apps` read the same states.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from lineup.actors.kernel.errors import ErrorCode, LineUpError

__all__ = [
    "COMPLETED",
    "FAILED",
    "FINAL",
    "STATES",
    "TRANSITIONS",
    "IllegalOperationMove",
    "OperationEvent",
    "OperationKind",
    "OperationState",
    "next_state",
]

OperationKind = Literal[
    "install", "update", "enable", "disable", "rollback", "revoke", "remove", "set_default"
]
OperationState = Literal["requested", "running", "completed", "failed"]
OperationEvent = Literal["start", "complete", "fail"]

COMPLETED: Final[OperationState] = "completed"
FAILED: Final[OperationState] = "failed"
TRANSITIONS: Final[Mapping[OperationState, Mapping[OperationEvent, OperationState]]] = {
    "requested": {"start": "running", "fail": FAILED},
    "running": {"complete": COMPLETED, "fail": FAILED},
    COMPLETED: {},
    FAILED: {},
}
STATES: Final = frozenset(TRANSITIONS)
FINAL: Final = frozenset(s for s, moves in TRANSITIONS.items() if not moves)


class IllegalOperationMove(LineUpError):
    default_code = ErrorCode.INTERNAL_ERROR


def next_state(state: OperationState, event: OperationEvent) -> OperationState:
    """The state `event` moves `state` to; raises `IllegalOperationMove` if it may not."""
    try:
        return TRANSITIONS[state][event]
    except KeyError:
        raise IllegalOperationMove(message=f"{event} from {state}") from None
