"""The outbox state machine: what acknowledging, failing and retrying a row may do. No I/O.

Theory of operation: an outbox row is `pending` until the AppServer accepts it (`ack` → `sent`,
final) or the transport gives up on it (`fail` → `failed`); `retry` makes a failed row pending
again. A repeat of the event that led to the current state is legal and changes nothing (every
store request is idempotent), which is why `pending` accepts `retry`, `failed` accepts `fail` and
`sent` accepts `ack`. A failed row may still be acknowledged: the AppServer has it, whatever the
transport concluded. Anything else is illegal and raises `invalid_arguments`. The outbound
message a row carries always has the row's state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from lineup.actors.kernel.errors import ErrorCode, LineUpError

__all__ = ["TRANSITIONS", "OutboxEvent", "OutboxState", "next_state"]

# An outbox row (and the outbound message it carries) is pending until the AppServer accepts it
# (sent) or the transport gives up on it (failed); a retry makes a failed row pending again.
OutboxState = Literal["pending", "sent", "failed"]
OutboxEvent = Literal["ack", "fail", "retry"]

TRANSITIONS: Final[Mapping[OutboxState, Mapping[OutboxEvent, OutboxState]]] = {
    "pending": {"ack": "sent", "fail": "failed", "retry": "pending"},
    "failed": {"ack": "sent", "fail": "failed", "retry": "pending"},
    "sent": {"ack": "sent"},
}


def next_state(state: OutboxState, event: OutboxEvent) -> OutboxState:
    """The state after `event`; equal to `state` when the event is a repeat. Raises
    `LineUpError(invalid_arguments)` for an illegal transition."""
    try:
        return TRANSITIONS[state][event]
    except KeyError:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, f"cannot {event} a {state} row") from None
