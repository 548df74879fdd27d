"""A bus's side of one channel, and what a handler is given.

`Connection` is one channel to one peer whose identity was bound when the channel was made,
with what the bus keeps of it: the reply slots of the requests in flight on it, the frames
read while the mailbox was full (its backlog), a MiniApp's rate budget, whether it was reported
as misbehaving, and the ACL's answers for its sender. `Envelope` is what a handler sees of one
request or event; `Mailbox`, the bound on the handlers a process runs at once.

Everything here is on the bus's per-message path: plain attributes and named tuples, no
property and no indirection (see the bus's module docstring).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from itertools import count
from typing import Final, NamedTuple

import trio

from ._replies import ReplySlot
from .channel import Channel
from .errors import ErrorCode
from .identity import ActorKind, Identity
from .messages import Message

__all__ = [
    "BACKLOG_LIMIT",
    "MINIAPP_BURST",
    "MINIAPP_CREDIT_LIMIT",
    "MINIAPP_RATE",
    "Connection",
    "Envelope",
    "Handler",
    "Mailbox",
    "Outcome",
    "new_envelope",
]

# Untrusted peers (MiniApps) get a token bucket on what they may ask per second (a flood is
# refused, never queued).
MINIAPP_RATE: Final = 500.0  # requests and events per second, sustained
MINIAPP_BURST: Final = 1000.0
# Answers the runtime asks a MiniApp for (a tool call it pushes: the app takes it, then
# answers it) are granted with the ask (`Bus.grant`), beside the budget: a busy app's calls are
# bounded by the calls it is given, not by what it may ask on its own. Bounded too.
MINIAPP_CREDIT_LIMIT: Final = 4096.0
BACKLOG_LIMIT: Final = 64  # per channel: frames read while the mailbox is full, before
#                            reading that channel pauses (replies behind them still get read)


class Envelope(NamedTuple):
    """What a handler sees: the decoded body and facts the bus vouches for. Immutable (a
    named tuple: a third of a frozen dataclass's cost to build, once per request)."""

    sender: Identity  # bound to the channel, never read from the frame
    body: Message
    frame_id: int
    is_request: bool
    idempotency_key: str | None = None
    deadline_ms: float | None = None


new_envelope: Final = tuple.__new__  # all six fields given: skips the generated __new__


# A handler returns its reply (None for an event), or an awaitable of it. A plain function
# cannot block, so the bus runs it inline in the channel's reader: no task, no scheduler trip.
# An `async def` handler gets a task of its own, within the bounded mailbox.
Outcome = Message | None | Awaitable[Message | None]
Handler = Callable[[Envelope], Outcome]


@dataclass(eq=False)
class Connection:
    identity: Identity
    incarnation: int
    channel: Channel
    pending: dict[int, ReplySlot] = field(default_factory=dict)
    closed: trio.Event = field(default_factory=trio.Event)
    backlogged: int = 0
    tokens: float = MINIAPP_BURST  # the rate budget left (MiniApp peers only)
    credit: float = 0.0  # granted answers (`Bus.grant`), spent before the budget
    refilled_at: float = 0.0
    limited_audited_at: float = -math.inf
    reported: bool = False  # reported to the supervisor as misbehaving (once is enough)
    # The ACL's answers for this channel's sender, by tag: a dict lookup instead of hashing two
    # enums and the tag on every frame. Bounded: a peer's tags beyond it are looked up each time.
    allowed: dict[str, ErrorCode | None] = field(default_factory=dict)  # tag -> the ACL's refusal
    _ids: count[int] = field(default_factory=lambda: count(1))

    def take_token(self, now: float) -> bool:
        """One unit of the peer's rate budget, refilled at MINIAPP_RATE up to MINIAPP_BURST;
        a granted answer's credit first."""
        if self.credit >= 1.0:
            self.credit -= 1.0
            return True
        self.tokens = min(MINIAPP_BURST, self.tokens + (now - self.refilled_at) * MINIAPP_RATE)
        self.refilled_at = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True

    def __post_init__(self) -> None:
        self.backlog_send, self.backlog_recv = trio.open_memory_channel[Envelope](BACKLOG_LIMIT)
        # MiniApps only; a plain bool (an enum member's lookup costs more than the check).
        self.rate_limited = self.identity.kind is ActorKind.MINIAPP

    def next_id(self) -> int:
        return next(self._ids)


class Mailbox:
    """The bound on handlers in flight: `trio.Semaphore`'s semantics (FIFO, a released slot
    goes straight to the longest waiter), without its KeyboardInterrupt-protection wrapper on
    the uncontended acquire and release of every request (~1 µs a request, measured)."""

    __slots__ = ("_free", "_lot")

    def __init__(self, size: int) -> None:
        self._free = size
        self._lot = trio.lowlevel.ParkingLot()

    def try_acquire(self) -> bool:
        if self._free and not self._lot:
            self._free -= 1
            return True
        return False

    async def acquire(self) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        if self.try_acquire():
            await trio.lowlevel.cancel_shielded_checkpoint()
        else:
            await self._lot.park()  # woken by `release`, which hands its slot over

    def release(self) -> None:
        if self._lot:
            self._lot.unpark()
        else:
            self._free += 1
