"""App sub-sessions (seed 000 §7.3): the folded group of an instance's questions in the main IM,
and the Agent's word that it began and ended.

Theory of operation
-------------------
One sub-session per instance of any app but the chat, opened when focus announces the instance
`started` (id `lu:app_session:<instance>`: deterministic, so an event told twice, or a sweep
after it, is a repeat) and closed when it `ended` / `failed`, once its calls have converged
(`_lifecycle` keeps that order); each with its `lineup.v1.app_session.opened|closed` outbox row
in the same transaction (the store's `AppSessionOpenRequest` / `AppSessionCloseRequest`), so
the Agent hears of each once each way.
Going behind, or a tool of it finishing, changes nothing: only the instance's end closes it.
The closing row lists the Agent's questions of the sub-session still pending, which stay open
(the main IM keeps them).
A closed sub-session is history: an Agent may still name it, and nothing revives it. The
user's "Continue" (`continue_`) launches a new instance of its app, whose new sub-session names
the old one as `previous_app_session_id`: the link is registered by app before the launch, so
the instance's `started` event, which may arrive before the launch's answer, opens it linked.

An Agent's text may name an open sub-session of its own (`of_text`): it is a short result of
that sub-session, stored in the chat's inbox like any text and shown in the group.
"""

from __future__ import annotations

import logging
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final, TypeVar

import trio

from lineup import wire
from lineup.actors.focus.messages import FindInstanceRequest, InstanceReply, LaunchRequest
from lineup.actors.kernel import Bus, ErrorCode, LineUpError, Message
from lineup.actors.store.messages import (
    AppSessionCloseReply,
    AppSessionCloseRequest,
    AppSessionGetReply,
    AppSessionGetRequest,
    AppSessionListReply,
    AppSessionListRequest,
    AppSessionOpenReply,
    AppSessionOpenRequest,
    AppSessionRow,
)
from lineup.facts.scopes import CHAT
from lineup.hostbridge.messages import AppSessionsUpdatedEvent

from . import _ids as ids
from ._outbox import envelope_of, wake
from ._session import SessionSource
from ._views import session_view_of

if TYPE_CHECKING:
    from ._envelope import RuntimeEnvelope

__all__ = ["AppSessions", "PendingOf", "named"]

log = logging.getLogger("lineup.router.app_sessions")
M = TypeVar("M", bound=Message)

STORE_TIMEOUT: Final = 30.0
TELL_TIMEOUT: Final = 1.0  # the hostbridge is told best effort: the Shell lists on connect
# The call ids of the Agent's questions of a sub-session still pending (by its id).
PendingOf = Callable[[str], Awaitable[tuple[str, ...]]]


