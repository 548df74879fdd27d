"""The AppOperation machine: how one registry operation moves. No I/O.

Theory of operation: an operation is `requested` when focus has recorded it, `running` once
its work began, and ends `completed` or `failed` (with a code). A final state never changes.
The table below is every legal move; anything else raises `IllegalOperationMove`, a bug in the
caller (the store independently keeps a final operation as it is).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final, Literal

from lineup.actors.kernel.errors import ErrorCode, LineUpError

__all__ = [
    "FINAL",
    "STATES",
    "TRANSITIONS",
    "IllegalOperationMove",
    "Operation",
    "OperationEvent",
    "OperationState",
    "next_state",
]

OperationState = Literal["requested", "running", "completed", "failed"]
OperationEvent = Literal["start", "complete", "fail"]

TRANSITIONS: Final[dict[OperationState, dict[OperationEvent, OperationState]]] = {
    "requested": {"start": "running", "fail": "failed"},
    "running": {"complete": "completed", "fail": "failed"},
    "completed": {},
    "failed": {},
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


@dataclass(frozen=True)
class Operation:
    operation_id: str
    app_scope: str
    kind: str
    state: OperationState = "requested"
    code: str | None = None

    def start(self) -> Operation:
        return replace(self, state=next_state(self.state, "start"))

    def complete(self) -> Operation:
        return replace(self, state=next_state(self.state, "complete"))

    def fail(self, code: ErrorCode) -> Operation:
        return replace(self, state=next_state(self.state, "fail"), code=code.value)

    @property
    def final(self) -> bool:
        return self.state in FINAL
