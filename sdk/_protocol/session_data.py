"""Session data (seed 004 §6.3): per-instance JSON with a revision, owned by the runtime; read
whole, replaced whole against the revision the app read, and subscribed to (`SessionData`)."""

from typing import Any, Literal

from pydantic import Field

from lineup.actors.kernel import Message

from .common import Id

__all__ = [
    "SessionDataEvent",
    "SessionDataGetRequest",
    "SessionDataReplaceRequest",
    "SessionDataSnapshot",
    "SessionDataSubscribeRequest",
]


class SessionDataGetRequest(Message):
    """The instance's app session data: `{data: None, revision: 0}` until first written."""

    type: Literal["focus.sdk.session_data.get"] = "focus.sdk.session_data.get"
    instance_id: Id


class SessionDataReplaceRequest(Message):
    """Replace the whole value; refused with `stale_revision` unless `expected_revision` is
    the current one (seed 004 §6.3: an old write never overwrites a newer one)."""

    type: Literal["focus.sdk.session_data.replace"] = "focus.sdk.session_data.replace"
    instance_id: Id
    data: dict[str, Any]
    expected_revision: int = Field(ge=0)


class SessionDataSubscribeRequest(Message):
    """Subscribe; the reply is the full snapshot at registration, then `SessionDataEvent`s
    follow with strictly increasing revisions."""

    type: Literal["focus.sdk.session_data.subscribe"] = "focus.sdk.session_data.subscribe"
    instance_id: Id


class SessionDataSnapshot(Message):
    type: Literal["focus.sdk.session_data.snapshot"] = "focus.sdk.session_data.snapshot"
    instance_id: Id
    data: dict[str, Any] | None
    revision: int


class SessionDataEvent(Message):
    type: Literal["miniapp.session_data.updated"] = "miniapp.session_data.updated"
    instance_id: Id
    data: dict[str, Any] | None
    revision: int