class AppSessions:
    """The sub-sessions of one router (see the module's docstring)."""

    def __init__(
        self,
        bus: Bus,
        session: SessionSource,
    ) -> None:
        self.bus = bus
        self._session = session
        # One open / close at a time: an event and a sweep may race for the same instance.
        self._lock = trio.Lock()
        # "Continue"s under way, by app: the old sub-session each new instance references.
        self._continuing: dict[str, deque[str]] = {}
        self._continue_lock = trio.Lock()

    async def _store(self, request: Message, expect: type[M]) -> M:
        return await self.bus.request(
            "store", request, expect=expect, timeout=STORE_TIMEOUT, retry=True
        )

    async def opened(self, instance_id: str, app_scope: str) -> None:
        """Open the instance's sub-session (with its `app_session.opened` row): a repeat, if
        it is open already, writes nothing."""
        if app_scope == CHAT:
            return
        try:
            session = await self._session()
        except LineUpError as exc:
            if exc.code is not ErrorCode.NOT_CONNECTED:
                raise  # the store did not answer: the caller sweeps again
            # Never logged in: the sweep after the login opens it.
            log.info("router.app_session_not_opened code=%s", exc.code.value)
            return
        async with self._lock:
            outbox_id = ids.app_session_row_id(instance_id, "opened")
            session_id = ids.app_session_id(instance_id)
            waiting = self._continuing.get(app_scope)
            previous = waiting.popleft() if waiting else None
            payload = wire.AppSessionPayload(
                agent_id=session.agent_id,
                conversation_id=session.conversation_id,
                app_session_id=session_id,
                app_scope=app_scope,
                instance_id=instance_id,
                previous_app_session_id=previous,
            )
            reply = await self._store(
                AppSessionOpenRequest(
                    app_session_id=session_id,
                    app_scope=app_scope,
                    instance_id=instance_id,
                    agent_id=payload.agent_id,
                    conversation_id=payload.conversation_id,
                    previous_app_session_id=previous,
                    outbox_id=outbox_id,
                    wire=envelope_of(session, wire.APP_SESSION_OPENED, payload, outbox_id),
                ),
                AppSessionOpenReply,
            )
        if reply.created:
            await wake(self.bus)
            await self._push(reply.session)

    async def continue_(self, app_session_id: str) -> AppSessionRow:
        """The user's "Continue" of an ended sub-session: a new instance of its app, with a new
        sub-session that references the old one. Refused `app_session_invalid` for an unknown
        or open one; while a continuation of it is open, that one (brought forward)."""
        old = (
            await self._store(
                AppSessionGetRequest(app_session_id=app_session_id), AppSessionGetReply
            )
        ).session
        if old is None or old.state != "closed":
            raise LineUpError(ErrorCode.APP_SESSION_INVALID, app_session_id)
        async with self._continue_lock:  # a double click continues once
            for row in (
                await self._store(AppSessionListRequest(open_only=True), AppSessionListReply)
            ).sessions:
                if row.state == "open" and row.previous_app_session_id == app_session_id:
                    await self.bus.request(
                        "focus",
                        FindInstanceRequest(
                            app_scope=row.app_scope, instance_id=row.instance_id, foreground=True
                        ),
                        expect=InstanceReply,
                        timeout=STORE_TIMEOUT,
                    )
                    return row
            waiting = self._continuing.setdefault(old.app_scope, deque())
            waiting.append(app_session_id)
            try:
                instance = await self.bus.request(
                    "focus",
                    LaunchRequest(
                        app_scope=old.app_scope, call_id=ids.continue_id(uuid.uuid4().hex)
                    ),
                    expect=InstanceReply,
                    timeout=STORE_TIMEOUT,
                )
            finally:
                if app_session_id in waiting:  # never started: the link is not for another
                    waiting.remove(app_session_id)
            await self.opened(instance.instance_id, instance.app_scope)  # a repeat, if it is
            found = (
                await self._store(
                    AppSessionGetRequest(instance_id=instance.instance_id), AppSessionGetReply
                )
            ).session
        if found is None:  # not logged in yet: the sweep after the login opens it, unlinked
            raise LineUpError(ErrorCode.NOT_CONNECTED, "no AppServer session yet")
        return found

    async def closed(self, instance_id: str, app_scope: str, pending_of: PendingOf) -> None:
        """Close the instance's sub-session: its `app_session.closed` row lists the Agent's
        questions of it still pending (`pending_of` the sub-session's id), which stay open
        (the main IM keeps them)."""
        if app_scope == CHAT:
            return
        async with self._lock:
            found = (
                await self._store(AppSessionGetRequest(instance_id=instance_id), AppSessionGetReply)
            ).session
            if found is None or found.state != "open":
                return
            session = await self._session()
            pending = await pending_of(found.app_session_id)
            outbox_id = ids.app_session_row_id(instance_id, "closed")
            payload = wire.AppSessionPayload(
                agent_id=found.agent_id or "",
                conversation_id=found.conversation_id,
                app_session_id=found.app_session_id,
                app_scope=found.app_scope,
                instance_id=found.instance_id,
                previous_app_session_id=found.previous_app_session_id,
                pending_interaction_call_ids=pending,
            )
            reply = await self._store(
                AppSessionCloseRequest(
                    app_session_id=found.app_session_id,
                    outbox_id=outbox_id,
                    wire=envelope_of(session, wire.APP_SESSION_CLOSED, payload, outbox_id),
                ),
                AppSessionCloseReply,
            )
        if reply.changed:
            await wake(self.bus)
            await self._push(reply.session)

    async def _push(self, row: AppSessionRow) -> None:
        code = await self.bus.tell(
            "hostbridge",
            AppSessionsUpdatedEvent(sessions=(session_view_of(row),)),
            timeout=TELL_TIMEOUT,
        )
        if code is not None:
            log.info("router.app_session_not_shown code=%s", code.value)

    async def of_text(self, envelope: RuntimeEnvelope, context: object) -> str | None:
        """The sub-session an Agent's text is a short result of (its `app_session_context`,
        `context`), or None: without one it is the main IM's, as any text. Raises
        `app_session_invalid` for a text with one that is not for the main IM (the chat), or
        that names anything but an open sub-session of this Agent and conversation: unlike a
        question, a text never goes to a closed one, which takes no new records (seed 000
        §7.3)."""
        found = await named(self._store, context, envelope)
        if found is None:
            return None
        if envelope.scope.app_scope != CHAT or found.state != "open":
            raise LineUpError(ErrorCode.APP_SESSION_INVALID, found.app_session_id)
        return found.app_session_id


async def named(
    store: Callable[[Message, type[AppSessionGetReply]], Awaitable[AppSessionGetReply]],
    context: object,
    envelope: RuntimeEnvelope,
) -> AppSessionRow | None:
    """The sub-session an Agent's `app_session_context` names (open or closed), or None for
    no context. Raises `app_session_invalid` for a malformed one, or one that is no
    sub-session of the envelope's Agent and conversation."""
    if context is None:
        return None
    session_id = context.get("app_session_id") if isinstance(context, dict) else None
    if not isinstance(session_id, str) or not 0 < len(session_id) <= 200:
        raise LineUpError(ErrorCode.APP_SESSION_INVALID, "no app_session_id")
    reply = await store(AppSessionGetRequest(app_session_id=session_id), AppSessionGetReply)
    found = reply.session
    if (
        found is None
        or found.agent_id != envelope.sender.id
        or found.conversation_id != envelope.scope.conversation_id
    ):
        raise LineUpError(ErrorCode.APP_SESSION_INVALID, session_id)
    return found
