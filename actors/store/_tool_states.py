"""The tool call state machine (DESIGN §5, seed 003 §3.2): which event may move a call where.
No I/O.

Theory of operation: a call is recorded `received` (or directly `rejected`) and only ever moves
forward along

    received → routing → waiting_for_app → running → submitted → completed | failed | cancelled
                                                                  | expired | rejected

skipping a step only where the flow has nothing to do there: a call for an instance that is
already live goes routing → running (no activation to wait for). A MiniApp's result, validated
and recorded with its outbox row in one transaction, makes the call `submitted`; the outbox ack
of that row makes it `completed`, a permanent refusal of it `failed` (`_tool_calls.settle_
terminal`). (running → completed directly stays legal for the store's callers that have no
outbox row to wait for; the router never takes it.) Which final state a call may reach
depends on how far it got:

- `rejected`: refused before an app took it (received, routing, or waiting_for_app whose
  activation failed or was cancelled, seed 004 §7.3);
- `cancelled`, `expired`: any time before the app submitted its outcome. A submitted result is
  never rewritten (seed 000 §7.2: closing an app cancels received … running only);
- `completed`: only once the app ran it (running, submitted);
- `failed`: from any state that is not final (a runtime or handler failure, an output that
  fails its schema).

A final state has no way out: every event on a final call raises `call_already_final`. Any other
illegal event raises `invalid_arguments`. Each state is reached by exactly one event
(`EVENT_TO`), so a request that names a target state names its event; naming the state a call
is already in is a repeat, which `step` answers without a change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from lineup.actors.kernel.errors import ErrorCode, LineUpError

from ._tool_messages import ToolCallState

__all__ = ["EVENT_TO", "FINAL", "TRANSITIONS", "ToolCallEvent", "is_final", "next_state", "step"]

ToolCallEvent = Literal[
    "route", "await_app", "start", "submit", "complete", "fail", "cancel", "expire", "reject"
]

_ENDINGS: Final[Mapping[ToolCallEvent, ToolCallState]] = {
    "fail": "failed", "cancel": "cancelled", "expire": "expired", "reject": "rejected",
}  # fmt: skip

TRANSITIONS: Final[Mapping[ToolCallState, Mapping[ToolCallEvent, ToolCallState]]] = {
    "received": {"route": "routing", **_ENDINGS},
    "routing": {"await_app": "waiting_for_app", "start": "running", **_ENDINGS},
    "waiting_for_app": {"start": "running", **_ENDINGS},
    "running": {"submit": "submitted", "complete": "completed", "fail": "failed",
                "cancel": "cancelled", "expire": "expired"},
    "submitted": {"complete": "completed", "fail": "failed"},
    "completed": {},
    "failed": {},
    "cancelled": {},
    "expired": {},
    "rejected": {},
}  # fmt: skip

FINAL: Final[frozenset[ToolCallState]] = frozenset(
    state for state, moves in TRANSITIONS.items() if not moves
)

# The one event that leads to each state (`received` is where a call starts, not a move).
EVENT_TO: Final[Mapping[ToolCallState, ToolCallEvent]] = {
    after: event for moves in TRANSITIONS.values() for event, after in moves.items()
}


def is_final(state: ToolCallState) -> bool:
    return state in FINAL


def next_state(state: ToolCallState, event: ToolCallEvent) -> ToolCallState:
    """The state after `event`. Raises `LineUpError(call_already_final)` when `state` is final,
    `LineUpError(invalid_arguments)` for any other move the table does not have."""
    if state in FINAL:
        raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, f"call is already {state}")
    after = TRANSITIONS[state].get(event)
    if after is None:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, f"cannot {event} a {state} call")
    return after


def step(state: ToolCallState, to_state: ToolCallState) -> tuple[ToolCallState, bool]:
    """`(state after, changed)` for a request to move a call in `state` to `to_state`: a call
    already there is a repeat (`changed` False) unless it is final. Raises as `next_state`."""
    if state not in FINAL and to_state == state:
        return state, False
    event = EVENT_TO.get(to_state)
    if event is None:  # `received`: nothing moves a call back to where it started
        if state in FINAL:
            raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, f"call is already {state}")
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, f"cannot move a {state} call to {to_state}")
    return next_state(state, event), True
