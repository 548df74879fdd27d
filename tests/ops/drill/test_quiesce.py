"""The drill's wait for quiet is bounded by progress, not by time: a backlog that keeps draining
is waited for however long it takes (a loaded machine drains slowly), work that stops draining
ends the wait once the bound passes without a new low, and the bound counts from the last
expiry due. On trio's autojump clock, with a real store schema."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import trio

from lineup.actors.store._db import open_database
from lineup.ops.drill._runner import Run, _quiesce


class _User:
    def user_texts(self) -> list[str]:
        return ["typed"]

    async def close_all(self) -> None:
        return None


def _run(unanswered: set[str]) -> Run:
    agent = SimpleNamespace(unanswered=unanswered, texts_arrived={"typed"})
    return cast(Run, SimpleNamespace(user=_User(), agent=agent))


def _store(tmp_path: Path) -> Path:
    open_database(tmp_path, {}).conn.close()  # the schema, nothing pending
    return tmp_path


async def _drain(calls: set[str], every: float) -> None:
    while calls:
        await trio.sleep(every)
        calls.pop()


async def test_a_backlog_that_keeps_draining_is_waited_for_past_the_bound(
    tmp_path: Path, autojump_clock: Any
) -> None:
    calls = {f"c{i}" for i in range(40)}
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_drain, calls, 1.0)  # one a second: 40 s in all
        assert await _quiesce(_run(calls), _store(tmp_path), start, stall_s=5.0)
    assert trio.current_time() - start >= 40.0


async def test_work_that_stops_draining_ends_the_wait_once_the_bound_passes(
    tmp_path: Path, autojump_clock: Any
) -> None:
    calls = {"stuck", "c1", "c2"}

    async def drain_all_but_one() -> None:
        for call in ("c1", "c2"):
            await trio.sleep(1.0)
            calls.discard(call)

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(drain_all_but_one)
        assert not await _quiesce(_run(calls), _store(tmp_path), start, stall_s=5.0)
    # The last new low was at 2 s: the wait ends 5 s later, not 5 s after the start.
    assert calls == {"stuck"}
    assert 7.0 < trio.current_time() - start < 8.0


async def test_the_bound_counts_from_the_last_expiry_due(
    tmp_path: Path, autojump_clock: Any
) -> None:
    calls = {"waits-for-its-expiry"}
    start = trio.current_time()
    assert not await _quiesce(_run(calls), _store(tmp_path), start + 4.0, stall_s=1.0)
    assert 5.0 < trio.current_time() - start < 6.0


async def test_a_typed_message_not_yet_arrived_is_waited_for(
    tmp_path: Path, autojump_clock: Any
) -> None:
    run = _run(set())
    cast(Any, run).agent.texts_arrived = set()
    start = trio.current_time()
    assert not await _quiesce(run, _store(tmp_path), start, stall_s=2.0)
    cast(Any, run).agent.texts_arrived = {"typed"}
    assert await _quiesce(run, _store(tmp_path), start, stall_s=2.0)


async def test_an_unsent_outbox_row_in_the_store_is_waited_for(
    tmp_path: Path, autojump_clock: Any
) -> None:
    database = open_database(tmp_path, {})
    database.conn.execute(
        "INSERT INTO outbox (outbox_id, conversation_id, kind, body, created_at)"
        " VALUES ('o1', 'conv', 'lineup.v1.text', '{}', 0)"
    )
    start = trio.current_time()
    assert not await _quiesce(_run(set()), tmp_path, start, stall_s=2.0)
    database.conn.execute("UPDATE outbox SET acked_at = 1 WHERE outbox_id = 'o1'")
    database.conn.close()
    assert await _quiesce(_run(set()), tmp_path, start, stall_s=2.0)
