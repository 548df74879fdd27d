"""The transport's outbox loop: rows go in order, and an inventory appended while a backlog
drains goes next, not after the backlog (the Agent's calls must name its revision). The store
and the AppServer are fakes that keep the rows and the POSTs in memory; the loop is the
transport's own."""

from __future__ import annotations

from functools import partial
from types import SimpleNamespace
from typing import Any

import trio
import trio.testing

from lineup.actors.kernel import ErrorCode, Message
from lineup.actors.store.messages import (
    OutboxAckReply,
    OutboxAckRequest,
    OutboxPendingReply,
    OutboxPendingRequest,
    OutboxRow,
)
from lineup.actors.transport._actor import TransportActor
from lineup.actors.transport._client import Sent
from lineup.actors.transport.messages import OutboxWakeEvent
from lineup.wire import INVENTORY

TEXT = "lineup.v1.text"


class Outbox:
    """The store's outbox as the loop sees it (pending rows, `ahead` kinds first) and the
    AppServer's POSTs, in the order they came."""

    def __init__(self) -> None:
        self.rows: list[OutboxRow] = []
        self.acked: set[str] = set()
        self.acks: list[str] = []  # in the order the store got them
        self.ack_waits: dict[str, Any] = {}  # outbox_id → awaited before its ack is taken
        self.posted: list[str] = []
        self.on_post: dict[str, Any] = {}  # outbox_id → called as that row is POSTed
        self.changed = trio.Event()

    def append(self, outbox_id: str, kind: str = TEXT) -> None:
        seq = len(self.rows) + 1
        self.rows.append(
            OutboxRow(
                seq=seq,
                outbox_id=outbox_id,
                conversation_id="c-1",
                kind=kind,
                body={"n": outbox_id},
                created_at=0.0,
            )
        )

    # The bus, as the outbox loop uses it.
    async def request(self, peer: str, body: Message, **_: Any) -> Message:
        assert peer == "store"
        if isinstance(body, OutboxPendingRequest):
            pending = [r for r in self.rows if r.outbox_id not in self.acked]
            pending.sort(key=lambda r: (r.kind not in body.ahead, r.seq))
            return OutboxPendingReply(rows=tuple(pending[: body.limit]))
        assert isinstance(body, OutboxAckRequest)
        if body.outbox_id in self.ack_waits:
            await self.ack_waits.pop(body.outbox_id)()
        self.acked.add(body.outbox_id)
        self.acks.append(body.outbox_id)
        return OutboxAckReply(outbox_id=body.outbox_id, acked=True)

    async def tell(self, peer: str, body: Message, **_: Any) -> ErrorCode | None:
        return None

    # The AppServer client.
    async def send(self, token: str, body: dict[str, Any], key: str) -> Sent:
        self.posted.append(key)
        if key in self.on_post:
            self.on_post.pop(key)()
        self.changed.set()
        self.changed = trio.Event()
        return Sent(message_id=f"m-{key}", seq=len(self.posted))

    async def until_posted(self, count: int) -> None:
        while len(self.posted) < count:
            await self.changed.wait()


def transport(outbox: Outbox) -> TransportActor:
    actor = TransportActor(SimpleNamespace(bus=outbox, config={}))
    actor._client = outbox  # type: ignore[assignment]
    return actor


async def test_an_inventory_appended_during_a_backlog_is_posted_next() -> None:
    outbox = Outbox()
    for i in range(1, 11):
        outbox.append(f"r{i}")
    actor = transport(outbox)

    def publish() -> None:  # the router, while r2 is on its way
        outbox.append("inv-7", INVENTORY)
        actor.on_wake(OutboxWakeEvent(ahead=True), None)  # type: ignore[arg-type]

    outbox.on_post["r2"] = publish
    async with trio.open_nursery() as nursery:
        nursery.start_soon(actor._outbox_loop)
        with trio.fail_after(5):
            await outbox.until_posted(11)
        nursery.cancel_scope.cancel()

    assert outbox.posted == ["r1", "r2", "inv-7", *(f"r{i}" for i in range(3, 11))]


async def test_a_plain_wake_keeps_the_backlog_in_order() -> None:
    outbox = Outbox()
    for i in range(1, 6):
        outbox.append(f"r{i}")
    actor = transport(outbox)

    def append() -> None:
        outbox.append("r6")
        actor.on_wake(OutboxWakeEvent(), None)  # type: ignore[arg-type]

    outbox.on_post["r2"] = append
    async with trio.open_nursery() as nursery:
        nursery.start_soon(actor._outbox_loop)
        with trio.fail_after(5):
            await outbox.until_posted(6)
        nursery.cancel_scope.cancel()

    assert outbox.posted == [f"r{i}" for i in range(1, 7)]


async def test_a_rows_acknowledgement_does_not_hold_up_the_next_post() -> None:
    """The store acknowledges r1 only once r2 is on its way: were the next POST to wait for
    the acknowledgement (and the router's tell) before it, the drain would stop here."""
    outbox = Outbox()
    for i in range(1, 4):
        outbox.append(f"r{i}")
    actor = transport(outbox)
    outbox.ack_waits["r1"] = partial(outbox.until_posted, 2)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(actor._outbox_loop)
        with trio.fail_after(5):
            await outbox.until_posted(3)
            while len(outbox.acks) < 3:
                await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()

    assert outbox.posted == ["r1", "r2", "r3"]  # each once, in order
    assert outbox.acks == ["r1", "r2", "r3"]  # each after its answer, in order
