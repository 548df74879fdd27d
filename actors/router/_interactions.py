"""The standard interactions (seed 000 §7.3, seed 003 §3.4, DESIGN §13 flow 4): the router's
side of a question put to the user.

Theory of operation
-------------------
An interaction is a third machine on the call path (`facts/interactions.py`).
Each step is ONE store request (`InteractionStepRequest`): the interaction's event and, for an
Agent's question, its tool call's event in the same transaction — both or nothing. The store
decides every race (the user's answer, the Agent's dismiss, the expiry, a failure): the first
committed write wins, and a later one is refused or a repeat, writing nothing. This object only
decides which step comes next and, once it has committed, tells whoever must know: the
hostbridge (`hostbridge.interactions.updated`, best effort: the Shell lists on connect), the
owner app of a MiniApp's question (`miniapp.interaction.updated`, then `settle`), the transport.

- An Agent's interactive call (`ask`): the call is born `ask`ed with its `accepted` receipt, the
  interaction `pending`; it is `present`ed once the hostbridge was told. A notice is answered
  `{"acknowledged": false}` at once (its card is persisted and handed on: the Agent need not
  wait). The answer's `submit` writes the call's one result row; the AppServer's
  acknowledgement of that row settles both (in the store).
- A MiniApp's question (`router.sdk.interaction.request`), or a Surface's: recorded by
  `_app_questions` as an interaction of this service; the result goes to that app only.
- Expiry: a timer per interaction at its `expires_at`, rebuilt from the store at start. The
  interactive call's own deadline is the same instant and is never armed by the tool pipeline:
  the interaction's `expire` ends both in one step.
- An instance that ends: its app's own questions are cancelled `app_closed`; the Agent's of its
  sub-session stay open (`_app_sessions` names them in the sub-session's closing row).

All state lives in the store; this object keeps only the timers.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Final, Literal, TypeVar

import trio

from lineup import wire
from lineup.actors.kernel import AuditRecord, Bus, ErrorCode, Identity, LineUpError, Message
from lineup.actors.store.messages import (
    AppSessionListReply,
    AppSessionListRequest,
    AppSessionRow,
    InteractionCountReply,
    InteractionCountRequest,
    InteractionEvent,
    InteractionFacts,
    InteractionGetReply,
    InteractionGetRequest,
    InteractionListReply,
    InteractionListRequest,
    InteractionRow,
    InteractionStepReply,
    InteractionStepRequest,
    ToolCallFacts,
    ToolCallStepRequest,
)
from lineup.facts.interactions import WAITING
from lineup.facts.scopes import INTERACTION
from lineup.facts.tool_calls import ToolCallEvent
from lineup.hostbridge.messages import InteractionsUpdatedEvent
from lineup.sdk import interactions as std
from lineup.sdk import protocol as sdk

from . import _app_sessions
from . import _ids as ids
from . import _outbox as outbox
from ._deadlines import Deadlines
from ._envelope import RuntimeEnvelope
from ._session import SessionSource
from ._views import interaction_view_of, record_of, session_view_of
from .messages import (
    InteractionAnswerReply,
    InteractionAnswerRequest,
    InteractionsListReply,
    InteractionsListRequest,
)

__all__ = ["APP_CLOSED", "MAX_OPEN_AGENT", "MAX_OPEN_PER_APP", "InteractionService"]

log = logging.getLogger("lineup.router.interactions")
M = TypeVar("M", bound=Message)

STORE_TIMEOUT: Final = 30.0
TELL_TIMEOUT: Final = 1.0  # the hostbridge and the owner app are told best effort
# How the runtime ends an open interaction, and its Agent's call with it (the same code).
Ending = Literal["cancel", "expire", "fail"]
_CALL_ENDING: Final[dict[Ending, ToolCallEvent]] = {
    "cancel": "cancel",
    "expire": "expire",
    "fail": "fail",
}
APP_CLOSED: Final = "app_closed"  # the code a closed instance's calls end with, too
# Questions open at once (quota_exceeded past them): every open one is a card the Shell holds
# and lists on each connect, so neither the Agent nor an app may pile them up without end.
MAX_OPEN_AGENT: Final = 64  # the Agent's (one Agent in the MVP)
MAX_OPEN_PER_APP: Final = 16  # one MiniApp's own, all its instances together


class InteractionService:
    """The interactions of one router (see the module's docstring)."""

    def __init__(
        self,
        bus: Bus,
        me: Identity,
        session: SessionSource,
    ) -> None:
        self.bus = bus
        self.me = me
        self.session = session
        self._deadlines = Deadlines()
        self._nursery: trio.Nursery | None = None
        # One new question at a time, so that its quota's count and its birth agree.
        self.asking = trio.Lock()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._deadlines.run, self._expire)
            task_status.started()
            nursery.start_soon(self._recover)

    async def store(self, request: Message, expect: type[M]) -> M:
        return await self.bus.request(
            "store", request, expect=expect, timeout=STORE_TIMEOUT, retry=True
        )

    # ------------------------------------------------------------------ one step

    async def step(
        self,
        interaction: InteractionRow | InteractionFacts,
        event: InteractionEvent,
        *,
        result: dict[str, Any] | None = None,
        code: str | None = None,
        call_event: ToolCallEvent | None = None,
        call_facts: ToolCallFacts | None = None,
        expected_owner: tuple[str, str | None] | None = None,
    ) -> InteractionStepReply:
        """Move the interaction by `event` and, with `call_event`, its Agent's call in the same
        transaction; then tell the hostbridge (and wake the transport for the call's rows)."""
        call_step: ToolCallStepRequest | None = None
        call_id = interaction.call_id
        if call_event is not None and call_id is not None:
            call_step = outbox.call_step(
                await self.session(),
                call_id,
                call_event,
                new=call_facts,
                result=result if call_event == "submit" else None,
                code=code if call_event != "submit" else None,
            )
        reply = await self.store(
            InteractionStepRequest(
                interaction_id=interaction.interaction_id,
                event=event,
                new=interaction if isinstance(interaction, InteractionFacts) else None,
                result=result if event == "answer" else None,
                code=code if event in ("cancel", "expire", "fail") else None,
                call_step=call_step,
                expected_owner_scope=expected_owner[0] if expected_owner else None,
                expected_instance_id=expected_owner[1] if expected_owner else None,
            ),
            InteractionStepReply,
        )
        if reply.changed:
            await self._push(reply.interaction)
            if call_step is not None and call_step.rows:
                await outbox.wake(self.bus)
        return reply

    async def over_quota(self, source: Literal["agent_tool", "miniapp"], scope: str = "") -> bool:
        """Whether a new question of the Agent (or of app `scope`) would pass its quota."""
        count = await self.store(
            InteractionCountRequest(source=source, owner_scope=scope or None),
            InteractionCountReply,
        )
        return count.open >= (MAX_OPEN_AGENT if source == "agent_tool" else MAX_OPEN_PER_APP)

    async def get_row(
        self, *, interaction_id: str | None = None, call_id: str | None = None
    ) -> InteractionRow | None:
        reply = await self.store(
            InteractionGetRequest(interaction_id=interaction_id, call_id=call_id),
            InteractionGetReply,
        )
        return reply.interaction

    async def end(
        self,
        row: InteractionRow,
        event: Ending,
        code: str,
        *,
        expected_owner: tuple[str, str | None] | None = None,
    ) -> tuple[InteractionRow, bool]:
        """End an open interaction (`cancel`, `expire`, `fail`) and its call with the same code.
        Whatever got there first (an answer, another ending) wins: then nothing is written and
        the interaction is returned as it is, `changed` False."""
        if row.state not in WAITING:
            return row, False
        try:
            reply = await self.step(
                row,
                event,
                code=code,
                call_event=_CALL_ENDING[event] if row.source == "agent_tool" else None,
                expected_owner=expected_owner,
            )
        except LineUpError as exc:
            if exc.code not in (ErrorCode.INTERACTION_FINAL, ErrorCode.INVALID_ARGUMENTS):
                raise
            again = await self.get_row(interaction_id=row.interaction_id)
            return (again or row), False
        if reply.changed and row.source == "miniapp":
            await self._tell_owner(reply.interaction)
        return reply.interaction, reply.changed

    # ------------------------------------------------------------------ the Agent's question

    async def ask(
        self,
        call_id: str,
        facts: ToolCallFacts,
        envelope: RuntimeEnvelope,
        context: object,
    ) -> LineUpError | None:
        """An Agent's interactive call that passed the tool checks: record the interaction and
        the call (one step), present it, and answer a notice at once. A bad request, a bad
        expiry, an `app_session_context` that is not a sub-session of this Agent and
        conversation, or a question past the Agent's quota is refused like any failed check:
        returned, for the pipeline to record with the call's `tool.error`; no interaction."""
        try:
            request, expires_in_ms = std.request_of(facts.tool, dict(facts.input))
            session_row = await self._session_context(context, envelope)
        except LineUpError as refused:
            return refused
        async with self.asking:
            if await self.get_row(call_id=call_id) is None and await self.over_quota("agent_tool"):
                return LineUpError(ErrorCode.QUOTA_EXCEEDED, "too many open questions")
            await self._ask(call_id, facts, envelope, request, expires_in_ms, session_row)
        return None

    async def _ask(
        self,
        call_id: str,
        facts: ToolCallFacts,
        envelope: RuntimeEnvelope,
        request: std.StandardInteractionRequest,
        expires_in_ms: int | None,
        session_row: AppSessionRow | None,
    ) -> None:
        session = await self.session()
        now = time.time()
        timeout_ms = expires_in_ms if expires_in_ms is not None else std.DEFAULT_EXPIRES_IN_MS
        call_facts = facts.model_copy(update={"timeout_ms": timeout_ms})
        new = InteractionFacts(
            interaction_id=ids.interaction_id(call_id),
            kind=request.kind,
            request=request.model_dump(mode="json", exclude_none=True),
            source="agent_tool",
            owner_scope=INTERACTION,  # the runtime's: the main IM, never an app
            instance_id=session_row.instance_id if session_row else None,
            agent_id=envelope.sender.id,
            conversation_id=envelope.scope.conversation_id or session.conversation_id,
            app_session_id=session_row.app_session_id if session_row else None,
            call_id=call_id,
            expires_at=now + expires_in_ms / 1000 if expires_in_ms is not None else None,
        )
        reply = await self.step(new, "ask", call_event="ask", call_facts=call_facts)
        if reply.created:
            self.arm(reply.interaction)
        await self.advance(reply.interaction)

    async def _session_context(
        self, context: object, envelope: RuntimeEnvelope
    ) -> AppSessionRow | None:
        """The sub-session an Agent's question names, or None (the main IM: never guessed from
        the foreground app). One that is not this Agent's and conversation's, or no session at
        all, is refused `app_session_invalid`; a closed one is history, and revives nothing."""
        return await _app_sessions.named(self.store, context, envelope)

    async def advance(self, row: InteractionRow) -> None:
        """Carry an interaction on from where it stands (after `ask`, or at start): a pending
        one is presented; a presented notice answered; a MiniApp's answered one told to its
        app and settled."""
        if row.state == "pending":
            try:
                row = (await self.step(row, "present")).interaction
            except LineUpError as exc:  # answered or ended while it was being shown: fine
                if exc.code not in (ErrorCode.INTERACTION_FINAL, ErrorCode.INVALID_ARGUMENTS):
                    raise
                row = await self.get_row(interaction_id=row.interaction_id) or row
        if row.state == "presented" and row.kind == "notice":
            await self._answer(row, {"acknowledged": False})
        elif row.state == "submitted" and row.source == "miniapp":
            await self._settle_with_owner(row)

    # ------------------------------------------------------------------ the user's answer

    async def answer(self, msg: InteractionAnswerRequest) -> InteractionAnswerReply:
        """The user's answer from the Shell. The first committed write wins: an answer to an
        interaction that has one (or ended) writes nothing and gets it as it is. Raises
        `interaction_not_found`, `answer_invalid` (nothing recorded)."""
        row = await self.get_row(interaction_id=msg.interaction_id)
        if row is None:
            raise LineUpError(ErrorCode.INTERACTION_NOT_FOUND, msg.interaction_id)
        if row.state not in WAITING:
            return InteractionAnswerReply(interaction=interaction_view_of(row), changed=False)
        if std.is_cancel(msg.answer):
            if row.kind not in ("choice", "input"):
                raise LineUpError(ErrorCode.ANSWER_INVALID, "this kind has no cancel")
            ended, changed = await self.end(row, "cancel", ErrorCode.CANCELLED_BY_USER.value)
            return InteractionAnswerReply(interaction=interaction_view_of(ended), changed=changed)
        result = std.result_of(std.REQUEST.validate_python(row.request), msg.answer)
        answered, changed = await self._answer(row, result)
        return InteractionAnswerReply(interaction=interaction_view_of(answered), changed=changed)

    async def _answer(
        self, row: InteractionRow, result: dict[str, Any]
    ) -> tuple[InteractionRow, bool]:
        try:
            reply = await self.step(
                row,
                "answer",
                result=result,
                call_event="submit" if row.source == "agent_tool" else None,
            )
        except LineUpError as exc:
            if exc.code not in (ErrorCode.INTERACTION_FINAL, ErrorCode.INVALID_ARGUMENTS):
                raise
            again = await self.get_row(interaction_id=row.interaction_id)
            return (again or row), False
        if reply.changed and row.source == "miniapp":
            await self._settle_with_owner(reply.interaction)
        return reply.interaction, reply.changed

    async def settled(self, call_id: str) -> None:
        """The transport's word on a call's terminal row: if the call asked a question, the
        store settled (or failed) the interaction with it; show that."""
        row = await self.get_row(call_id=call_id)
        if row is not None:
            await self._push(row)

    # ------------------------------------------------------------------ the Agent's dismiss

    async def dismiss(
        self, envelope: RuntimeEnvelope, dismissal: wire.DismissPayload, peer: str
    ) -> None:
        """`lineup.v1.interaction.dismiss` (`dismissal`, as the wire parsed it): the Agent and
        its conversation are the authenticated envelope's; the interaction is found by
        `call_id`. One already ended (or answered), and a replay, get the same receipt:
        audited, nothing written. Raises `interaction_not_found` for a call that asked nothing
        of this Agent."""
        call_id = dismissal.call_id
        row = await self.get_row(call_id=call_id)
        if (
            row is None
            or row.source != "agent_tool"
            or row.agent_id != envelope.sender.id
            or row.conversation_id != envelope.scope.conversation_id
        ):
            raise LineUpError(ErrorCode.INTERACTION_NOT_FOUND, call_id)
        _, changed = await self.end(row, "cancel", ErrorCode.INTERACTION_DISMISSED.value)
        self.bus.audit(
            AuditRecord(
                event="router.interaction_dismissed" if changed else "router.dismiss_repeated",
                actor=self.me.name,
                peer=peer,
                message_type=wire.DISMISS,
                subject_id=row.interaction_id,
            )
        )

    async def _settle_with_owner(self, row: InteractionRow) -> None:
        """A MiniApp's answered question: tell its app, then settle it (told means delivered;
        an app that is down hears of it when it next asks or the router restarts)."""
        if await self._tell_owner(row):
            try:
                await self.step(row, "settle")
            except LineUpError as exc:
                log.info("router.interaction_settle_skipped code=%s", exc.code.value)

    async def _tell_owner(self, row: InteractionRow) -> bool:
        code = await self.bus.tell(
            f"miniapp:{row.owner_scope}",
            sdk.InteractionUpdatedEvent(interaction=record_of(row)),
            timeout=TELL_TIMEOUT,
        )
        if code is not None:
            log.info("router.interaction_not_told code=%s", code.value)
        return code is None

    # ------------------------------------------------------------------ the Shell's list

    async def list(self, msg: InteractionsListRequest) -> InteractionsListReply:
        interactions = await self.store(
            InteractionListRequest(recent=msg.recent), InteractionListReply
        )
        sessions = await self.store(
            AppSessionListRequest(recent=max(1, msg.recent)), AppSessionListReply
        )
        return InteractionsListReply(
            interactions=tuple(interaction_view_of(row) for row in interactions.interactions),
            sessions=tuple(session_view_of(row) for row in sessions.sessions),
        )

    async def _push(self, row: InteractionRow) -> None:
        code = await self.bus.tell(
            "hostbridge",
            InteractionsUpdatedEvent(interactions=(interaction_view_of(row),)),
            timeout=TELL_TIMEOUT,
        )
        if code is not None:
            log.info("router.interaction_not_shown code=%s", code.value)

    # ------------------------------------------------------------------ an instance ended

    async def pending_of(self, app_session_id: str) -> tuple[str, ...]:
        """The call ids of the Agent's questions of a sub-session still waiting for an answer."""
        reply = await self.store(
            InteractionListRequest(open_only=True, recent=0, app_session_id=app_session_id),
            InteractionListReply,
        )
        return tuple(
            row.call_id
            for row in reply.interactions
            if row.source == "agent_tool" and row.state in WAITING and row.call_id is not None
        )

    async def cancel_app_owned(self, instance_id: str) -> None:
        """The instance ended: its app's own questions still open end `cancelled(app_closed)`
        (the Agent's stay: the main IM keeps them)."""
        reply = await self.store(
            InteractionListRequest(open_only=True, recent=0, instance_id=instance_id),
            InteractionListReply,
        )
        for row in reply.interactions:
            if row.source == "miniapp" and row.state in WAITING:
                try:
                    await self.end(row, "cancel", APP_CLOSED)
                except LineUpError as exc:
                    log.info("router.interaction_cancel_skipped code=%s", exc.code.value)

    # ------------------------------------------------------------------ start, expiry

    async def _recover(self) -> None:
        """At start: every open interaction gets its timer again and goes on from where the
        previous router left it; the sub-sessions are swept."""
        try:
            reply = await self.store(
                InteractionListRequest(open_only=True, recent=0), InteractionListReply
            )
        except LineUpError as exc:
            log.warning("router.interactions_not_recovered code=%s", exc.code.value)
            return
        for row in reply.interactions:
            if row.state in WAITING:
                self.arm(row)
            try:
                await self.advance(row)
            except LineUpError as exc:
                log.info("router.interaction_resume_failed code=%s", exc.code.value)

    def arm(self, row: InteractionRow) -> None:
        if row.expires_at is None:
            return
        self._deadlines.arm(row.expires_at, row.interaction_id)

    async def _expire(self, interaction_id: str) -> None:
        """An interaction past its `expires_at` expires with its call, in one step, unless it
        was answered or ended first."""
        try:
            row = await self.get_row(interaction_id=interaction_id)
            if row is not None:
                await self.end(row, "expire", ErrorCode.OPERATION_EXPIRED.value)
        except LineUpError as exc:
            log.warning("router.interaction_expire_failed code=%s", exc.code.value)
