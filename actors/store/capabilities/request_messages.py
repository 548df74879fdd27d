"""Capability requests that wait on the user or a provider (`store.capability_request.*`),
kept so that each ends once, with one final audit row, even if the gateway is killed while it
waits. Re-exported by `lineup.actors.store.messages`.

A row is opened before the runtime's prompt is shown or a provider is told, and ended once:
with the result the requester got, or — for a request whose gateway was killed and whose
requester did not ask again in time — `failed actor_restarted`. The end and its final audit row
are one transaction, so neither is ever there without the other. `output` is the result's
metadata (an artifact's or an operation's info), never content.
"""

from typing import Any, Final, Literal

from pydantic import Field

from lineup.actors.kernel.messages import Message

from .._fields import Id, Name

__all__ = [
    "RETAINED_S",
    "CapabilityRequestEndReply",
    "CapabilityRequestEndRequest",
    "CapabilityRequestListReply",
    "CapabilityRequestListRequest",
    "CapabilityRequestOpenReply",
    "CapabilityRequestOpenRequest",
    "CapabilityRequestRow",
]

RETAINED_S: Final = 3600  # s: an ended row answers a repeat this long (a requester's patience)


class CapabilityRequestRow(Message):
    type: Literal["store.capability_request.row"] = "store.capability_request.row"
    asker: Name  # who asked: "app:<scope>", or "surface"
    request_id: Id
    app_scope: Name
    capability: Name
    state: Literal["open", "ended"]
    status: Name | None = None  # the result's, once ended
    code: Name | None = None
    output: dict[str, Any] | None = None
    opened_at: float
    deadline_at: float  # wall clock: its requester stops waiting then
    ended_at: float | None = None


class CapabilityRequestOpenRequest(Message):
    """Open the row (idempotent: a row already there, open or ended, is answered as it is)."""

    type: Literal["store.capability_request.open"] = "store.capability_request.open"
    asker: Name
    request_id: Id
    app_scope: Name
    capability: Name
    deadline_at: float


class CapabilityRequestOpenReply(Message):
    type: Literal["store.capability_request.open.reply"] = "store.capability_request.open.reply"
    row: CapabilityRequestRow
    opened: bool  # False: it was there already


class CapabilityRequestEndRequest(Message):
    """End an open row with its result and write its final audit row (`event`, the outcome as
    its code), in one transaction. A row already ended is left as it is (`ended` False): the
    requester is answered from it, so what it gets agrees with the audit."""

    type: Literal["store.capability_request.end"] = "store.capability_request.end"
    asker: Name
    request_id: Id
    status: Name
    code: Name | None = None
    output: dict[str, Any] | None = None
    event: Name  # the final audit row's: gateway.capability.completed|refused|failed|cancelled


class CapabilityRequestEndReply(Message):
    type: Literal["store.capability_request.end.reply"] = "store.capability_request.end.reply"
    row: CapabilityRequestRow | None  # None: no such row
    ended: bool


class CapabilityRequestListRequest(Message):
    """The open rows and the ones ended lately (the gateway's start: what it answers from)."""

    type: Literal["store.capability_request.list"] = "store.capability_request.list"
    ended_since: float  # wall clock
    limit: int = Field(default=1024, ge=1, le=4096)


class CapabilityRequestListReply(Message):
    type: Literal["store.capability_request.list.reply"] = "store.capability_request.list.reply"
    rows: tuple[CapabilityRequestRow, ...]
