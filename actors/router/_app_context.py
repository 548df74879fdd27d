"""An MCP App's context for the Agent (`ui/update-model-context`, issue 30), in its sub-session.

Theory of operation
-------------------
The Agent hears of an app sub-session only through the outbox (`app_session.opened|closed`,
`_app_sessions`); an app's context goes the same way, as its own envelope type
(`lineup.v1.app_session.context`), never as a text: it is what the app says of itself, not
the user's words, and it starts no turn. Each update carries the app's whole context and a
`revision` (wall-clock milliseconds, and always above the last one this router gave), and
replaces the one before it in that sub-session, as the spec says each update overwrites; so
the Agent keeps the highest revision. An update equal to the app's last one tells nothing
(the spec's "MAY dedupe"). A row's id is the Surface's request's (`ids.app_context_row_id`):
a hostbridge's retry is a repeat, not a second update.

Only a live instance of `app_scope` (focus says) with an open sub-session of the logged-in
Agent and conversation has one. Every update, told or refused, is audited by its type and
code, never its content.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Final

from lineup import wire
from lineup.actors.focus.messages import FindInstanceRequest, InstanceReply
from lineup.actors.kernel import AuditRecord, Bus, ErrorCode, Identity, LineUpError
from lineup.actors.store.messages import (
    AppSessionGetReply,
    AppSessionGetRequest,
    OutboxAppendReply,
    OutboxAppendRequest,
)

from . import _ids as ids
from ._outbox import envelope_of, wake
from ._session import SessionSource
from .messages import SurfaceContextReply, SurfaceContextRequest

__all__ = ["APP_CONTEXT_REFUSED", "APP_CONTEXT_TOLD", "AppContexts"]

STORE_TIMEOUT: Final = 30.0
APP_CONTEXT_TOLD: Final = "router.app_context_told"  # its audit event
APP_CONTEXT_REFUSED: Final = "router.app_context_refused"
MAX_REMEMBERED: Final = 1024  # instances whose last context is remembered (for the dedupe)


class AppContexts:
    """The apps' context updates of one router (see the module's docstring)."""

    def __init__(self, bus: Bus, me: Identity, session: SessionSource) -> None:
        self.bus = bus
        self._me = me
        self._session = session
        self._revision = 0
        self._last: dict[str, tuple[str, int]] = {}  # instance → (digest, revision) last told

    def _next_revision(self) -> int:
        self._revision = max(self._revision + 1, int(time.time() * 1000))
        return self._revision

    def _audit(self, event: str, msg: SurfaceContextRequest, peer: str, code: str | None) -> None:
        self.bus.audit(
            AuditRecord(
                event=event,
                actor=self._me.name,
                peer=peer,
                code=code,
                message_type=msg.TYPE,
                subject_id=msg.instance_id,
            )
        )

    async def update(self, msg: SurfaceContextRequest, peer: str) -> SurfaceContextReply:
        """Tell the Agent the app's context (see the module's docstring). Raises
        `app_instance_not_found`, `app_session_invalid`, `not_connected`."""
        try:
            reply = await self._update(msg)
        except LineUpError as exc:
            self._audit(APP_CONTEXT_REFUSED, msg, peer, exc.code.value)
            raise
        self._audit(APP_CONTEXT_TOLD, msg, peer, None)
        return reply

    async def _update(self, msg: SurfaceContextRequest) -> SurfaceContextReply:
        await self.bus.request(
            "focus",
            FindInstanceRequest(app_scope=msg.app_scope, instance_id=msg.instance_id),
            expect=InstanceReply,
            timeout=STORE_TIMEOUT,
            retry=True,
        )
        session = await self._session()
        found = (
            await self.bus.request(
                "store",
                AppSessionGetRequest(instance_id=msg.instance_id),
                expect=AppSessionGetReply,
                timeout=STORE_TIMEOUT,
                retry=True,
            )
        ).session
        if (
            found is None
            or found.state != "open"
            or found.app_scope != msg.app_scope
            or found.conversation_id != session.conversation_id
        ):
            raise LineUpError(ErrorCode.APP_SESSION_INVALID, "no open sub-session")
        digest = hashlib.sha256(
            json.dumps(
                [msg.content, msg.structured_content], sort_keys=True, separators=(",", ":")
            ).encode()
        ).hexdigest()
        last = self._last.get(msg.instance_id)
        if last is not None and last[0] == digest:
            return SurfaceContextReply(revision=last[1], changed=False)
        revision = self._next_revision()
        outbox_id = ids.app_context_row_id(msg.instance_id, msg.request_id)
        payload = wire.AppContextPayload(
            agent_id=found.agent_id or session.agent_id,
            conversation_id=found.conversation_id,
            app_session_id=found.app_session_id,
            app_scope=found.app_scope,
            instance_id=found.instance_id,
            revision=revision,
            content=tuple(wire.AppContextText(text=text) for text in msg.content),
            structured_content=msg.structured_content,
        )
        appended = await self.bus.request(
            "store",
            OutboxAppendRequest(
                outbox_id=outbox_id,
                conversation_id=found.conversation_id,
                kind=wire.APP_SESSION_CONTEXT,
                body=envelope_of(
                    session,
                    wire.APP_SESSION_CONTEXT,
                    payload,
                    outbox_id,
                    app_scope=found.app_scope,
                ),
            ),
            expect=OutboxAppendReply,
            timeout=STORE_TIMEOUT,
            retry=True,
        )
        if appended.created:
            await wake(self.bus)
        self._last.pop(msg.instance_id, None)
        self._last[msg.instance_id] = (digest, revision)
        while len(self._last) > MAX_REMEMBERED:
            del self._last[next(iter(self._last))]
        return SurfaceContextReply(revision=revision, changed=appended.created)
