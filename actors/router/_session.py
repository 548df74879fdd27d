"""The AppServer session the router works in: the one the transport last logged in to.

The transport writes it to the store (`SESSION_CURSOR`) at each login and tells the router
(`SessionStartedEvent`). Every outbound envelope is from its user, in its conversation, so a
call's every step needs it: it is read from the store at most once per `SESSION_TTL`, and again
after the transport says it logged in anew; the TTL bounds how stale it is if that word is lost.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Final

import trio

from lineup.actors.kernel import Bus, ErrorCode, LineUpError
from lineup.actors.store.messages import CursorGetReply, CursorGetRequest
from lineup.actors.transport.messages import AppServerSession, session_of
from lineup.facts.link import SESSION_CURSOR

__all__ = ["AppServerSession", "SessionCache", "SessionSource"]

log = logging.getLogger("lineup.router")

SESSION_TTL: Final = 1.0  # seconds a read of it is reused
# What the router's services are given: `await session()`, raising `not_connected` before the
# first login (or for a value the router cannot use).
SessionSource = Callable[[], Awaitable[AppServerSession]]


class SessionCache:
    """The session, read through (the module's docstring)."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self._seen: tuple[float, AppServerSession] | None = None

    def forget(self) -> None:
        """The transport logged in anew: read the session again at its next use."""
        self._seen = None

    async def get(self) -> AppServerSession:
        """The AppServer session the transport last logged in to. Read from the store at most
        once per `SESSION_TTL` (a call's every step needs it), and again after the transport
        says it logged in anew; the TTL bounds how stale it is if that word is lost."""
        now = trio.current_time()
        if self._seen is not None and now - self._seen[0] < SESSION_TTL:
            return self._seen[1]
        reply = await self.bus.request(
            "store", CursorGetRequest(name=SESSION_CURSOR), expect=CursorGetReply
        )
        if reply.value is None:
            raise LineUpError(ErrorCode.NOT_CONNECTED, "no AppServer session yet")
        session = session_of(reply.value)
        if session is None:
            # Not what the transport writes: as good as none, until it logs in again (the
            # store's start-up sweep quarantines such a value).
            log.warning("router.session_undecodable")
            raise LineUpError(ErrorCode.NOT_CONNECTED, "no usable AppServer session")
        self._seen = (now, session)
        return session

    async def conversation_or_none(self) -> str | None:
        try:
            return (await self.get()).conversation_id
        except LineUpError as exc:
            if exc.code is not ErrorCode.NOT_CONNECTED:
                raise
            return None
