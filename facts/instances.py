"""The instance lifecycle (DESIGN §5): which event may move an app instance where. No I/O.

Theory of operation: an instance is born `starting` and lives in one of the live states until
it is stopped:

    starting → foreground | background | suspended
    foreground ↔ background; either → suspended; suspended → foreground | background
    any live state → stopping → stopped | failed        (any live state may also fail)

`stopped` and `failed` are final. `recover` is not a request anyone makes: after a runtime
restart, an instance caught half-way (`starting` or `stopping`) comes back `suspended`, never as
done, so the user (or the focus actor) decides what happens to it. Every illegal move, a move
out of a final state included, raises `lifecycle_denied`; naming the state an instance is
already in is a repeat, which `step` answers without a change. The table is the one the focus
actor applies to its stack in memory (`actors/focus/_stack.py`, which imports it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from lineup.actors.kernel.errors import ErrorCode, LineUpError

__all__ = [
    "BIRTH",
    "BIRTH_STATES",
    "EVENT_TO",
    "FINAL",
    "LIVE",
    "NOT_UP",
    "TABLE",
    "TRANSITIONS",
    "InstanceEffect",
    "InstanceEvent",
    "InstanceState",
    "Move",
    "effects_of",
    "is_final",
    "next_state",
    "step",
]

InstanceState = Literal[
    "starting", "foreground", "background", "suspended", "stopping", "stopped", "failed"
]
InstanceEvent = Literal["foreground", "background", "suspend", "stop", "exit", "fail", "recover"]

# What focus does once a move is committed: tell the router (it reacts: held calls released,
# unfinished calls ended) and ask a suspended instance's app for its view, which the Shell lost.
InstanceEffect = Literal[
    "announce_started", "announce_ready", "announce_ended", "announce_failed", "refresh_view"
]


@dataclass(frozen=True, slots=True)
class Move:
    to: InstanceState
    effects: tuple[InstanceEffect, ...] = ()


_UP_FROM_START: Final = ("announce_ready",)
_UP_FROM_SUSPENDED: Final = ("announce_ready", "refresh_view")
_FAIL: Final = Move("failed", ("announce_failed",))

# (state, event) → Move(next state, effects): the one table, checked by the store's operations
# and applied by focus's stack.
TABLE: Final[Mapping[InstanceState, Mapping[InstanceEvent, Move]]] = {
    "starting": {"foreground": Move("foreground", _UP_FROM_START),
                 "background": Move("background", _UP_FROM_START),
                 "suspend": Move("suspended"), "stop": Move("stopping"), "fail": _FAIL,
                 "recover": Move("suspended")},
    "foreground": {"background": Move("background"), "suspend": Move("suspended"),
                   "stop": Move("stopping"), "fail": _FAIL},
    "background": {"foreground": Move("foreground"), "suspend": Move("suspended"),
                   "stop": Move("stopping"), "fail": _FAIL},
    "suspended": {"foreground": Move("foreground", _UP_FROM_SUSPENDED),
                  "background": Move("background", _UP_FROM_SUSPENDED),
                  "stop": Move("stopping"), "fail": _FAIL},
    "stopping": {"exit": Move("stopped", ("announce_ended",)), "fail": _FAIL,
                 "recover": Move("suspended")},
    "stopped": {},
    "failed": {},
}  # fmt: skip
# How an instance is born, and what that makes focus do.
BIRTH: Final = Move("starting", ("announce_started",))

TRANSITIONS: Final[Mapping[InstanceState, Mapping[InstanceEvent, InstanceState]]] = {
    state: {event: found.to for event, found in moves.items()} for state, moves in TABLE.items()
}

FINAL: Final[frozenset[InstanceState]] = frozenset(
    state for state, moves in TRANSITIONS.items() if not moves
)
# Not ended: on the focus stack. `starting` and `suspended` ones are live but not up (no
# process answering yet, or none at all): they never have the front.
LIVE: Final[frozenset[InstanceState]] = frozenset(
    {"starting", "foreground", "background", "suspended"}
)
NOT_UP: Final[frozenset[InstanceState]] = frozenset({"starting", "suspended"})

# The event a request naming a target state stands for. `recover` is nobody's request.
EVENT_TO: Final[Mapping[InstanceState, InstanceEvent]] = {
    "foreground": "foreground", "background": "background", "suspended": "suspend",
    "stopping": "stop", "stopped": "exit", "failed": "fail",
}  # fmt: skip

# A new instance starts, or is recorded directly in a live state `starting` leads to.
BIRTH_STATES: Final[frozenset[InstanceState]] = frozenset(
    {"starting", "foreground", "background", "suspended"}
)


def is_final(state: InstanceState) -> bool:
    return state in FINAL


def next_state(state: InstanceState, event: InstanceEvent) -> InstanceState:
    """The state after `event`. Raises `LineUpError(lifecycle_denied)` for a move the table
    does not have."""
    after = TRANSITIONS[state].get(event)
    if after is None:
        raise LineUpError(ErrorCode.LIFECYCLE_DENIED, f"cannot {event} a {state} instance")
    return after


def step(state: InstanceState, to_state: InstanceState) -> tuple[InstanceState, bool]:
    """`(state after, changed)` for a request to move an instance in `state` to `to_state`; an
    instance already there is a repeat (`changed` False). Raises as `next_state`."""
    if to_state == state:
        return state, False
    event = EVENT_TO.get(to_state)
    if event is None:  # `starting`: nothing goes back to the start
        raise LineUpError(ErrorCode.LIFECYCLE_DENIED, f"cannot move a {state} instance back")
    return next_state(state, event), True


def effects_of(before: InstanceState | None, after: InstanceState) -> tuple[InstanceEffect, ...]:
    """The effects of the move from `before` (None: a new instance) to `after`; none for a
    repeat. Raises as `step` for a move the table does not have."""
    if before is None:
        return BIRTH.effects if after == BIRTH.to else ()
    if before == after:
        return ()
    if after in FINAL and before not in FINAL:
        # However it got there: focus keeps no `stopping` in memory (the store has it).
        return TABLE["stopping"]["exit" if after == "stopped" else "fail"].effects
    found = next((move for move in TABLE[before].values() if move.to == after), None)
    if found is None:
        raise LineUpError(ErrorCode.LIFECYCLE_DENIED, f"cannot move a {before} instance to {after}")
    return found.effects
