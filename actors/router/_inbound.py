"""The router's inbound side: the Agent's envelopes, as the transport hands them over, through
the filter chain into app inboxes (DESIGN §4).

Theory of operation
-------------------
The transport hands over each envelope of a sync page (within the wire's limits) parsed once,
by the wire's own model, or, where the model refused it, that refusal in its place
(`messages.InboundEnvelope`, a union per item). So the bytes are parsed once, where they enter
the runtime, and the router parses nothing again: a tool call or a dismissal goes on as the
wire's typed payload, and a text is stored as its normalised `RuntimeEnvelope` (`_envelope`).
The refusal still travels, rather than being dropped by the transport, because answering and
auditing the filter chain's refusals is the router's (`router.envelope_rejected`, the same
outcome and audit row as any link of the chain, in the page's order); it carries only what is
safe to audit (code, id, type), never the body.

Which app's inbox takes a text is the delivery steps' (`_subscriptions`, seed 004 §5.3): a text
they refuse is answered with its code; one they filter out is `accepted`, audited, in no inbox.

Persist, then acknowledge, then deliver: an inbound text is written (message row + inbox
delivery, one transaction) before the transport may advance its cursor, and only then is its
app told (`_deliveries`). A run of consecutive texts is written in one store request; a tool
call or a dismissal (what the router handles itself) persists the run before it, so the page's
order holds. A page that ends with texts carries the transport's sync cursor past it into their
transaction: the page and the cursor commit together, one commit where there were two.

Ids (`_ids`): an inbound envelope whose id is the runtime's, or already an outbound message, is
refused `message_id_conflict` and audited: its outcome says so, the transport moves past it,
and nothing restarts.

Poison is quarantined (issue 11): each inbound envelope is handled in its own blast radius. One
whose handling fails (a bug it triggers here, or a store refusal that is about it, not about the
store being down) is tried again once; failing twice, it is put in the store's dead letters
(with an audit row) and answered `rejected` with `handler_failed`, so the transport moves past
it and the rest of the page is kept. Only a failure of the runtime itself (the store down or
restarting, a deadline) fails the batch, which the transport then retries whole.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

from lineup import wire
from lineup.actors.kernel import (
    AuditRecord,
    Bus,
    Envelope,
    ErrorCode,
    Identity,
    LineUpError,
)
from lineup.actors.store.messages import (
    ConversationMessageReply,
    ConversationMessageRequest,
    ConversationReceiveManyReply,
    ConversationReceiveManyRequest,
    ConversationReceiveReply,
    ConversationReceiveRequest,
    DeadLetterPutReply,
    DeadLetterPutRequest,
)
from lineup.facts.scopes import CHAT
from lineup.sdk import protocol as sdk

from . import _ids as ids
from ._app_sessions import AppSessions
from ._envelope import EnvelopeRejected, RuntimeEnvelope, admit
from ._interactions import InteractionService
from ._inventory import Inventory
from ._pipeline import Interactive, ToolPipeline, pointer_of
from ._subscriptions import FilteredOut, decide, facts_of
from .messages import (
    EnvelopeOutcome,
    InboundEnvelope,
    InboundEnvelopesReply,
    InboundEnvelopesRequest,
    RefusedEnvelope,
)

__all__ = ["Inbound"]

log = logging.getLogger("lineup.router")
T = TypeVar("T")

# Texts per store request: well inside one frame, however large each (≤ 256 KiB) is.
RECEIVE_BATCH: Final = 500
RECEIVE_BATCH_BYTES: Final = 256 * 1024
# Keys, punctuation and numbers a receive request adds to the envelope's own bytes.
REQUEST_OVERHEAD: Final = 1024


class Inbound:
    """The inbound envelopes (the module's docstring). `deliver(app_scope, deliveries)` tells
    an app of what was persisted for it (`Deliveries.tell`). Above the tool pipeline and the
    interactions, it hands an interactive call from the one to the other."""

    def __init__(
        self,
        bus: Bus,
        me: Identity,
        inventory: Inventory,
        tools: ToolPipeline,
        interactions: InteractionService,
        sessions: AppSessions,
        deliver: Callable[[str, list[sdk.Delivery]], None],
    ) -> None:
        self.bus = bus
        self.me = me
        self.inventory = inventory
        self.tools = tools
        self.interactions = interactions
        self.sessions = sessions
        self._deliver = deliver

    async def receive(self, msg: InboundEnvelopesRequest, env: Envelope) -> InboundEnvelopesReply:
        """Persist, handle or refuse each envelope of a page, in the page's order; the outcome
        of each, for the transport."""
        outcomes: list[EnvelopeOutcome | None] = []
        # Texts admitted but not yet persisted: a run of consecutive ones is written in one
        # store request. A tool call persists the run before it, so the page's order holds.
        texts: list[tuple[int, RuntimeEnvelope, int]] = []
        fresh: set[str] = set()  # apps whose facts were read fresh for this page
        for item in msg.envelopes:
            if isinstance(item, RefusedEnvelope):  # the wire's refusal, made by the transport
                outcomes.append(
                    self._rejected(env, item.code.value, item.message_type, item.message_id)
                )
                continue

            async def admitted(item: wire.AgentEnvelope = item) -> RuntimeEnvelope:
                envelope = admit(item, conversation_id=msg.conversation_id, agent_id=msg.agent_id)
                if ids.is_runtime(envelope.id):  # only the runtime mints these
                    raise EnvelopeRejected(ErrorCode.MESSAGE_ID_CONFLICT, envelope.id)
                if isinstance(item, wire.TextEnvelope):
                    envelope = await self._check_text(
                        envelope, item.payload, msg.conversation_id, fresh
                    )
                return envelope

            checked = await self._guarded(env, item, admitted)
            if isinstance(checked, EnvelopeOutcome):
                outcomes.append(checked)
                continue
            envelope = checked
            if isinstance(item, wire.TextEnvelope):
                texts.append((len(outcomes), envelope, wire.encoded_size(item)))
                outcomes.append(None)
                continue
            await self._receive_texts(texts, outcomes, env, None)

            async def accept(
                item: wire.ToolCallEnvelope | wire.DismissEnvelope = item,
                envelope: RuntimeEnvelope = envelope,
            ) -> None:
                if isinstance(item, wire.DismissEnvelope):
                    try:
                        await self.interactions.dismiss(envelope, item.payload, env.sender.name)
                    except LineUpError as exc:
                        if exc.code is not ErrorCode.INTERACTION_NOT_FOUND:
                            raise
                        raise EnvelopeRejected(exc.code, envelope.id) from exc
                    return
                interactive = await self.tools.accept(envelope, item)
                if interactive is not None:
                    await self._interact(interactive, envelope)

            accepted = await self._guarded(env, item, accept)
            outcomes.append(
                accepted
                if isinstance(accepted, EnvelopeOutcome)
                else EnvelopeOutcome(message_id=envelope.id, status="accepted")
            )
        # The cursor past the page commits with its last texts, if it ends with texts.
        saved = await self._receive_texts(texts, outcomes, env, msg.cursor)
        done = tuple(o for o in outcomes if o is not None)
        assert len(done) == len(outcomes)  # every pending text got its outcome
        return InboundEnvelopesReply(outcomes=done, cursor_saved=saved)

    async def _interact(self, call: Interactive, envelope: RuntimeEnvelope) -> None:
        """Hand a checked interactive call to the runtime's interactions; record the call
        refused if they refuse it (a bad request, a sub-session that is not the Agent's, a
        quota), as any failed check is."""
        refused = await self.interactions.ask(call.call_id, call.facts, envelope, call.context)
        if refused is not None:
            await self.tools.refuse(
                call.call_id, call.facts, refused.code, pointer=pointer_of(refused)
            )

    async def _guarded(
        self, env: Envelope, item: InboundEnvelope, work: Callable[[], Awaitable[T]]
    ) -> T | EnvelopeOutcome:
        """`await work()` for one inbound envelope, in its own blast radius: its refusal is its
        `rejected` outcome (audited); a failure that is the envelope's (`_items_fault`) is tried
        once more, then quarantined (`_dead_letter`). A failure of the runtime propagates."""
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return await work()
            except EnvelopeRejected as rejected:
                return self._rejected(env, rejected.code.value, item.type, rejected.message_id)
            except FilteredOut as filtered:  # not an error for the Agent: in no inbox, audited
                return self._filtered(env, filtered)
            except Exception as exc:
                if not _items_fault(exc):
                    raise
                log.warning(
                    "router.inbound_failed attempt=%d error=%s", attempt, _failure_name(exc)
                )
        return await self._dead_letter(env, item, ATTEMPTS)

    async def _dead_letter(
        self, env: Envelope, item: InboundEnvelope, attempts: int
    ) -> EnvelopeOutcome:
        """Quarantine one inbound envelope that failed `attempts` times, and answer it
        `rejected` (`handler_failed`), so the transport moves past it."""
        body = wire.dump(item)
        message_id = wire.message_id_of(body)
        item_id = (
            message_id
            or "sha:"
            + hashlib.blake2b(repr(body).encode(errors="replace"), digest_size=16).hexdigest()
        )
        kind = wire.message_type_of(body)
        await self._quarantine(item_id, kind, body, attempts)
        return self._rejected(env, ErrorCode.HANDLER_FAILED.value, kind, message_id)

    async def _quarantine(
        self, item_id: str, kind: str | None, body: dict[str, Any] | None, attempts: int
    ) -> None:
        """Put one inbound item in the store's dead letters (which audits it)."""
        put = DeadLetterPutRequest(
            source="inbound",
            item_id=item_id,
            kind=kind,
            code=ErrorCode.HANDLER_FAILED.value,
            attempts=attempts,
            body=body,
        )
        try:
            await self.bus.request("store", put, expect=DeadLetterPutReply)
        except LineUpError as exc:
            if not _items_fault(exc):
                raise
            # The body itself is what fails (it cannot be framed, or stored): keep the record.
            await self.bus.request(
                "store", put.model_copy(update={"body": None}), expect=DeadLetterPutReply
            )
        log.warning("router.inbound_quarantined type=%s", kind)

    def _rejected(
        self, env: Envelope, code: str, message_type: str | None, message_id: str | None
    ) -> EnvelopeOutcome:
        """Audit one refused inbound envelope; its outcome for the transport."""
        self.bus.audit(
            AuditRecord(
                event="router.envelope_rejected",
                actor=self.me.name,
                peer=env.sender.name,
                code=code,
                message_type=message_type,
                subject_id=message_id,
            )
        )
        return EnvelopeOutcome(message_id=message_id, status="rejected", code=code)

    def _filtered(self, env: Envelope, filtered: FilteredOut) -> EnvelopeOutcome:
        """Audit one envelope the delivery chain filtered out (the step, never the body); its
        outcome for the transport is `accepted`: the Agent did nothing wrong."""
        self.bus.audit(
            AuditRecord(
                event=f"router.message_filtered.{filtered.step}",
                actor=self.me.name,
                peer=env.sender.name,
                message_type=filtered.message_type,
                subject_id=filtered.message_id,
            )
        )
        return EnvelopeOutcome(message_id=filtered.message_id, status="accepted")

    async def _check_text(
        self,
        envelope: RuntimeEnvelope,
        text: wire.TextPayload,
        conversation_id: str,
        fresh: set[str],
    ) -> RuntimeEnvelope:
        """The text as it is stored; raises `EnvelopeRejected` for one that must not reach an
        inbox (`_subscriptions`' refusals), `FilteredOut` for one no inbox takes; `fresh` names
        the apps whose facts were read fresh for this page. One naming an app sub-session keeps
        only its `app_session_id` (checked)."""
        scope = envelope.scope
        verdict = decide(
            envelope,
            facts_of(await self.inventory.get(), scope.app_scope),
            conversation_id=conversation_id,
        )
        if scope.app_scope not in fresh and (not verdict.delivered or scope.app_scope != CHAT):
            # The cached inventory may be older than an install, a disable or a removal: read
            # once per page and app (the chat is always there, and always takes texts).
            fresh.add(scope.app_scope)
            verdict = decide(
                envelope,
                facts_of(await self.inventory.get(fresh=True), scope.app_scope),
                conversation_id=conversation_id,
            )
        if verdict.code is not None:
            if not await self._stored(envelope.id):
                # Seed 004 §5.3/§5.4 rule 5: never stored in an inbox nobody would ever read.
                raise EnvelopeRejected(verdict.code, envelope.id)
            return envelope  # a repeat of a text taken before the app changed: a duplicate
        if text.app_session_context is None:
            if verdict.step is not None:
                raise FilteredOut(verdict.step, envelope.id, envelope.type)
            return envelope
        try:
            # Before a filter: a sub-session it may not name is the Agent's error, refused.
            session_id = await self.sessions.of_text(envelope, text.app_session_context)
        except LineUpError as exc:
            if exc.code is not ErrorCode.APP_SESSION_INVALID:
                raise
            if not await self._stored(envelope.id):
                raise EnvelopeRejected(exc.code, envelope.id) from exc
            # A repeat of a text taken before its sub-session closed: the store says so.
            return envelope
        if verdict.step is not None:
            raise FilteredOut(verdict.step, envelope.id, envelope.type)
        context = {"app_session_id": session_id}
        return envelope.model_copy(
            update={"payload": {**envelope.payload, "app_session_context": context}}
        )

    async def _stored(self, message_id: str) -> bool:
        try:
            await self.bus.request(
                "store",
                ConversationMessageRequest(message_id=message_id),
                expect=ConversationMessageReply,
            )
        except LineUpError as exc:
            if exc.code is not ErrorCode.INVALID_ARGUMENTS:
                raise
            return False
        return True

    async def _receive_texts(
        self,
        texts: list[tuple[int, RuntimeEnvelope, int]],
        outcomes: list[EnvelopeOutcome | None],
        env: Envelope,
        cursor: str | None,
    ) -> bool:
        """Persist the pending texts (one store request per frame-sized batch), fill in their
        outcomes, then tell their apps; `cursor` (the sync cursor) goes with the last batch.
        Empties `texts`. Whether the cursor was persisted."""
        batch: list[tuple[int, RuntimeEnvelope, ConversationReceiveRequest]] = []
        size = 0
        for index, envelope, wire_size in texts:
            request = _receive_request(envelope)
            cost = _request_cost(envelope, wire_size)
            if batch and (size + cost > RECEIVE_BATCH_BYTES or len(batch) == RECEIVE_BATCH):
                await self._receive_batch(batch, outcomes, env, None)
                batch, size = [], 0
            batch.append((index, envelope, request))
            size += cost
        texts.clear()
        return bool(batch) and await self._receive_batch(batch, outcomes, env, cursor)

    async def _receive_batch(
        self,
        batch: list[tuple[int, RuntimeEnvelope, ConversationReceiveRequest]],
        outcomes: list[EnvelopeOutcome | None],
        env: Envelope,
        cursor: str | None,
    ) -> bool:
        """Persist one batch, and `cursor` (the sync cursor) with it. A message the store
        refuses (its id conflicts, or it is invalid) is that message's `rejected` outcome,
        audited; the others are persisted all the same. Whether the cursor was persisted (not
        when the batch had to be taken one message at a time)."""
        requests = tuple(request for _, _, request in batch)
        replies: tuple[ConversationReceiveReply, ...]
        saved = cursor is not None
        try:
            replies = (
                await self.bus.request(
                    "store",
                    ConversationReceiveManyRequest(messages=requests, sync_cursor=cursor),
                    expect=ConversationReceiveManyReply,
                )
            ).replies
        except LineUpError as exc:
            if exc.code is not ErrorCode.INVALID_ARGUMENTS and not _items_fault(exc):
                raise
            # One message is invalid (or its handling fails) and the batch wrote nothing:
            # receive them one at a time, so the others are kept and the refusal is that one
            # message's.
            replies = tuple(
                [await self._receive_one(request, envelope) for (_, envelope, request) in batch]
            )
            saved = False
        persisted: dict[str, list[sdk.Delivery]] = {}
        for (index, envelope, request), reply in zip(batch, replies, strict=True):
            if reply.refused is not None:
                outcomes[index] = self._rejected(env, reply.refused, envelope.type, envelope.id)
                continue
            if not reply.created:
                outcomes[index] = EnvelopeOutcome(message_id=envelope.id, status="duplicate")
                continue
            outcomes[index] = EnvelopeOutcome(message_id=envelope.id, status="accepted")
            # A created message has both seqs: the inbox's orders the app's list, the
            # conversation's its history.
            assert reply.seq is not None
            assert reply.delivery_seq is not None
            persisted.setdefault(request.app_scope, []).append(
                sdk.Delivery(
                    delivery_id=envelope.id,
                    seq=reply.delivery_seq,
                    message_seq=reply.seq,
                    envelope=request.body,
                    instance_id=request.instance_id,
                    at=reply.created_at,
                )
            )
        for app_scope, deliveries in persisted.items():
            self._deliver(app_scope, deliveries)
        return saved

    async def _receive_one(
        self, request: ConversationReceiveRequest, envelope: RuntimeEnvelope
    ) -> ConversationReceiveReply:
        """Persist one text; a refusal is its reply's `refused`. One whose persisting fails
        twice (`_items_fault`) is quarantined, and refused `handler_failed`."""
        for _ in range(ATTEMPTS):
            try:
                return await self.bus.request("store", request, expect=ConversationReceiveReply)
            except LineUpError as exc:
                if exc.code in (ErrorCode.INVALID_ARGUMENTS, ErrorCode.MESSAGE_ID_CONFLICT):
                    refused = exc.code.value
                    break
                if not _items_fault(exc):
                    raise
                log.warning("router.inbound_failed error=%s", _failure_name(exc))
        else:
            body = envelope.model_dump(mode="json")
            await self._quarantine(envelope.id, envelope.type, body, ATTEMPTS)
            refused = ErrorCode.HANDLER_FAILED.value
        return ConversationReceiveReply(
            message_id=request.message_id, seq=None, created=False, refused=refused
        )


# An inbound item that fails this many times is quarantined (issue 11: "fails twice").
ATTEMPTS: Final = 2
# Failures that are the item's, not the runtime's: its handling raised here (any exception that
# is not a `LineUpError`), or the store or the bus refused it as one (an operation that raised,
# a body that cannot be framed). Anything else (the store down or restarting, a deadline, a
# full mailbox) fails the batch, which the transport retries whole.
_ITEM_FAULTS: Final = frozenset(
    {
        ErrorCode.INTERNAL_ERROR,
        ErrorCode.HANDLER_FAILED,
        ErrorCode.FRAME_MALFORMED,
        ErrorCode.FRAME_TOO_LARGE,
    }
)


def _items_fault(exc: Exception) -> bool:
    if isinstance(exc, LineUpError):
        return exc.code in _ITEM_FAULTS
    return True


def _failure_name(exc: Exception) -> str:
    """For the log: the code of a refusal, the class of anything else (never its message)."""
    return exc.code.value if isinstance(exc, LineUpError) else type(exc).__name__


def _receive_request(envelope: RuntimeEnvelope) -> ConversationReceiveRequest:
    scope = envelope.scope
    return ConversationReceiveRequest(
        message_id=envelope.id,
        conversation_id=scope.conversation_id,
        app_scope=scope.app_scope,
        instance_id=scope.instance_id,
        kind=envelope.type,
        body=envelope.model_dump(mode="json"),
        sender_kind="agent",
        sender_id=envelope.sender.id,
        remote_seq=envelope.correlation.sequence if envelope.correlation else None,
    )


def _request_cost(envelope: RuntimeEnvelope, wire_size: int) -> int:
    """Bytes of the envelope's receive request on the bus, at most, without encoding it again:
    the wire envelope's (`wire_size`), plus the ids the request and the normalised envelope
    repeat."""
    scope = envelope.scope
    repeated = (
        envelope.id,
        envelope.type,
        envelope.sender.id,
        scope.conversation_id,
        scope.conversation_id,
        *(scope.app_scope,) * 3,
        *(scope.instance_id or "",) * 3,
    )
    return wire_size + REQUEST_OVERHEAD + sum(len(value.encode()) for value in repeated)
