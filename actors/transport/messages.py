"""The transport's whole public protocol. Every tag starts with `transport.`.

Besides these the transport answers the kernel's `kernel.health.request`.
"""

from __future__ import annotations

from typing import Literal

from lineup.actors.kernel import Message
from lineup.actors.kernel.control import HealthReply, HealthRequest
from lineup.facts.link import RuntimeState

__all__ = [
    "HealthReply",
    "HealthRequest",
    "OutboxWakeEvent",
    "RuntimeState",
    "RuntimeStateReply",
    "RuntimeStateRequest",
]


class OutboxWakeEvent(Message):
    """Router → transport: there is something new in the outbox."""

    type: Literal["transport.outbox.wake"] = "transport.outbox.wake"


class RuntimeStateRequest(Message):
    type: Literal["transport.ui.state.get"] = "transport.ui.state.get"


class RuntimeStateReply(Message):
    type: Literal["transport.ui.state.get.reply"] = "transport.ui.state.get.reply"
    state: RuntimeState
    reason: str | None = None  # why it is reconnecting / offline_degraded: an appserver_* code
