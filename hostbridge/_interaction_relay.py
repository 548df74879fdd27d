"""Standard interactions and app sub-sessions between the router and the Shells.

The router owns both; the hostbridge asks it for all of them (`router.ui.interactions.list`) at
start, until it answers (it may start after us), with a capped backoff, and again whenever a
Shell connects, and hears of every change (`…updated` events). What it said is kept in an
`InteractionMirror` (`_interactions`), with the input drafts, and pushed to every Shell. The
user's answers go to the router as `router.ui.interaction.answer` (and a "Continue" on an ended
sub-session as `router.ui.app_session.continue`); a refusal comes back to the Shells as a notice
with its code, is audited as a refusal, and puts the card back as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Final

import trio

from lineup.actors.kernel import Bus, LineUpError
from lineup.actors.router.messages import (
    AppSessionContinueReply,
    AppSessionContinueRequest,
    InteractionAnswerReply,
    InteractionAnswerRequest,
    InteractionsListReply,
    InteractionsListRequest,
)

from ._audit import user_record
from ._interactions import InteractionMirror, interaction_frames, session_frames
from ._refusals import RefusalLog
from ._server import ShellHub
from .messages import AppSessionView, InteractionView
from .shell_protocol import (
    AppSessionContinueFrame,
    InteractionAnswerFrame,
    InteractionDraftFrame,
    ShellNotice,
    ShellOutbound,
)

__all__ = ["ANSWER_REFUSED", "CONTINUE_REFUSED", "InteractionRelay"]

log = logging.getLogger("lineup.hostbridge")

ASK_TIMEOUT: Final = 3.0
ANSWER_TIMEOUT: Final = ASK_TIMEOUT * 5
LIST_BACKOFF_MIN: Final = 0.25  # seconds before asking a router that did not answer again
LIST_BACKOFF_MAX: Final = 5.0
ANSWER_REFUSED: Final = "hostbridge.interaction_answer_refused"
CONTINUE_REFUSED: Final = "hostbridge.app_session_continue_refused"


class InteractionRelay:
    """The router's interactions and sub-sessions to every Shell, the user's answers, drafts
    and continuations back."""

    def __init__(self, bus: Bus, hub: ShellHub) -> None:
        self._bus = bus
        self._hub = hub
        self._mirror = InteractionMirror()
        self._listed = trio.Event()  # the router answered a list once
        self._relisting = False
        self._quiet = RefusalLog(log)  # a router not up yet is asked every few seconds
        self._spawn: Callable[[Callable[[], Awaitable[None]]], None] | None = None

    def start(self, spawn: Callable[[Callable[[], Awaitable[None]]], None]) -> None:
        """Start asking the router (`spawn` is the actor's nursery's `start_soon`)."""
        spawn(self._list_until_answered)
        self._spawn = spawn

    def interactions(self, views: Iterable[InteractionView]) -> None:
        for frame in interaction_frames(self._mirror.upsert(views)):
            self._hub.broadcast(frame)

    def sessions(self, sessions: Iterable[AppSessionView]) -> None:
        for frame in session_frames(self._mirror.upsert_sessions(sessions)):
            self._hub.broadcast(frame)

    def frames(self) -> list[ShellOutbound]:
        """Everything held, as a greeting's frames (`InteractionMirror.frames`)."""
        return self._mirror.frames()

    async def _list_interactions(self, timeout: float = ASK_TIMEOUT) -> bool:
        """Ask the router for every interaction and sub-session it shows; False if it could
        not say (not up yet, or refusing): what the mirror holds then stays."""
        try:
            reply = await self._bus.request(
                "router", InteractionsListRequest(), expect=InteractionsListReply, timeout=timeout
            )
        except LineUpError as exc:
            self._quiet.refused("hostbridge.interactions_unlisted", code=exc.code.value)
            return False
        self._mirror.upsert(reply.interactions)
        self._mirror.upsert_sessions(reply.sessions)
        self._listed.set()
        return True

    async def _list_until_answered(self) -> None:
        """At start: ask until the router answers (it may start after us), then push what it
        said to the Shells already connected."""
        delay = LIST_BACKOFF_MIN
        while not self._listed.is_set():
            if await self._list_interactions():
                for frame in self._mirror.frames():
                    self._hub.broadcast(frame)
                return
            await trio.sleep(delay)
            delay = min(delay * 2, LIST_BACKOFF_MAX)

    def relist(self) -> None:
        """A Shell connected: ask the router again, in the background (the greeting does not
        wait for it), and push what it says to every Shell. One at a time."""
        if self._relisting or self._spawn is None or not self._listed.is_set():
            return  # before the first answer, `_list_until_answered` is already asking
        self._relisting = True

        async def relist() -> None:
            try:
                if await self._list_interactions():
                    for frame in self._mirror.frames():
                        self._hub.broadcast(frame)
            finally:
                self._relisting = False

        self._spawn(relist)

    async def answer(self, frame: InteractionAnswerFrame) -> None:
        """The user answered a card: to the router, which checks it against the record."""
        self._bus.audit(
            user_record(
                "ui.interaction.answer", frame.type, code=None, subject_id=frame.interaction_id
            )
        )
        try:
            reply = await self._bus.request(
                "router",
                InteractionAnswerRequest(interaction_id=frame.interaction_id, answer=frame.answer),
                expect=InteractionAnswerReply,
                timeout=ANSWER_TIMEOUT,
                retry=True,  # the router keeps the first answer: a repeat changes nothing
            )
        except LineUpError as exc:
            self._bus.audit_refusal(user_record(ANSWER_REFUSED, frame.type, code=exc.code.value))
            self._error_notice("That answer was not taken.", exc.code.value)
            # The card was disabled when sent: the view as it is makes it answerable again.
            held = self._mirror.get(frame.interaction_id)
            for again in interaction_frames([held] if held is not None else []):
                self._hub.broadcast(again)
            return
        for update in interaction_frames(self._mirror.upsert((reply.interaction,))):
            self._hub.broadcast(update)

    async def continue_(self, frame: AppSessionContinueFrame) -> None:
        """The user continues an ended sub-session's work: the router starts a new instance."""
        self._bus.audit(
            user_record(
                "ui.app_session.continue", frame.type, code=None, subject_id=frame.app_session_id
            )
        )
        try:
            reply = await self._bus.request(
                "router",
                AppSessionContinueRequest(app_session_id=frame.app_session_id),
                expect=AppSessionContinueReply,
                timeout=ANSWER_TIMEOUT,
                retry=True,  # a repeat answers the continuation already started
            )
        except LineUpError as exc:
            self._bus.audit_refusal(user_record(CONTINUE_REFUSED, frame.type, code=exc.code.value))
            self._error_notice("That could not be continued.", exc.code.value)
            return
        for update in session_frames(self._mirror.upsert_sessions((reply.session,))):
            self._hub.broadcast(update)

    def draft(self, frame: InteractionDraftFrame) -> None:
        # Not audited: a draft is typing, not an action (and comes often).
        if not self._mirror.draft(frame.interaction_id, frame.values):
            self._quiet.refused("hostbridge.draft_dropped")

    def _error_notice(self, text: str, code: str) -> None:
        self._hub.broadcast(ShellNotice(level="error", text=text, code=code))
