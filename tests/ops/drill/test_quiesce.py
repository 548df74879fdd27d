"""The drill's wait for quiet is bounded by progress, not by time: a backlog that keeps draining
is waited for however long it takes (a loaded machine drains slowly), work that stops draining
ends the wait once the bound passes without a new low, and the bound counts from the last
expiry due. On trio's autojump clock, the store's read an awaitable of virtual time (the real
ones, `_store_busy` and `_taken_calls`, are checked on a real store schema)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import trio

from lineup.actors.store._db import open_database
from lineup.ops.drill._runner import Run, _quiesce, _store_busy, _taken_calls


class _User:
    def user_texts(self) -> list[str]:
        return ["typed"]

    async def close_all(self) -> None:
        return None


def _run(unanswered: set[str], arrived: frozenset[str] = frozenset({"typed"})) -> Run:
    agent = SimpleNamespace(unanswered=unanswered, texts_arrived=set(arrived))
    return cast(Run, SimpleNamespace(user=_User(), agent=agent))


def _store_reads(*seconds: float) -> Callable[[], Awaitable[int]]:
    """A settled store whose reads take `seconds` each (the last one from then on)."""
    durations = list(seconds) or [0.0]

    async def read() -> int:
        await trio.sleep(durations.pop(0) if len(durations) > 1 else durations[0])
        return 0

    return read


async def _quiesce_while_draining(
    calls: set[str], *, keep: int = 0, reads: tuple[float, ...] = ()
) -> tuple[bool, float]:
    """`_quiesce` (bound 5 s) while the Agent's `calls` are answered one a second until `keep`
    are left: whether it was quiet, and after how many seconds."""

    async def drain() -> None:
        while len(calls) > keep:
            await trio.sleep(1.0)
            calls.pop()

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(drain)
        quiet = await _quiesce(_run(calls), _store_reads(*reads), start, stall_s=5.0)
    return quiet, trio.current_time() - start


async def test_a_backlog_that_keeps_draining_is_waited_for_past_the_bound(
    autojump_clock: Any,
) -> None:
    quiet, took = await _quiesce_while_draining({f"c{i}" for i in range(40)})
    assert quiet
    assert took >= 40.0  # one a second, eight times the bound


async def test_work_that_stops_draining_ends_the_wait_once_the_bound_passes(
    autojump_clock: Any,
) -> None:
    calls = {"stuck", "c1", "c2"}
    quiet, took = await _quiesce_while_draining(calls, keep=1)
    assert not quiet
    # The last new low was at 2 s: the wait ends 5 s later, not 5 s after the start.
    assert len(calls) == 1
    assert 7.0 < took < 7.5


async def test_what_is_left_is_counted_as_of_the_end_of_a_slow_store_read(
    autojump_clock: Any,
) -> None:
    # A loaded machine: one read is quick, the next take longer than the bound, and the drain
    # goes on meanwhile. Counted before the read, the Agent's calls would look stuck.
    calls = {f"c{i}" for i in range(20)}
    quiet, _ = await _quiesce_while_draining(calls, reads=(0.0, 6.0))
    assert quiet
    assert not calls


async def test_the_bound_counts_from_the_last_expiry_due(autojump_clock: Any) -> None:
    start = trio.current_time()
    run = _run({"waits-for-its-expiry"})
    assert not await _quiesce(run, _store_reads(), start + 30.0, stall_s=5.0)
    assert 35.0 < trio.current_time() - start < 35.5


async def test_a_typed_message_not_yet_arrived_is_waited_for(autojump_clock: Any) -> None:
    start = trio.current_time()
    assert not await _quiesce(_run(set(), frozenset()), _store_reads(), start, stall_s=2.0)
    assert await _quiesce(_run(set()), _store_reads(), start, stall_s=2.0)


def test_the_stores_unsettled_rows_are_counted(tmp_path: Path) -> None:
    database = open_database(tmp_path, {})
    assert _store_busy(database.path) == 0
    database.conn.execute(
        "INSERT INTO outbox (outbox_id, conversation_id, kind, body, created_at)"
        " VALUES ('o1', 'conv', 'lineup.v1.text', '{}', 0)"
    )
    assert _store_busy(database.path) == 1
    database.conn.execute("UPDATE outbox SET acked_at = 1 WHERE outbox_id = 'o1'")
    assert _store_busy(database.path) == 0
    database.conn.close()


def test_the_calls_the_store_took_are_those_recorded_and_not_refused_stale(tmp_path: Path) -> None:
    database = open_database(tmp_path, {})
    for call_id, state, code in (
        ("taken", "running", None),
        ("cancelled", "cancelled", "cancelled_by_user"),
        ("stale", "rejected", "inventory_revision_mismatch"),
        ("unknown_tool", "rejected", "tool_not_found"),
    ):
        database.conn.execute(
            "INSERT INTO tool_calls (call_id, tool, inventory_revision, app_scope,"
            " conversation_id, handling, state, input, error_code, timeout_ms, created_at,"
            " updated_at, deadline_at) VALUES (?, 't', 'r', 'a', 'conv', 'direct', ?, '{}', ?,"
            " 0, 0, 0, 0)",
            (call_id, state, code),
        )
    asked = ["taken", "cancelled", "stale", "unknown_tool", "never_arrived"]
    assert _taken_calls(database.path, asked) == {"taken", "cancelled", "unknown_tool"}
    database.conn.close()
