"""Wire envelopes in, `RuntimeEnvelope`s out: the first links of the filter chain (seed 004 §5).

Theory of operation
-------------------
No I/O here. The chain's stateless links run in the seed's order, cheapest first: the wire's
limits (depth, lengths, numbers) → size → version → type → shape (the wire's models) → scope
and conversation → agent identity. The first five are the wire's, and run once, where the
envelope enters the runtime: the transport checks each envelope of a sync page against the
limits (`lineup.wire.check_envelope`) and parses it (`lineup.wire.agent_envelope`), and hands
the router the parsed model, or its refusal in its place (`messages.RefusedEnvelope`).
`admit` takes the parsed envelope through the rest and either returns a `RuntimeEnvelope` or
raises `EnvelopeRejected` with a stable code. What needs state (dedupe by message id, app
installed and enabled, inventory) is decided by the router actor with the store's help.
(`admit_document` runs the whole chain over one raw document, as the two processes do between
them: for the tests and the compatibility matrix.)

The legacy rule (seed 004 §5.2): a wire envelope without `app_scope` belongs to `chat` in its
conversation. A MiniApp never sees a wire envelope, only the normalised `RuntimeEnvelope`.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.facts.scopes import CHAT
from lineup.wire import (
    AGENT_TYPES,
    MAX_ENVELOPE_BYTES,
    AgentEnvelope,
    EnvelopeInvalid,
    WireLimitError,
    agent_envelope,
    check_envelope,
    message_id_of,
)

__all__ = [
    "AGENT_TYPES",
    "MAX_ENVELOPE_BYTES",
    "EnvelopeRejected",
    "RuntimeEnvelope",
    "Scope",
    "Sender",
    "Target",
    "admit",
    "admit_document",
]

_Id = Field(min_length=1, max_length=200)


class EnvelopeRejected(LineUpError):
    """An inbound envelope failed a filter; `code` says which, `message_id` what (if known)."""

    def __init__(self, code: ErrorCode, message_id: str | None = None) -> None:
        super().__init__(code, message_id or "")
        self.message_id = message_id


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Sender(_Model):
    kind: Literal["agent", "runtime", "app", "user", "host"]
    id: str = _Id


class Target(_Model):
    kind: Literal["runtime", "app"]
    app_scope: str = _Id
    instance_id: str | None = Field(default=None, max_length=200)


class Scope(_Model):
    app_scope: str = _Id
    conversation_id: str = _Id
    instance_id: str | None = Field(default=None, max_length=200)
    operation_id: str | None = Field(default=None, max_length=200)


class Correlation(_Model):
    reply_to: str | None = Field(default=None, max_length=200)
    call_id: str | None = Field(default=None, max_length=200)
    inventory_revision: str | None = Field(default=None, max_length=200)
    sequence: int | None = None


class RuntimeEnvelope(_Model):
    """Seed 004 §5.1: every routable message inside the runtime, always scoped."""

    v: Literal[1] = 1
    id: str = _Id
    type: str = Field(min_length=1, max_length=100)
    timestamp: str = Field(max_length=64)
    sender: Sender
    target: Target
    scope: Scope
    correlation: Correlation | None = None
    payload: dict[str, Any]


def admit_document(raw: object, *, conversation_id: str, agent_id: str) -> RuntimeEnvelope:
    """The whole stateless chain over one raw wire envelope, the transport's links (the
    wire's limits and its parse) then `admit`. Raises EnvelopeRejected as both do."""
    message_id = message_id_of(raw)
    if not isinstance(raw, dict):
        raise EnvelopeRejected(ErrorCode.ENVELOPE_MALFORMED)
    try:
        check_envelope(raw)
        parsed = agent_envelope(raw)
    except (WireLimitError, EnvelopeInvalid) as exc:
        raise EnvelopeRejected(exc.code, message_id) from exc
    return admit(parsed, conversation_id=conversation_id, agent_id=agent_id)


def admit(wire: AgentEnvelope, *, conversation_id: str, agent_id: str) -> RuntimeEnvelope:
    """Run the router's stateless filters over one wire envelope from the Agent, as the wire
    parsed it.

    `conversation_id` and `agent_id` are what the transport's login established: an envelope
    for another conversation, or from anybody but that agent, is refused. Raises
    EnvelopeRejected with one of: scope_missing, conversation_mismatch, sender_mismatch,
    envelope_malformed (a field the runtime's envelope bounds tighter than the wire).
    """
    if wire.conversation_id is None:
        raise EnvelopeRejected(ErrorCode.SCOPE_MISSING, wire.id)
    if wire.conversation_id != conversation_id:
        raise EnvelopeRejected(ErrorCode.CONVERSATION_MISMATCH, wire.id)
    if wire.sender.kind != "agent" or wire.sender.id != agent_id:
        raise EnvelopeRejected(ErrorCode.SENDER_MISMATCH, wire.id)
    scope = wire.app_scope or CHAT
    correlation = None
    if wire.correlation is not None or wire.seq is not None:
        c = wire.correlation
        correlation = Correlation(
            reply_to=c.reply_to if c else None,
            call_id=c.call_id if c else None,
            inventory_revision=c.inventory_revision if c else None,
            sequence=wire.seq,
        )
    try:
        envelope = RuntimeEnvelope(
            id=wire.id,
            type=wire.type,
            timestamp=wire.timestamp,
            sender=Sender(kind="agent", id=wire.sender.id),
            target=Target(kind="app", app_scope=scope, instance_id=wire.instance_id),
            scope=Scope(
                app_scope=scope, conversation_id=wire.conversation_id, instance_id=wire.instance_id
            ),
            correlation=correlation,
            payload=wire.payload.model_dump(mode="json"),
        )
    except ValidationError as exc:
        raise EnvelopeRejected(ErrorCode.ENVELOPE_MALFORMED, wire.id) from exc
    return envelope
