"""A MiniApp's own questions to the user, and a Surface's (seed 003 §3.4): the owner is the app
of the channel (or, for a Surface, of the view the hostbridge relays) and one of its live
instances, never a field the app fills in; the result goes to that app only.

Theory of operation
-------------------
A question is recorded as its app's (`source` "miniapp"), idempotent by (instance, request id):
a retry asks nothing new. Each app has a quota of open questions (`MAX_OPEN_PER_APP`), counted
under the interactions' one lock so that the count and the birth agree. Naming another app's
instance, call or interaction is refused as if it did not exist and audited (ids and the code,
never what was asked); the app learns nothing of it. From its birth on, the question is an
interaction like any other (`_interactions`): presented, answered or ended, told to its app and
settled.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from lineup.actors.focus.messages import FindInstanceRequest, InstanceReply
from lineup.actors.kernel import AuditRecord, ErrorCode, Identity, LineUpError, app_scope_of
from lineup.actors.store.messages import (
    InteractionFacts,
    InteractionRow,
    ToolCallGetReply,
    ToolCallGetRequest,
)
from lineup.facts import tool_calls as call_machine
from lineup.sdk import interactions as std
from lineup.sdk import protocol as sdk

from . import _ids as ids
from ._interactions import MAX_OPEN_PER_APP, STORE_TIMEOUT, InteractionService
from ._views import interaction_view_of, record_of
from .messages import SurfaceAskReply, SurfaceAskRequest

__all__ = ["AppQuestions"]


class AppQuestions:
    """The MiniApps' and Surfaces' questions (the module's docstring), as interactions of
    `service`."""

    def __init__(self, service: InteractionService) -> None:
        self.service = service
        self.bus = service.bus
        self.me = service.me

    async def request(
        self, sender: Identity, msg: sdk.InteractionAskRequest
    ) -> sdk.InteractionReceipt:
        """`sdk.ui.request`: the owner is the sender's app and one of its live instances.
        Naming any other instance (another app's, or none live) is refused
        `app_instance_not_found` and audited, as the quota's refusal is."""
        scope = app_scope_of(sender)
        try:
            instance = await self._own_instance(sender, msg.instance_id)
        except LineUpError as exc:
            if exc.code is ErrorCode.APP_INSTANCE_NOT_FOUND:
                self._audit_app(
                    "router.interaction_refused", sender, exc.code, msg.TYPE, msg.instance_id
                )
            raise
        if msg.parent_call_id is not None:
            await self._own_parent(sender, msg.parent_call_id, instance.instance_id, msg.TYPE)
        current, created = await self._ask_app(
            scope,
            instance.instance_id,
            ids.app_interaction_id(scope, instance.instance_id, msg.request_id),
            msg.request,
            expires_in_ms=msg.expires_in_ms,
            parent_call_id=msg.parent_call_id,
            presentation=msg.presentation,
            refused=lambda code: self._audit_app(
                "router.interaction_refused", sender, code, msg.TYPE, instance.instance_id
            ),
        )
        return sdk.InteractionReceipt(interaction=record_of(current), changed=created)

    async def surface_ask(self, msg: SurfaceAskRequest, peer: str) -> SurfaceAskReply:
        """A Surface's `lineup/ui/request`, relayed by the hostbridge: recorded as its app's own
        question of that instance (focus says the instance is live and the app's), under the
        app's quota, idempotent by (instance, request id). Refusals audited by type and code."""

        try:
            instance = await self.bus.request(
                "focus",
                FindInstanceRequest(app_scope=msg.app_scope, instance_id=msg.instance_id),
                expect=InstanceReply,
                timeout=STORE_TIMEOUT,
                retry=True,
            )
            current, created = await self._ask_app(
                msg.app_scope,
                instance.instance_id,
                ids.surface_interaction_id(msg.app_scope, instance.instance_id, msg.request_id),
                msg.request,
                refused=lambda code: None,  # audited below, as every other refusal
            )
        except LineUpError as exc:
            self.bus.audit(
                AuditRecord(
                    event="router.interaction_refused",
                    actor=self.me.name,
                    peer=peer,
                    code=exc.code.value,
                    message_type=msg.TYPE,
                    subject_id=msg.instance_id,
                )
            )
            raise
        return SurfaceAskReply(interaction=interaction_view_of(current), changed=created)

    async def _ask_app(
        self,
        scope: str,
        instance_id: str,
        interaction_id: str,
        asked: dict[str, Any],
        *,
        refused: Callable[[ErrorCode], None],
        expires_in_ms: int | None = None,
        parent_call_id: str | None = None,
        presentation: sdk.Presentation = "default",
    ) -> tuple[InteractionRow, bool]:
        """Record (or find again) app `scope`'s question of `instance_id`: the standard
        request `asked` (its `kind` and fields), within the app's quota; then carry it on.
        Returns the interaction as it stands, and whether this asked it."""
        kind = asked.get("kind")
        tool_input = {k: v for k, v in asked.items() if k != "kind"}
        if expires_in_ms is not None and kind != "notice":
            tool_input["expires_in_ms"] = expires_in_ms
        try:
            request, expires = std.request_of(f"interaction.{kind}", tool_input)
        except LineUpError as exc:
            raise LineUpError(ErrorCode.TOOL_INPUT_INVALID, "not a standard request") from exc
        session = await self.service.session()
        new = InteractionFacts(
            interaction_id=interaction_id,
            kind=request.kind,
            request=request.model_dump(mode="json", exclude_none=True),
            source="miniapp",
            owner_scope=scope,
            instance_id=instance_id,
            agent_id=session.agent_id,
            conversation_id=session.conversation_id,
            parent_call_id=parent_call_id,
            presentation=presentation,
            expires_at=time.time() + expires / 1000 if expires is not None else None,
        )
        async with self.service.asking:
            if await self.service.get_row(interaction_id=new.interaction_id) is None and (
                await self.service.over_quota("miniapp", scope)
            ):
                refused(ErrorCode.QUOTA_EXCEEDED)
                raise LineUpError(
                    ErrorCode.QUOTA_EXCEEDED, f"{MAX_OPEN_PER_APP} questions are open"
                )
            reply = await self.service.step(new, "ask")
        if reply.created:
            self.service.arm(reply.interaction)
        await self.service.advance(reply.interaction)
        current = await self.service.get_row(interaction_id=new.interaction_id) or reply.interaction
        return current, reply.created

    async def get(self, sender: Identity, msg: sdk.InteractionGetRequest) -> sdk.InteractionReceipt:
        row = await self._own_interaction(sender, msg.interaction_id, msg.TYPE)
        return sdk.InteractionReceipt(interaction=record_of(row), changed=False)

    async def cancel(
        self, sender: Identity, msg: sdk.InteractionCancelRequest
    ) -> sdk.InteractionReceipt:
        row = await self._own_interaction(sender, msg.interaction_id, msg.TYPE)
        ended, changed = await self.service.end(
            row, "cancel", msg.reason, expected_owner=(row.owner_scope, row.instance_id)
        )
        return sdk.InteractionReceipt(interaction=record_of(ended), changed=changed)

    def _audit_app(
        self, event: str, sender: Identity, code: ErrorCode, tag: str, subject_id: str
    ) -> None:
        """A MiniApp's request refused: ids and the code, never what it asked."""
        self.bus.audit(
            AuditRecord(
                event=event,
                actor=self.me.name,
                peer=sender.name,
                code=code.value,
                message_type=tag,
                subject_id=subject_id,
            )
        )

    async def _own_interaction(
        self, sender: Identity, interaction_id: str, tag: str
    ) -> InteractionRow:
        """The sender app's own interaction. Any other (the Agent's, another app's, none) is
        `interaction_not_found`, and audited when it exists: the app learns nothing of it."""
        row = await self.service.get_row(interaction_id=interaction_id)
        if row is None or row.source != "miniapp" or row.owner_scope != app_scope_of(sender):
            if row is not None:
                self._audit_app(
                    "router.interaction_denied",
                    sender,
                    ErrorCode.INTERACTION_NOT_FOUND,
                    tag,
                    interaction_id,
                )
            raise LineUpError(ErrorCode.INTERACTION_NOT_FOUND, interaction_id)
        return row

    async def _own_instance(self, sender: Identity, instance_id: str) -> InstanceReply:
        """One of the sender app's live instances (focus's word), else `app_instance_not_found`."""
        return await self.bus.request(
            "focus",
            FindInstanceRequest(app_scope=app_scope_of(sender), instance_id=instance_id),
            expect=InstanceReply,
            timeout=STORE_TIMEOUT,
            retry=True,
        )

    async def _own_parent(self, sender: Identity, call_id: str, instance_id: str, tag: str) -> None:
        """A `parent_call_id` must be a call of this very instance that is not decided."""
        call = (
            await self.service.store(ToolCallGetRequest(call_id=call_id), ToolCallGetReply)
        ).call
        if call is None or call.app_scope != app_scope_of(sender):
            if call is not None:
                self.bus.audit(AuditRecord.scope_denied(self.me.name, sender.name, tag, call_id))
            raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, call_id)
        if call.instance_id != instance_id:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, call_id)
        if call.state in call_machine.DECIDED:
            raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, call_id)
