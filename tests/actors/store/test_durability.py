"""The store actor as a real process, SIGKILLed mid-stream: acknowledged means durable."""

from __future__ import annotations

import itertools
from functools import partial
from pathlib import Path

import trio

from lineup.actors.kernel import ActorKind, ActorRestarted
from lineup.actors.store.messages import (
    OutboxAppendReply,
    OutboxAppendRequest,
    OutboxPendingReply,
    OutboxPendingRequest,
)
from lineup.supervisor import Supervisor, runtime_specs
from lineup.tests.support.process import wait_pid_gone
from lineup.tests.support.tree import attach, start_tree, until_answered

WRITERS = 16
KILLS = 3


def append(outbox_id: str) -> OutboxAppendRequest:
    return OutboxAppendRequest(
        outbox_id=outbox_id,
        conversation_id="c1",
        kind="lineup.v1.text",
        body={"markdown": "durable"},
    )


async def all_rows(nursery: trio.Nursery, supervisor: Supervisor) -> list[tuple[int, str]]:
    # Pending rows are the transport's to read: the router appends them.
    bus = await attach(nursery, supervisor, ActorKind.TRANSPORT, "reader")
    rows: list[tuple[int, str]] = []
    after = 0
    while True:
        request = OutboxPendingRequest(limit=1000, after_seq=after)
        page = await until_answered(
            partial(bus.request, "store", request, expect=OutboxPendingReply)
        )
        if not page.rows:
            return rows
        rows += [(row.seq, row.outbox_id) for row in page.rows]
        after = page.rows[-1].seq


async def test_writes_acknowledged_before_sigkills_of_the_store_are_all_there_exactly_once(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    specs = [s for s in runtime_specs() if s.name == "store"]
    supervisor = await start_tree(nursery, specs, data_dir)
    bus = await attach(nursery, supervisor, ActorKind.ROUTER, "writer")
    acked: dict[str, int] = {}  # outbox_id -> seq, as the store acknowledged it
    interrupted: set[str] = set()  # ids whose request died with the store
    ids = (f"o{n}" for n in itertools.count())
    target = 400
    kills_at = {100, 200, 300}  # acknowledged writes after which the store is SIGKILLed
    kills = 0

    async def writer() -> None:
        nonlocal kills
        while len(acked) < target:
            outbox_id = next(ids)
            while True:  # retry the *same* id: the write is idempotent by it
                try:
                    reply = await bus.request(
                        "store", append(outbox_id), expect=OutboxAppendReply, timeout=10
                    )
                    break
                except ActorRestarted:
                    interrupted.add(outbox_id)
            if outbox_id in acked:
                raise AssertionError(f"{outbox_id} acknowledged twice")
            acked[outbox_id] = reply.seq
            if len(acked) in kills_at and kills < KILLS:
                kills += 1
                pid = supervisor.children["store"].pid
                supervisor.kill("store")
                assert pid is not None
                await wait_pid_gone(pid)

    with trio.fail_after(60):
        async with trio.open_nursery() as writers:
            for _ in range(WRITERS):
                writers.start_soon(writer)

    assert kills == KILLS
    assert supervisor.children["store"].restarts == KILLS
    assert interrupted, "no request was in flight at any kill: the test proved nothing"
    rows = await all_rows(nursery, supervisor)
    stored = dict((outbox_id, seq) for seq, outbox_id in rows)
    assert len(stored) == len(rows), "an id was stored twice"
    # Every acknowledged write is there, with the seq it was acknowledged with; nothing that was
    # never asked for was invented; a retried write did not apply twice.
    assert stored == acked


async def test_a_retried_append_after_a_store_restart_answers_like_the_first(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    supervisor: Supervisor = await start_tree(
        nursery, [s for s in runtime_specs() if s.name == "store"], data_dir
    )
    bus = await attach(nursery, supervisor, ActorKind.ROUTER, "writer")
    first = await bus.request("store", append("once"), expect=OutboxAppendReply)
    pid = supervisor.children["store"].pid
    assert pid is not None
    supervisor.kill("store")
    await wait_pid_gone(pid)
    again = await until_answered(
        lambda: bus.request("store", append("once"), expect=OutboxAppendReply)
    )
    assert first.created
    assert not again.created
    assert again.seq == first.seq
    assert [outbox_id for _, outbox_id in await all_rows(nursery, supervisor)] == ["once"]
