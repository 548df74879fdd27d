"""An instance's end across the router's three services, in the seeds' order; and the sweep
that makes up what a lost instance event left undone.

Theory of operation
-------------------
When focus tells that an instance `ended` (or `failed`), seed 000 §7.3 orders what follows:
its calls not decided converge first (`_tools`: `cancelled(app_closed)`, a held one
`rejected(activation_*)`), then its app's own questions end `cancelled(app_closed)` (the
interactions), then its sub-session closes, naming the Agent's questions still pending (the
sub-sessions), so the Agent hears the calls' errors before `app_session.closed`. Nothing is
held between the steps: a router that dies there leaves the sub-session open, and the sweep
at its start does them all again, in this order (each a repeat where it was done).

This is the one place that knows all three services; none of them holds another.

Events can be lost (a router or focus that died in between): `sweep` makes the store's truth
hold — every live instance but the chat has an open sub-session, every open one a live
instance. It runs at start, when focus recovers, after each login (an instance started while
the runtime was never logged in could not name its Agent), and in each reconcile round.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Final

from lineup.actors.kernel import Bus, LineUpError
from lineup.actors.store.messages import (
    AppSessionListReply,
    AppSessionListRequest,
    InstanceListReply,
    InstanceListRequest,
)
from lineup.facts.scopes import CHAT

from ._app_sessions import AppSessions
from ._interactions import InteractionService
from ._tools import ToolCalls

__all__ = ["InstanceLifecycle"]

log = logging.getLogger("lineup.router.lifecycle")

STORE_TIMEOUT: Final = 30.0


class InstanceLifecycle:
    """An instance's end and the sweep, over the router's services (see the module's
    docstring)."""

    def __init__(
        self,
        bus: Bus,
        calls: ToolCalls,
        interactions: InteractionService,
        sessions: AppSessions,
    ) -> None:
        self.bus = bus
        self._calls = calls
        self._interactions = interactions
        self._sessions = sessions

    async def ended(self, instance_id: str, app_scope: str, failed: bool = False) -> None:
        """The instance ended (stopped, or `failed`): its calls converge, then its questions
        end and its sub-session closes. A converge that fails is raised (no close before it);
        a close that fails is made up by the next sweep."""
        await self._calls.converge(instance_id, app_scope, failed)
        try:
            await self.close(instance_id, app_scope)
        except LineUpError as exc:
            log.warning("router.app_session_not_closed code=%s", exc.code.value)

    async def close(self, instance_id: str, app_scope: str) -> None:
        """The app's own questions of the instance end `cancelled(app_closed)`, then its
        sub-session closes, naming the Agent's questions of it still pending."""
        await self._interactions.cancel_app_owned(instance_id)
        await self._sessions.closed(instance_id, app_scope, self._interactions.pending_of)

    async def sweep(self) -> None:
        """The store is the truth: every live instance (but the chat) has an open sub-session,
        every open sub-session a live instance; what a lost event left undone is done here."""
        # The sessions first: one opened after this read is not closed below for want of an
        # instance read before it was born (its `started` is told after its row commits).
        try:
            sessions = await self.bus.request(
                "store",
                AppSessionListRequest(open_only=True, recent=1),
                expect=AppSessionListReply,
                timeout=STORE_TIMEOUT,
                retry=True,
            )
            live = await self.bus.request(
                "store",
                InstanceListRequest(),
                expect=InstanceListReply,
                timeout=STORE_TIMEOUT,
                retry=True,
            )
        except LineUpError as exc:
            log.warning("router.app_session_sweep_failed code=%s", exc.code.value)
            return
        alive = {row.instance_id: row.app_scope for row in live.instances}
        opened = {row.instance_id for row in sessions.sessions if row.state == "open"}
        for row in sessions.sessions:
            if row.state == "open" and row.instance_id not in alive:
                await _guard(self.ended(row.instance_id, row.app_scope))
        for instance_id, app_scope in alive.items():
            if app_scope != CHAT and instance_id not in opened:
                await _guard(self._sessions.opened(instance_id, app_scope))


async def _guard(work: Awaitable[None]) -> None:
    try:
        await work
    except LineUpError as exc:
        log.warning("router.app_session_sweep_skipped code=%s", exc.code.value)
