"""The transport's whole public protocol. Every tag starts with `transport.`.

Besides these the transport answers the kernel's `kernel.health.request`.
"""

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from lineup.actors.kernel import Message
from lineup.actors.kernel.control import HealthReply, HealthRequest
from lineup.facts.link import RuntimeState

__all__ = [
    "AppServerSession",
    "HealthReply",
    "HealthRequest",
    "OutboxWakeEvent",
    "RuntimeState",
    "RuntimeStateReply",
    "RuntimeStateRequest",
    "session_of",
]


class AppServerSession(BaseModel):
    """The AppServer session of the last login, as the transport keeps it in the store's
    `SESSION_CURSOR` (JSON) for the router: whom the runtime's messages are from (`user_id`),
    the one Agent it talks to, and their conversation."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    user_id: str
    agent_id: str
    conversation_id: str


def session_of(value: str) -> AppServerSession | None:
    """The session the transport wrote (a JSON object of strings), or None for anything else
    (the store's start-up sweep quarantines what is not an object of strings)."""
    try:
        raw = json.loads(value)
    except (ValueError, RecursionError):
        return None
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        return None
    try:
        return AppServerSession.model_validate(raw)
    except ValidationError:
        return None


class OutboxWakeEvent(Message):
    """Router → transport: there is something new in the outbox. `ahead`: a row that goes
    before the backlog (an inventory), so the transport looks again after the row it is on."""

    type: Literal["transport.outbox.wake"] = "transport.outbox.wake"
    ahead: bool = False


class RuntimeStateRequest(Message):
    type: Literal["transport.ui.state.get"] = "transport.ui.state.get"


class RuntimeStateReply(Message):
    type: Literal["transport.ui.state.get.reply"] = "transport.ui.state.get.reply"
    state: RuntimeState
    reason: str | None = None  # why it is reconnecting / offline_degraded: an appserver_* code
    since_ns: int = 0  # when it entered this state (`RuntimeStateEvent.since_ns`)
