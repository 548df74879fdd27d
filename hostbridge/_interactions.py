"""What the hostbridge holds of standard interactions and app sub-sessions, and the drafts.

The router owns both (they are in its store); the hostbridge keeps the latest view of each, as
the router listed or pushed it, so that a Shell that connects gets them at once, and a refused
answer can put its card back as it was. Drafts are what the user typed into a pending input's
fields: they live here only, in memory, bounded (`MAX_DRAFT_BYTES` each, `MAX_DRAFTS` in all,
the least recently saved dropped first), and an interaction's draft goes once it is final. A
runtime restart forgets them, as it should: they were never an answer.

No I/O here: the actor feeds it and sends what it returns.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Final

from lineup.actors.store.messages import AppSessionState
from lineup.facts.interactions import FINAL, InteractionState

from .messages import AppSessionView, InteractionView
from .shell_protocol import (
    MAX_ITEMS_FRAME_BYTES,
    ShellAppSessions,
    ShellDrafts,
    ShellInteractions,
    ShellOutbound,
)

__all__ = ["MAX_DRAFTS", "MAX_DRAFT_BYTES", "InteractionMirror"]

# How far along its machine a state is: an interaction only ever moves forward, so a view of a
# lower rank than the one held is older (a list the router built before a step, arriving after
# the step's push) and is not taken. The same for a sub-session: `open`, then `closed`.
_RANK: Final[Mapping[InteractionState, int]] = {
    "pending": 0,
    "presented": 1,
    "submitted": 2,
    **dict.fromkeys(FINAL, 3),
}
_SESSION_RANK: Final[Mapping[AppSessionState, int]] = {"open": 0, "closed": 1}
MAX_DRAFT_BYTES: Final = 64 * 1024  # one draft, as compact JSON
MAX_DRAFTS: Final = 256
MAX_KEPT_FINAL: Final = 500  # final interactions remembered for a greeting (the router has all)
MAX_KEPT_SESSIONS: Final = 500

DraftValues = Mapping[str, str | float]


def _size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


class InteractionMirror:
    """The latest view of each interaction and sub-session, and the drafts."""

    def __init__(self) -> None:
        self._interactions: OrderedDict[str, InteractionView] = OrderedDict()
        self._sessions: OrderedDict[str, AppSessionView] = OrderedDict()
        self._drafts: OrderedDict[str, dict[str, str | float]] = OrderedDict()

    def get(self, interaction_id: str) -> InteractionView | None:
        return self._interactions.get(interaction_id)

    def upsert(self, views: Iterable[InteractionView]) -> list[InteractionView]:
        """Take the views not older than the ones held (`_RANK`); returns them. A final one's
        draft is dropped."""
        taken = []
        for view in views:
            held = self._interactions.get(view.interaction_id)
            if held is not None and _RANK[view.state] < _RANK[held.state]:
                continue
            self._interactions[view.interaction_id] = view
            self._interactions.move_to_end(view.interaction_id)
            if view.state in FINAL:
                self._drafts.pop(view.interaction_id, None)
            taken.append(view)
        finals = [i for i, v in self._interactions.items() if v.state in FINAL]
        for interaction_id in finals[: max(0, len(finals) - MAX_KEPT_FINAL)]:
            del self._interactions[interaction_id]
        return taken

    def upsert_sessions(self, sessions: Iterable[AppSessionView]) -> list[AppSessionView]:
        """Take the sessions not older than the ones held (`_SESSION_RANK`); returns them."""
        taken = []
        for session in sessions:
            held = self._sessions.get(session.app_session_id)
            if held is not None and _SESSION_RANK[session.state] < _SESSION_RANK[held.state]:
                continue
            self._sessions[session.app_session_id] = session
            self._sessions.move_to_end(session.app_session_id)
            taken.append(session)
        closed = [i for i, s in self._sessions.items() if s.state == "closed"]
        for session_id in closed[: max(0, len(closed) - MAX_KEPT_SESSIONS)]:
            del self._sessions[session_id]
        return taken

    def draft(self, interaction_id: str, values: DraftValues) -> bool:
        """Keep `values` as the interaction's draft; False (nothing kept) if it is final or
        the draft too large. An interaction not known yet may have one (the router's list may
        not have come): the bound holds whatever the ids."""
        known = self._interactions.get(interaction_id)
        if known is not None and (known.state in FINAL or known.kind != "input"):
            self._drafts.pop(interaction_id, None)
            return False
        draft = dict(values)
        if _size(draft) > MAX_DRAFT_BYTES:
            return False
        self._drafts[interaction_id] = draft
        self._drafts.move_to_end(interaction_id)
        while len(self._drafts) > MAX_DRAFTS:
            self._drafts.popitem(last=False)
        return True

    def drafts(self) -> dict[str, dict[str, str | float]]:
        return {k: dict(v) for k, v in self._drafts.items()}

    def frames(self) -> list[ShellOutbound]:
        """Everything, as a greeting's frames: interactions (in byte-bounded frames), the
        sub-sessions, the drafts; none for what is empty."""
        frames: list[ShellOutbound] = [
            *interaction_frames(self._interactions.values()),
            *session_frames(self._sessions.values()),
        ]
        if self._drafts:
            frames.append(ShellDrafts(drafts=self.drafts()))
        return frames


def interaction_frames(views: Iterable[InteractionView]) -> list[ShellOutbound]:
    """`views` as `shell.interactions` frames of at most `MAX_ITEMS_FRAME_BYTES` each."""
    return [
        ShellInteractions(interactions=tuple(batch))
        for batch in _batches(v.model_dump(mode="json") for v in views)
    ]


def session_frames(sessions: Iterable[AppSessionView]) -> list[ShellOutbound]:
    return [
        ShellAppSessions(sessions=tuple(batch))
        for batch in _batches(s.model_dump(mode="json") for s in sessions)
    ]


def _batches(docs: Iterable[dict[str, object]]) -> list[list[dict[str, object]]]:
    batches: list[list[dict[str, object]]] = []
    used = 0
    for doc in docs:
        size = _size(doc)
        if not batches or used + size > MAX_ITEMS_FRAME_BYTES:
            batches.append([])
            used = 0
        batches[-1].append(doc)
        used += size
    return batches
