"""The tool call as one pure machine (DESIGN §5, seed 003 §3.2, seed 004 §7.3): for each state
and event, the next state, the outbox rows the step's transaction writes, and the effects the
router carries out once it has committed. No I/O. The store checks every step against this
table inside the step's transaction (`operations.step`); the router reads the same table to know
which rows a step needs and what to do after it (`actors/router/_tools.py`).

Theory of operation: a call is born by one of five events, each with its `accepted` receipt
(or, refused, its `tool.error`) in the same transaction:

    admit      → received          a `launch` call: its activation is still to come
    hold       → routing           its instance is starting and the tool needs it ready
    hand_over  → waiting_for_app   given to its (live) instance: the app is told
    ask        → running           an interactive call: the runtime itself runs it (it asks the
                                   person, `facts/interactions.py`), so no app takes it
    refuse     → rejected          a failed check (seed 003 §4.4); the Agent gets the code

and then only ever moves forward:

    received  --activate-->  routing  --activated-->  waiting_for_app  --take-->  running
    running  --submit-->  submitted  --settle-->  completed   (--settle_refused--> failed)

A launch writes its receipts on the way (`starting`, `activation_ready`, or `activation_failed`
/ `activation_cancelled` with its `tool.error`). A held call is released by `hand_over` once
its instance is ready. `submit` records the app's validated result with its outbox row; the
AppServer's acknowledgement of that row settles it `completed` (a permanent refusal of the row,
`failed`), in the outbox ack's own transaction. Before the app's outcome is decided, a call can
end `failed`, `cancelled` (by the app, or `close`d with its instance), `expired`, or `rejected`
(not yet with an app); each ending writes the call's one terminal row.

Rows depend on the event alone (`ROWS`): a step writes each of its rows once, so a receipt
already written by an earlier step (a held call's `accepted`) is not written again. A step to
the state a call is already in, whose rows are all written, is a repeat: answered, nothing
written. Any event on a decided call (final, or `submitted`, whose result only its outbox row's
fate moves on) is refused `call_already_final`; any other move the table lacks,
`invalid_arguments`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from lineup.actors.kernel.errors import ErrorCode, LineUpError

__all__ = [
    "APP_ENDINGS",
    "BINDS",
    "BIRTH",
    "CODED",
    "DECIDED",
    "ENDINGS",
    "FINAL",
    "ROWS",
    "TABLE",
    "TARGET",
    "Effect",
    "Move",
    "Row",
    "ToolCallEvent",
    "ToolCallState",
    "move",
]

ToolCallState = Literal[
    "received", "routing", "waiting_for_app", "running", "submitted",
    "completed", "failed", "cancelled", "expired", "rejected",
]  # fmt: skip

ToolCallEvent = Literal[
    "admit", "hold", "hand_over", "ask", "refuse",    # birth (hold, hand_over also later)
    "activate", "activated", "launch_failed", "launch_cancelled",   # a launch's activation
    "take", "submit", "settle", "settle_refused",     # the app's part, the AppServer's word
    "fail", "cancel", "close", "expire", "reject",    # endings before the outcome is decided
]  # fmt: skip

# An outbox row a step writes: a receipt by its status, or the call's one terminal row (its
# `tool.result` after `submit`, its `tool.error` after any other ending).
Row = Literal[
    "accepted", "starting", "activation_ready", "activation_failed", "activation_cancelled",
    "terminal",
]  # fmt: skip

# What the router does once a step has committed (waking the transport follows from any row).
Effect = Literal[
    "arm_deadline",  # the call's `timeout_ms` starts to count
    "tell_app",  # push the call to its instance's app, which answers by `take`
    "tell_app_stop",  # the app may be working on it: tell it to stop (`ToolCancelledEvent`)
    "release_held",  # the instance is ready: hand over the calls held for it
    # A tool linked to a Surface: the runtime shows the step there (the call given to its
    # instance, its outcome, its end), before telling the app (`actors/focus/_surface_tools`)
    "tell_surface",
]


@dataclass(frozen=True, slots=True)
class Move:
    """Where an event leads, and what the router does once that step has committed. (The rows
    the step writes depend on its event alone: `ROWS`.)"""

    to: ToolCallState
    effects: tuple[Effect, ...] = ()


ROWS: Final[Mapping[ToolCallEvent, tuple[Row, ...]]] = {
    "admit": ("accepted",), "hold": ("accepted",), "hand_over": ("accepted",),
    "ask": ("accepted",), "refuse": ("terminal",),
    "activate": ("starting",), "activated": ("activation_ready",),
    "launch_failed": ("activation_failed", "terminal"),
    "launch_cancelled": ("activation_cancelled", "terminal"),
    "take": (), "submit": ("terminal",), "settle": (), "settle_refused": (),
    "fail": ("terminal",), "cancel": ("terminal",), "close": ("terminal",),
    "expire": ("terminal",), "reject": ("terminal",),
}  # fmt: skip

# The events that give a call to an instance: the store refuses each once that instance has
# ended (in the step's own transaction), so no call is ever handed to an instance whose end was
# already recorded, and the instance's end (which closes its calls) always comes after.
BINDS: Final[frozenset[ToolCallEvent]] = frozenset({"hold", "hand_over", "activated"})

# The endings an app asks for itself. The store refuses each once the call's instance has
# ended: that end decides the call (`close`), however the app's handler took it.
APP_ENDINGS: Final[frozenset[ToolCallEvent]] = frozenset({"fail", "cancel"})

# The events that end a call before its outcome was decided, and all that carry a code.
ENDINGS: Final[frozenset[ToolCallEvent]] = frozenset(
    {"fail", "cancel", "close", "expire", "reject"}
)
CODED: Final[frozenset[ToolCallEvent]] = ENDINGS | {"refuse", "launch_failed", "launch_cancelled"}

_STOP: Final[Mapping[ToolCallEvent, Move]] = {  # the app holds it: tell it to stop
    "fail": Move("failed", ("tell_surface",)), "cancel": Move("cancelled", ("tell_surface",)),
    "close": Move("cancelled", ("tell_surface", "tell_app_stop")),
    "expire": Move("expired", ("tell_surface", "tell_app_stop")),
}  # fmt: skip
_QUIET_ENDINGS: Final[Mapping[ToolCallEvent, Move]] = {  # no app has it: nothing to stop
    "fail": Move("failed"), "cancel": Move("cancelled"), "close": Move("cancelled"),
    "expire": Move("expired"), "reject": Move("rejected"),
}  # fmt: skip

# How a call is born: from no state at all.
BIRTH: Final[Mapping[ToolCallEvent, Move]] = {
    "admit": Move("received", ("arm_deadline",)),
    "hold": Move("routing", ("arm_deadline",)),
    "hand_over": Move("waiting_for_app", ("arm_deadline", "tell_surface", "tell_app")),
    "ask": Move("running", ("arm_deadline",)),
    "refuse": Move("rejected"),
}

TABLE: Final[Mapping[ToolCallState, Mapping[ToolCallEvent, Move]]] = {
    "received": {
        "activate": Move("routing"),
        "hold": Move("routing"),
        "hand_over": Move("waiting_for_app", ("tell_surface", "tell_app")),
        **_QUIET_ENDINGS,
    },
    "routing": {
        "activated": Move("waiting_for_app", ("tell_surface", "tell_app", "release_held")),
        "hand_over": Move("waiting_for_app", ("tell_surface", "tell_app")),
        "launch_failed": Move("failed"),
        "launch_cancelled": Move("cancelled"),
        **_QUIET_ENDINGS,
    },
    "waiting_for_app": {"take": Move("running"), **_STOP},
    "running": {"submit": Move("submitted", ("tell_surface",)), **_STOP},
    "submitted": {"settle": Move("completed"), "settle_refused": Move("failed")},
    "completed": {},
    "failed": {},
    "cancelled": {},
    "expired": {},
    "rejected": {},
}

# The state each event leads to, from wherever the table allows it (one per event: the
# machine's tests check every move against it).
TARGET: Final[Mapping[ToolCallEvent, ToolCallState]] = {
    event: found.to for moves in (*TABLE.values(), BIRTH) for event, found in moves.items()
}

FINAL: Final[frozenset[ToolCallState]] = frozenset(s for s, moves in TABLE.items() if not moves)
# Its outcome is decided: nothing the app, a close or a deadline does changes it any more.
DECIDED: Final[frozenset[ToolCallState]] = FINAL | {"submitted"}


def move(state: ToolCallState | None, event: ToolCallEvent) -> Move:
    """The move `event` makes from `state` (None: the call does not exist yet). Raises
    `LineUpError(call_already_final)` for any event on a decided call but the AppServer's word
    on a submitted one, `LineUpError(invalid_arguments)` for any other move the table lacks."""
    moves = BIRTH if state is None else TABLE[state]
    found = moves.get(event)
    if found is not None:
        return found
    if state in DECIDED:
        raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, f"call is already {state}")
    if state is None:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "no such tool call")
    raise LineUpError(ErrorCode.INVALID_ARGUMENTS, f"cannot {event} a {state} call")
