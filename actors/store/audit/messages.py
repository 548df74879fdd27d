"""The audit log (`store.audit.*`). Re-exported by `lineup.actors.store.messages`.

A record and its append are the kernel's (`lineup.actors.kernel.audit`: the bus sends them too);
they are re-exported here with the query, which only the store serves.
"""

from typing import Literal

from pydantic import Field

from lineup.actors.kernel.audit import AuditAppendReply, AuditAppendRequest, AuditRecord
from lineup.actors.kernel.messages import Message

from .._fields import Id, Limit

__all__ = [
    "AuditAppendReply",
    "AuditAppendRequest",
    "AuditQueryReply",
    "AuditQueryRequest",
    "AuditRecord",
]


class AuditQueryRequest(Message):
    """The newest `limit` audit rows matching the filters, returned oldest first."""

    type: Literal["store.audit.query"] = "store.audit.query"
    event_prefix: str | None = Field(default=None, max_length=100)
    peer: Id | None = None
    limit: Limit = 100


class AuditQueryReply(Message):
    type: Literal["store.audit.query.reply"] = "store.audit.query.reply"
    records: tuple[AuditRecord, ...]
