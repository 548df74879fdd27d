"""Named cursors (`store.cursor.*`), e.g. the AppServer sync cursor. Re-exported by
`lineup.actors.store.messages`."""

from typing import Literal

from pydantic import Field

from lineup.actors.kernel.messages import Message

from .._fields import Name

__all__ = ["CursorGetReply", "CursorGetRequest", "CursorSetReply", "CursorSetRequest"]


class CursorGetRequest(Message):
    type: Literal["store.cursor.get"] = "store.cursor.get"
    name: Name


class CursorGetReply(Message):
    """`value` is None for a cursor never set."""

    type: Literal["store.cursor.get.reply"] = "store.cursor.get.reply"
    name: Name
    value: str | None


class CursorSetRequest(Message):
    """Set a named cursor (e.g. the AppServer sync cursor). Idempotent: last write wins."""

    type: Literal["store.cursor.set"] = "store.cursor.set"
    name: Name
    value: str = Field(max_length=1000)


class CursorSetReply(Message):
    type: Literal["store.cursor.set.reply"] = "store.cursor.set.reply"
    name: Name
    value: str
