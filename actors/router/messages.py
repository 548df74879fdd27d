"""The router's whole public protocol. Every tag starts with `router.`.

`router.inbound.*` comes from the transport; `router.sdk.*` (from MiniApps) is declared in
`lineup.sdk.protocol`, the SDK's side of the contract. Besides these the router answers the
kernel's `kernel.health.request`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from lineup.actors.kernel import Message
from lineup.actors.kernel.control import HealthReply, HealthRequest

__all__ = [
    "EnvelopeOutcome",
    "HealthReply",
    "HealthRequest",
    "InboundEnvelopesReply",
    "InboundEnvelopesRequest",
    "InstanceClosingReply",
    "InstanceClosingRequest",
    "InventoryChangedEvent",
    "OutboxSettledEvent",
    "SessionStartedEvent",
]


class InboundEnvelopesRequest(Message):
    """Wire envelopes from one sync page, in order. The reply comes once every accepted one is
    persisted: only then may the transport advance its cursor."""

    type: Literal["router.inbound.envelopes"] = "router.inbound.envelopes"
    conversation_id: str = Field(min_length=1, max_length=200)
    agent_id: str = Field(min_length=1, max_length=200)
    envelopes: tuple[dict[str, Any], ...] = Field(max_length=500)


class EnvelopeOutcome(Message):
    type: Literal["router.inbound.outcome"] = "router.inbound.outcome"
    message_id: str | None
    status: Literal["accepted", "duplicate", "rejected"]
    code: str | None = None


class InboundEnvelopesReply(Message):
    type: Literal["router.inbound.envelopes.reply"] = "router.inbound.envelopes.reply"
    outcomes: tuple[EnvelopeOutcome, ...]


class OutboxSettledEvent(Message):
    """The transport's word on one outbox row: the AppServer took it, or refused it for good."""

    type: Literal["router.inbound.outbox_settled"] = "router.inbound.outbox_settled"
    outbox_id: str = Field(min_length=1, max_length=200)
    state: Literal["sent", "failed"]
    code: str | None = None


class SessionStartedEvent(Message):
    """transport → router: logged in to the AppServer (publish the inventory now)."""

    type: Literal["router.inbound.session_started"] = "router.inbound.session_started"


class InventoryChangedEvent(Message):
    """focus → router: the inventory has a new revision (publish it to the Agent)."""

    type: Literal["router.inventory.changed"] = "router.inventory.changed"
    revision: str


class InstanceClosingRequest(Message):
    """focus → router: an instance is closing. Every call of it that is not final converges
    to `cancelled(app_closed)` exactly once; the reply comes when that is persisted."""

    type: Literal["router.instance.closing"] = "router.instance.closing"
    instance_id: str = Field(min_length=1, max_length=200)
    app_scope: str = Field(min_length=1, max_length=100)


class InstanceClosingReply(Message):
    type: Literal["router.instance.closing.reply"] = "router.instance.closing.reply"
    cancelled: tuple[str, ...]
