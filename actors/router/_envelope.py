"""Wire envelopes in, `RuntimeEnvelope`s out: the first links of the filter chain (seed 004 §5).

Theory of operation
-------------------
No I/O here. `admit()` takes one raw wire envelope (`lineup.v1`, DESIGN §12) exactly as the
AppServer relayed it, and either returns a `RuntimeEnvelope` or raises `EnvelopeRejected` with a
stable code. The links run in the seed's order, cheapest first: the wire's limits (depth,
lengths, numbers) → size → version → type → shape (the wire's models) → scope and
conversation → agent identity. What needs state (dedupe by message id, app
installed and enabled, inventory) is decided by the router actor with the store's help.

The legacy rule (seed 004 §5.2): a wire envelope without `app_scope` belongs to `chat` in its
conversation. A MiniApp never sees a wire envelope, only the normalised `RuntimeEnvelope`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.facts.scopes import CHAT
from lineup.wire import (
    AGENT_ENVELOPE,
    AGENT_TYPES,
    MAX_ENVELOPE_BYTES,
    WireLimitError,
    check_document,
    encoded_size,
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
    "admit_sized",
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


def admit(raw: object, *, conversation_id: str, agent_id: str) -> RuntimeEnvelope:
    """`admit_sized` without the size."""
    return admit_sized(raw, conversation_id=conversation_id, agent_id=agent_id)[0]


def admit_sized(raw: object, *, conversation_id: str, agent_id: str) -> tuple[RuntimeEnvelope, int]:
    """Run the stateless filters over one wire envelope from the Agent.

    `conversation_id` and `agent_id` are what the transport's login established: an envelope
    for another conversation, or from anybody but that agent, is refused. Raises
    EnvelopeRejected with one of: envelope_too_deep, envelope_too_large, envelope_malformed,
    unsupported_version, envelope_type_unknown, scope_missing, conversation_mismatch,
    sender_mismatch. Returns the envelope and the raw one's size as it travels (bytes).
    """
    message_id = message_id_of(raw)
    if not isinstance(raw, dict):
        raise EnvelopeRejected(ErrorCode.ENVELOPE_MALFORMED)
    try:
        check_document(raw)
    except WireLimitError as exc:
        raise EnvelopeRejected(exc.code, message_id) from exc
    size = encoded_size(raw)
    if size > MAX_ENVELOPE_BYTES:
        raise EnvelopeRejected(ErrorCode.ENVELOPE_TOO_LARGE, message_id)
    if raw.get("v") != 1 or type(raw.get("v")) is not int:
        code = (
            ErrorCode.UNSUPPORTED_VERSION
            if type(raw.get("v")) is int
            else ErrorCode.ENVELOPE_MALFORMED
        )
        raise EnvelopeRejected(code, message_id)
    kind = raw.get("type")
    if isinstance(kind, str) and kind not in AGENT_TYPES:
        raise EnvelopeRejected(ErrorCode.ENVELOPE_TYPE_UNKNOWN, message_id)
    try:
        wire = AGENT_ENVELOPE.validate_python(raw)
    except ValidationError as exc:
        raise EnvelopeRejected(ErrorCode.ENVELOPE_MALFORMED, message_id) from exc
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
    return envelope, size
