"""The store's handler table (`actors/store/_table.py`, `TABLE` in `_actor.py`): every request is
served once, and each row runs its operation with the access it names."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import pytest

from lineup.actors.kernel import Message
from lineup.actors.kernel.actor import Actor, handles
from lineup.actors.kernel.bus import Envelope
from lineup.actors.kernel.control import HealthRequest
from lineup.actors.kernel.identity import ActorKind, Identity
from lineup.actors.store import StoreActor, messages
from lineup.actors.store._actor import TABLE
from lineup.actors.store._table import ServedByTable, read, write, write_as

REQUESTS = {
    obj
    for name in messages.__all__
    if name.endswith("Request") and isinstance(obj := getattr(messages, name), type)
}


# Tags are global (`REGISTRY`): a `storetest.` tag is no store request's and no other test's.
class TableProbeRequest(Message):
    type: Literal["storetest.table_probe"] = "storetest.table_probe"
    n: int


class TableProbeReply(Message):
    type: Literal["storetest.table_probe.reply"] = "storetest.table_probe.reply"
    n: int
    actor: str | None


def probe(conn: object, req: TableProbeRequest, now: float) -> TableProbeReply:
    return TableProbeReply(n=req.n, actor=None)


def probe_as(conn: object, req: TableProbeRequest, now: float, *, actor: str) -> TableProbeReply:
    return TableProbeReply(n=req.n, actor=actor)


class FakeCommitter:
    """Runs each operation at once when `idle` (else queues it), and remembers how each was
    given to it: ("now" | "queued", write)."""

    def __init__(self, idle: bool) -> None:
        self.idle = idle
        self.given: list[tuple[str, bool]] = []

    def run_now(self, op: Callable[[Any], Message], *, write: bool = True) -> tuple[bool, Any]:
        if not self.idle:
            return False, None
        self.given.append(("now", write))
        return True, op("conn")

    def queue(self, op: Callable[[Any], Message], *, write: bool = True) -> Awaitable[Message]:
        self.given.append(("queued", write))

        async def later() -> Message:
            return op("conn")

        return later()


class FakeBus:
    def __init__(self, more_frames: bool) -> None:
        self.more_frames = more_frames


def envelope(body: Message) -> Envelope:
    return Envelope(Identity(ActorKind.ROUTER, "router"), body, frame_id=1, is_request=True)


def test_the_store_serves_every_request_of_its_protocol_and_nothing_else() -> None:
    assert set(StoreActor._handlers) - {HealthRequest} == REQUESTS


def test_the_table_names_each_request_once_and_leaves_only_three_handlers_by_hand() -> None:
    served = [row.request for row in TABLE]
    assert len(served) == len(set(served))
    by_hand = REQUESTS - set(served)
    # The dead-letter put also refreshes the quarantine summary `lineup status` reads.
    assert {cls.__name__ for cls in by_hand} == {
        "AuditAppendRequest",
        "StoreStatsRequest",
        "DeadLetterPutRequest",
    }


def test_every_row_becomes_a_plain_handler_named_after_its_tag() -> None:
    for row in TABLE:
        handler = StoreActor._handlers[row.request]
        assert not inspect.iscoroutinefunction(handler)  # the bus runs it inline
        name = "on_" + row.request.TYPE.removeprefix("store.").replace(".", "_")
        assert handler.__name__ == name
        assert getattr(StoreActor, name) is handler


@pytest.mark.parametrize(
    ("row", "writes", "actor"),
    [
        (read(TableProbeRequest, probe), False, None),
        (write(TableProbeRequest, probe), True, None),
        (write_as(TableProbeRequest, probe_as), True, "router"),
    ],
    ids=["read", "write", "write_as"],
)
@pytest.mark.parametrize(
    ("idle", "more_frames", "given"),
    [
        (True, False, "now"),  # alone, to an idle committer: answered at once
        (False, False, "queued"),  # others queued before it: behind them
        (True, True, "queued"),  # more frames follow it in the same read: grouped with them
    ],
    ids=["idle", "busy", "burst"],
)
async def test_a_row_runs_its_operation_with_its_access(
    row: Any, writes: bool, actor: str | None, idle: bool, more_frames: bool, given: str
) -> None:
    class Probe(ServedByTable, Actor):
        kind = ActorKind.STORE
        table = (row,)

    committer = FakeCommitter(idle)
    actor_ = object.__new__(Probe)
    actor_._committer = committer  # type: ignore[assignment]
    actor_.bus = FakeBus(more_frames)  # type: ignore[assignment]
    outcome = actor_.dispatch(envelope(TableProbeRequest(n=7)))
    if given == "queued":
        assert isinstance(outcome, Awaitable)  # waited for in a task of its own
        outcome = await outcome
    assert outcome == TableProbeReply(n=7, actor=actor)
    assert committer.given == [(given, writes)]


def test_a_request_served_twice_is_refused_when_the_class_is_created() -> None:
    with pytest.raises(TypeError, match="TableProbeRequest twice"):

        class TwoRows(ServedByTable, Actor):
            kind = ActorKind.STORE
            table = (read(TableProbeRequest, probe), write(TableProbeRequest, probe))

    with pytest.raises(TypeError, match="TableProbeRequest twice"):

        class RowAndMethod(ServedByTable, Actor):
            kind = ActorKind.STORE
            table = (read(TableProbeRequest, probe),)

            @handles(TableProbeRequest)
            def on_probe(self, msg: TableProbeRequest, env: Envelope) -> TableProbeReply:
                return probe(None, msg, 0.0)
