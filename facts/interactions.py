"""The standard interaction as one pure machine (seed 003 §3.4 `StandardInteractionRecord`): for
each state and event, the next state. No I/O. The store checks every step against this table
inside the step's transaction (`operations.interaction_step`); the router reads it to know what
a step means.

Theory of operation: an interaction is born `ask`ed, `pending`. It is `present`ed once the
person's client was told of it, and from then on it races for its one terminal state:

    (none)  --ask-->  pending  --present-->  presented
    pending | presented  --answer-->  submitted  --settle-->  completed
    pending | presented  --cancel-->  cancelled      the Agent's dismiss, the user's cancel,
                                                     the owner app's cancel or close (a code)
    pending | presented  --expire-->  expired        its `expires_at` passed
    pending | presented | submitted  --fail-->  failed   the runtime could not go on (a code)

`answer` records the result (checked by `lineup.sdk.interactions.result_of` before it gets
here); `settle` says that result was delivered: the outbox row of the Agent's call was
acknowledged, or the owner app was told. The first committed of `answer`, `cancel`, `expire`,
`fail` wins; everything after it changes nothing. An event on a decided interaction (final, or
`submitted`, whose result only its delivery moves on) is refused `interaction_final`; any other
move the table lacks, `invalid_arguments`. A step to the state the
interaction is already in is a repeat: answered, nothing written (the store's part).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from lineup.actors.kernel.errors import ErrorCode, LineUpError

__all__ = [
    "BIRTH",
    "CODED",
    "DECIDED",
    "FINAL",
    "OPEN",
    "TABLE",
    "TARGET",
    "WAITING",
    "InteractionEvent",
    "InteractionState",
    "move",
]

InteractionState = Literal[
    "pending", "presented", "submitted", "completed", "cancelled", "expired", "failed",
]  # fmt: skip
InteractionEvent = Literal["ask", "present", "answer", "settle", "cancel", "expire", "fail"]

# The events that carry a code (why it ended).
CODED: Final[frozenset[InteractionEvent]] = frozenset({"cancel", "expire", "fail"})

BIRTH: Final[Mapping[InteractionEvent, InteractionState]] = {"ask": "pending"}

_RACE: Final[Mapping[InteractionEvent, InteractionState]] = {
    "answer": "submitted", "cancel": "cancelled", "expire": "expired", "fail": "failed",
}  # fmt: skip

TABLE: Final[Mapping[InteractionState, Mapping[InteractionEvent, InteractionState]]] = {
    "pending": {"present": "presented", **_RACE},
    "presented": dict(_RACE),
    "submitted": {"settle": "completed", "fail": "failed"},
    "completed": {},
    "cancelled": {},
    "expired": {},
    "failed": {},
}

# The state each event leads to, wherever the table allows it (one per event).
TARGET: Final[Mapping[InteractionEvent, InteractionState]] = {
    event: to for moves in (*TABLE.values(), BIRTH) for event, to in moves.items()
}
FINAL: Final[frozenset[InteractionState]] = frozenset(s for s, m in TABLE.items() if not m)
OPEN: Final[frozenset[InteractionState]] = frozenset(TABLE) - FINAL
# Its outcome is decided: no answer, cancel or expiry changes it any more.
DECIDED: Final[frozenset[InteractionState]] = FINAL | {"submitted"}
# Still waiting for the person: an answer, a cancel or an expiry may still end it. (`OPEN`
# also holds `submitted`, whose answer is in but not yet delivered.)
WAITING: Final[frozenset[InteractionState]] = frozenset(TABLE) - DECIDED


def move(state: InteractionState | None, event: InteractionEvent) -> InteractionState:
    """The state `event` leads to from `state` (None: the interaction does not exist yet).
    Raises `LineUpError(interaction_final)` for any event on a decided interaction but its
    settling or failure, `LineUpError(invalid_arguments)` for any other move the table lacks."""
    moves = BIRTH if state is None else TABLE[state]
    found = moves.get(event)
    if found is not None:
        return found
    if state in DECIDED:
        raise LineUpError(ErrorCode.INTERACTION_FINAL, f"interaction is already {state}")
    if state is None:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "no such interaction")
    raise LineUpError(ErrorCode.INVALID_ARGUMENTS, f"cannot {event} a {state} interaction")
