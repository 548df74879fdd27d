"""An inbound envelope whose handling fails twice is quarantined, and the page moves past it
(`actors/router/_actor.py`, issue 11: "Poison is quarantined"). The router runs against a fake
bus: the claim is about the router's own blast radius, whatever fails below it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest
import trio

from lineup import wire
from lineup.actors.kernel import (
    ActorKind,
    AuditRecord,
    Bus,
    Envelope,
    ErrorCode,
    Identity,
    LineUpError,
    Message,
)
from lineup.actors.router._envelope import admit
from lineup.actors.router._inbound import Inbound, _receive_request
from lineup.actors.router.messages import EnvelopeOutcome, InboundEnvelopesRequest
from lineup.actors.store.messages import (
    ConversationReceiveManyReply,
    ConversationReceiveManyRequest,
    ConversationReceiveReply,
    ConversationReceiveRequest,
    DeadLetterPutReply,
    DeadLetterPutRequest,
)

CONVERSATION, AGENT = "conv-dl", "agent-dl"
TRANSPORT = Identity(ActorKind.TRANSPORT, "transport")


def text(message_id: str) -> wire.TextEnvelope:
    """An Agent's text, as the transport hands it over: parsed by the wire's model."""
    envelope = wire.envelope(
        wire.TEXT,
        wire.TextPayload(markdown="hello"),
        conversation_id=CONVERSATION,
        sender_kind="agent",
        sender_id=AGENT,
        message_id=message_id,
        app_scope="probe",
    )
    assert isinstance(envelope, wire.TextEnvelope)
    return envelope


class FakeBus:
    """The store, as far as the router's inbound path sees it: `poisoned` message ids fail
    every time they are written (alone or in a batch); everything else is a repeat."""

    def __init__(self, poisoned: set[str], code: ErrorCode = ErrorCode.INTERNAL_ERROR) -> None:
        self.poisoned = poisoned
        self.code = code
        self.requests: list[Message] = []
        self.audited: list[AuditRecord] = []

    async def request(self, to: str, msg: Message, *, expect: type[Any], **_: Any) -> Any:
        self.requests.append(msg)
        if isinstance(msg, DeadLetterPutRequest):
            return DeadLetterPutReply(seq=1, created=True)
        if isinstance(msg, ConversationReceiveManyRequest):
            if any(m.message_id in self.poisoned for m in msg.messages):
                raise LineUpError(self.code, "")
            return ConversationReceiveManyReply(
                replies=tuple(self._repeat(m) for m in msg.messages)
            )
        if isinstance(msg, ConversationReceiveRequest):
            if msg.message_id in self.poisoned:
                raise LineUpError(self.code, "")
            return self._repeat(msg)
        raise AssertionError(f"unexpected {msg.TYPE}")

    @staticmethod
    def _repeat(msg: ConversationReceiveRequest) -> ConversationReceiveReply:
        return ConversationReceiveReply(message_id=msg.message_id, seq=1, created=False)

    def audit(self, record: AuditRecord) -> None:
        self.audited.append(record)

    def puts(self) -> list[DeadLetterPutRequest]:
        return [m for m in self.requests if isinstance(m, DeadLetterPutRequest)]


def router(bus: FakeBus, tmp_path: Path) -> Inbound:
    """The router's inbound side alone: no tools, interactions or sub-sessions are reached."""
    nothing: Any = None
    identity = Identity(ActorKind.ROUTER, "router")
    return Inbound(cast(Bus, bus), identity, nothing, nothing, nothing, nothing, lambda *told: None)


def envelope_from_transport() -> Envelope:
    body = InboundEnvelopesRequest(conversation_id=CONVERSATION, agent_id=AGENT, envelopes=())
    return Envelope(TRANSPORT, body, 1, True)


def test_a_handling_that_fails_once_is_tried_again_and_not_quarantined(tmp_path: Path) -> None:
    bus = FakeBus(set())
    failures = iter([KeyError("boom")])

    async def work() -> str:
        for failure in failures:
            raise failure
        return "done"

    result = trio.run(router(bus, tmp_path)._guarded, envelope_from_transport(), text("m-1"), work)
    assert result == "done"
    assert bus.puts() == []


def test_a_handling_that_fails_twice_is_quarantined_and_the_envelope_rejected(
    tmp_path: Path,
) -> None:
    bus = FakeBus(set())
    calls = 0

    async def work() -> str:
        nonlocal calls
        calls += 1
        raise KeyError("boom")

    raw = text("m-2")
    outcome = trio.run(router(bus, tmp_path)._guarded, envelope_from_transport(), raw, work)
    assert calls == 2
    assert outcome == EnvelopeOutcome(
        message_id="m-2", status="rejected", code=ErrorCode.HANDLER_FAILED.value
    )
    [put] = bus.puts()
    assert (put.source, put.item_id, put.kind, put.code, put.attempts) == (
        "inbound", "m-2", wire.TEXT, "handler_failed", 2,
    )  # fmt: skip
    assert put.body == wire.dump(raw)  # kept for a person to read; never in a log or an audit row
    [record] = bus.audited
    assert (record.event, record.code, record.subject_id) == (
        "router.envelope_rejected", "handler_failed", "m-2",
    )  # fmt: skip


@pytest.mark.parametrize(
    "code",
    [ErrorCode.STORE_UNAVAILABLE, ErrorCode.ACTOR_RESTARTED, ErrorCode.DEADLINE_EXCEEDED],
)
def test_a_failure_of_the_runtime_fails_the_batch_for_the_transport_to_retry(
    tmp_path: Path, code: ErrorCode
) -> None:
    bus = FakeBus(set())

    async def work() -> str:
        raise LineUpError(code, "")

    with pytest.raises(LineUpError) as caught:
        trio.run(router(bus, tmp_path)._guarded, envelope_from_transport(), text("m-3"), work)
    assert caught.value.code is code
    assert bus.puts() == []


def test_a_text_the_store_fails_on_twice_is_quarantined_and_the_rest_of_its_batch_kept(
    tmp_path: Path,
) -> None:
    bus = FakeBus({"m-bad"})
    actor = router(bus, tmp_path)
    batch = []
    for index, message_id in enumerate(("m-a", "m-bad", "m-b")):
        envelope = admit(text(message_id), conversation_id=CONVERSATION, agent_id=AGENT)
        batch.append((index, envelope, _receive_request(envelope)))
    outcomes: list[EnvelopeOutcome | None] = [None, None, None]
    saved = trio.run(actor._receive_batch, batch, outcomes, envelope_from_transport(), "c-9")

    assert not saved  # taken one at a time: the transport writes its cursor itself

    assert [(o.message_id, o.status, o.code) for o in outcomes if o is not None] == [
        ("m-a", "duplicate", None),
        ("m-bad", "rejected", "handler_failed"),
        ("m-b", "duplicate", None),
    ]
    singles = [m for m in bus.requests if isinstance(m, ConversationReceiveRequest)]
    assert [m.message_id for m in singles] == ["m-a", "m-bad", "m-bad", "m-b"]  # twice, then out
    [put] = bus.puts()
    assert (put.item_id, put.attempts) == ("m-bad", 2)
