"""App sub-sessions (`store.app_session.*`): one per MiniApp instance, the folded group of its
questions in the main IM (seed 000 §7.3). Re-exported by `lineup.actors.store.messages`.
Written by the router only.

A sub-session is opened with its `lineup.v1.app_session.opened` outbox row and closed with its
`lineup.v1.app_session.closed` row, each in ONE transaction, so the Agent hears of every
sub-session exactly once each way. Both are idempotent: a retry writes nothing.
"""

from typing import Any, Literal

from pydantic import model_validator

from lineup.actors.kernel.messages import Message

from .._fields import Id, Limit, Name, wire_kind

__all__ = [
    "AppSessionCloseReply",
    "AppSessionCloseRequest",
    "AppSessionGetReply",
    "AppSessionGetRequest",
    "AppSessionListReply",
    "AppSessionListRequest",
    "AppSessionOpenReply",
    "AppSessionOpenRequest",
    "AppSessionRow",
    "AppSessionState",
]

AppSessionState = Literal["open", "closed"]
OPENED = "lineup.v1.app_session.opened"
CLOSED = "lineup.v1.app_session.closed"


def _check_wire(wire: dict[str, Any], kind: str) -> None:
    if wire_kind(wire) != kind:
        raise ValueError(f"the wire must be a {kind}")


class AppSessionRow(Message):
    """One sub-session as recorded. `closed_at` is set once it is closed;
    `previous_app_session_id` names the ended one it continues."""

    type: Literal["store.app_session.row"] = "store.app_session.row"
    app_session_id: Id
    app_scope: Name
    instance_id: Id
    agent_id: Id | None
    conversation_id: Id
    state: AppSessionState
    opened_at: float
    closed_at: float | None
    previous_app_session_id: Id | None


class AppSessionOpenRequest(Message):
    """Open the instance's sub-session and queue its `app_session.opened` envelope (`wire`, as
    `outbox_id`), in one transaction. Idempotent: the same id again writes nothing (`created`
    False, whatever its state). Refused with `invalid_arguments` when another sub-session has
    the instance, or the `outbox_id` is already used."""

    type: Literal["store.app_session.open"] = "store.app_session.open"
    app_session_id: Id
    app_scope: Name
    instance_id: Id
    agent_id: Id | None = None
    conversation_id: Id
    previous_app_session_id: Id | None = None
    outbox_id: Id
    wire: dict[str, Any]

    @model_validator(mode="after")
    def _opened(self) -> "AppSessionOpenRequest":
        _check_wire(self.wire, OPENED)
        return self


class AppSessionOpenReply(Message):
    type: Literal["store.app_session.open.reply"] = "store.app_session.open.reply"
    session: AppSessionRow
    created: bool


class AppSessionCloseRequest(Message):
    """Close an open sub-session and queue its `app_session.closed` envelope, in one
    transaction. A repeat (already closed) writes nothing (`changed` False). Refused with
    `invalid_arguments` for an unknown sub-session or an `outbox_id` already used."""

    type: Literal["store.app_session.close"] = "store.app_session.close"
    app_session_id: Id
    outbox_id: Id
    wire: dict[str, Any]

    @model_validator(mode="after")
    def _closed(self) -> "AppSessionCloseRequest":
        _check_wire(self.wire, CLOSED)
        return self


class AppSessionCloseReply(Message):
    type: Literal["store.app_session.close.reply"] = "store.app_session.close.reply"
    session: AppSessionRow
    changed: bool


class AppSessionGetRequest(Message):
    """One sub-session by its id, or by its instance (exactly one of them)."""

    type: Literal["store.app_session.get"] = "store.app_session.get"
    app_session_id: Id | None = None
    instance_id: Id | None = None

    @model_validator(mode="after")
    def _one_key(self) -> "AppSessionGetRequest":
        if (self.app_session_id is None) == (self.instance_id is None):
            raise ValueError("name the app_session_id or the instance_id")
        return self


class AppSessionGetReply(Message):
    type: Literal["store.app_session.get.reply"] = "store.app_session.get.reply"
    session: AppSessionRow | None


class AppSessionListRequest(Message):
    """Every open sub-session, oldest first, then (unless `open_only`) the newest `recent`
    closed ones, newest first."""

    type: Literal["store.app_session.list"] = "store.app_session.list"
    open_only: bool = False
    recent: Limit = 100


class AppSessionListReply(Message):
    type: Literal["store.app_session.list.reply"] = "store.app_session.list.reply"
    sessions: tuple[AppSessionRow, ...]
