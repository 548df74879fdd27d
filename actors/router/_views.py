"""The router's records as others see them: an interaction and a sub-session as the Shell shows
them (the hostbridge's views), and a MiniApp's interaction as its app sees it.

No I/O: each is a projection of one store row that leaves out what its reader must not learn
(a MiniApp sees nothing of the Agent's or the user's).
"""

from __future__ import annotations

from lineup.actors.store.messages import AppSessionRow, InteractionRow
from lineup.hostbridge.messages import AppSessionView, InteractionView
from lineup.sdk import protocol as sdk

from . import _ids as ids

__all__ = ["interaction_view_of", "record_of", "session_view_of"]


def interaction_view_of(row: InteractionRow) -> InteractionView:
    """An interaction as the Shell shows it."""
    return InteractionView(
        interaction_id=row.interaction_id,
        kind=row.kind,
        state=row.state,
        request=row.request,
        result=row.result,
        terminal_code=row.terminal_code,
        source=row.source,
        owner_scope=row.owner_scope,
        instance_id=row.instance_id,
        app_session_id=row.app_session_id,
        call_id=row.call_id,
        created_at=row.created_at,
        expires_at=row.expires_at,
    )


def record_of(row: InteractionRow) -> sdk.InteractionRecord:
    """A MiniApp's interaction as its app sees it (nothing of the Agent's or the user's)."""
    return sdk.InteractionRecord(
        interaction_id=row.interaction_id,
        kind=row.kind,
        state=row.state,
        request=row.request,
        result=row.result,
        terminal_code=row.terminal_code,
        instance_id=row.instance_id,
        parent_call_id=row.parent_call_id,
        presentation=row.presentation,
        created_at=row.created_at,
        expires_at=row.expires_at,
        asked_by="surface" if ids.is_surface_interaction(row.interaction_id) else "app",
    )


def session_view_of(row: AppSessionRow) -> AppSessionView:
    """A sub-session as the Shell shows it (its folded group)."""
    return AppSessionView(
        app_session_id=row.app_session_id,
        app_scope=row.app_scope,
        instance_id=row.instance_id,
        state=row.state,
        opened_at=row.opened_at,
        closed_at=row.closed_at,
        previous_app_session_id=row.previous_app_session_id,
    )
