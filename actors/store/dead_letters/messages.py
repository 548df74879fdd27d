"""Dead letters (`store.dead_letter.*`): what was quarantined, and why (issue 11). Re-exported by
`lineup.actors.store.messages`.

Only the router puts a dead letter by request (an inbound item that failed twice); the store
quarantines undecodable rows itself, at start-up. The summary is what `lineup status` shows:
counts by source and code, never a body.
"""

from typing import Any, Final, Literal, get_args

from pydantic import Field

from lineup.actors.kernel.messages import Message

from .._fields import Id, Limit, Name, Seq

__all__ = [
    "DEAD_LETTER_SOURCES",
    "QUARANTINE_SUMMARY_FILE",
    "DeadLetterListReply",
    "DeadLetterListRequest",
    "DeadLetterPutReply",
    "DeadLetterPutRequest",
    "DeadLetterRow",
    "DeadLetterSummaryReply",
    "DeadLetterSummaryRequest",
]

# In the data dir, kept by the store: `DeadLetterSummaryReply` as JSON, for `lineup status`
# (which talks to the supervisor only). Counts and kinds, never a body.
QUARANTINE_SUMMARY_FILE: Final = "quarantine.json"

DeadLetterSource = Literal["inbound", "inbox", "outbox", "instance", "tool_call", "cursor"]
DEAD_LETTER_SOURCES: Final[frozenset[str]] = frozenset(get_args(DeadLetterSource))


class DeadLetterPutRequest(Message):
    """Quarantine one inbound item that failed `attempts` times: kept with its `body`, audited,
    and never processed again. Idempotent by `(source, item_id)`: a repeat changes nothing."""

    type: Literal["store.dead_letter.put"] = "store.dead_letter.put"
    source: DeadLetterSource
    item_id: Id
    kind: Name | None = None
    code: Name
    attempts: int = Field(ge=1, le=1000)
    body: dict[str, Any] | None = None


class DeadLetterPutReply(Message):
    type: Literal["store.dead_letter.put.reply"] = "store.dead_letter.put.reply"
    seq: int
    created: bool


class DeadLetterRow(Message):
    """One dead letter, without its body (which stays in the database for a person to read)."""

    type: Literal["store.dead_letter.row"] = "store.dead_letter.row"
    seq: int
    source: str
    item_id: str
    kind: str | None
    code: str
    attempts: int
    created_at: float


class DeadLetterListRequest(Message):
    type: Literal["store.dead_letter.list"] = "store.dead_letter.list"
    after_seq: Seq = 0
    limit: Limit = 100


class DeadLetterListReply(Message):
    type: Literal["store.dead_letter.list.reply"] = "store.dead_letter.list.reply"
    rows: tuple[DeadLetterRow, ...]


class DeadLetterSummaryRequest(Message):
    type: Literal["store.dead_letter.summary"] = "store.dead_letter.summary"


class DeadLetterSummaryReply(Message):
    """`kinds`: how many dead letters per `source:code`."""

    type: Literal["store.dead_letter.summary.reply"] = "store.dead_letter.summary.reply"
    count: int
    kinds: dict[str, int]
