"""A deadline operation as one pure machine (seed 004 §6.3, the Pomodoro paragraph): a runtime
operation bound to ONE of an app's tool calls, with an `ends_at`. No I/O: the store checks each
move against this table in the move's transaction (`actors/store/deadline_operations/`), and the
router reads it to know which step of the call each ending is (`actors/router/_operations.py`).

Theory of operation: the app asks the runtime to `start` an operation for a call it runs; from
then on the call's one terminal result is the runtime's to write, never the app's:

    (none)   --start-->      running        the `started` progress is written with it
    running  --fire-->       completed      at `ends_at`: the call is submitted with the result
                                            the app gave at the start (checked then)
    running  --interrupt-->  interrupted    the user's interruption: the call ends
                                            cancelled(`cancelled_by_user`)
    running  --abandon-->    abandoned      the call ended another way first (its app closed,
                                            its own timeout): nothing more is written for it

(An interruption that finds the call already ended by the user's interruption — it raced the
operation's start — moves the operation to `interrupted` without writing anything either.)

Each ending is ONE store request whose transaction moves the operation and steps its call (with
its terminal outbox row), so an operation never ends without its call's one terminal row, nor
twice. A final state never changes: an ending of an ended operation is answered as a repeat.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from lineup.actors.kernel.errors import ErrorCode, LineUpError

from .tool_calls import ToolCallEvent

__all__ = [
    "CALL_STEP",
    "FINAL",
    "INTERRUPTED_CODE",
    "MAX_OPERATION_S",
    "STARTED",
    "TABLE",
    "DeadlineOperationEvent",
    "DeadlineOperationState",
    "move",
]

DeadlineOperationState = Literal["running", "completed", "interrupted", "abandoned"]
DeadlineOperationEvent = Literal["start", "fire", "interrupt", "abandon"]

TABLE: Final[
    Mapping[DeadlineOperationState | None, Mapping[DeadlineOperationEvent, DeadlineOperationState]]
] = {
    None: {"start": "running"},
    "running": {"fire": "completed", "interrupt": "interrupted", "abandon": "abandoned"},
    "completed": {},
    "interrupted": {},
    "abandoned": {},
}

FINAL: Final[frozenset[DeadlineOperationState]] = frozenset(
    state for state, moves in TABLE.items() if state is not None and not moves
)

# The step of its tool call each ending writes (`facts/tool_calls.py`); None: none (the call
# has already ended).
CALL_STEP: Final[Mapping[DeadlineOperationEvent, ToolCallEvent | None]] = {
    "fire": "submit",
    "interrupt": "cancel",
    "abandon": None,
}

INTERRUPTED_CODE: Final = ErrorCode.CANCELLED_BY_USER.value  # what the Agent gets
# The `stage` of the one `started` progress an operation's start writes (seed 004 §7.3: only
# once the instance is in front and the operation exists may the Agent say "it started").
STARTED: Final = "started"
MAX_OPERATION_S: Final = 24 * 3600  # no operation runs longer than a tool call may


def move(
    state: DeadlineOperationState | None, event: DeadlineOperationEvent
) -> DeadlineOperationState:
    """Where `event` leads from `state` (None: no operation yet). Raises `LineUpError`:
    `call_already_final` for an ending of an ended operation, `invalid_arguments` for any other
    move the table lacks (a second start, an ending of none)."""
    found = TABLE[state].get(event)
    if found is not None:
        return found
    if state in FINAL:
        raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, f"the operation is already {state}")
    raise LineUpError(ErrorCode.INVALID_ARGUMENTS, f"cannot {event} an operation in {state}")
