"""The store's own counters (`store.stats.*`): served by the actor, from its committer. Re-exported
by `lineup.actors.store.messages`."""

from typing import Literal

from lineup.actors.kernel.messages import Message

__all__ = ["StoreStatsReply", "StoreStatsRequest"]


class StoreStatsRequest(Message):
    type: Literal["store.stats.get"] = "store.stats.get"


class StoreStatsReply(Message):
    """Group-commit counters since the store started: `commits` write transactions committed,
    `batches` batches taken off the queue (reads included), `max_batch` the largest one,
    `writes` write operations acknowledged, `ops` every operation run (reads and refusals
    included: the requests the store served, audit rows the bus sends included)."""

    type: Literal["store.stats.get.reply"] = "store.stats.get.reply"
    commits: int
    batches: int
    max_batch: int
    writes: int
    ops: int = 0
    schema_version: int
    synchronous: Literal["normal", "full"]
