"""The drill's link proxy, between a real Agent client and a real devserver: it passes traffic
through untouched, and each fault it injects looks to the client like the real thing."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest
import trio

from lineup.ops.agent import AgentClient, AppServerError
from lineup.ops.drill._proxy import LinkProxy
from lineup.tests.ops._devserver import RunningServer, start_devserver

WAIT = 10.0


@pytest.fixture
async def proxy(nursery: trio.Nursery, tmp_path: Path) -> tuple[LinkProxy, RunningServer]:
    server = await start_devserver(nursery, tmp_path / "devserver.db")
    link = LinkProxy(server.url, seed=1)
    await nursery.start(link.serve)
    return link, server


def _client(link: LinkProxy) -> AgentClient:
    return AgentClient(link.url, attempts=1)


async def test_traffic_passes_through_untouched(proxy: tuple[LinkProxy, RunningServer]) -> None:
    link, _ = proxy
    async with _client(link) as client:
        with trio.fail_after(WAIT):
            assert await client.login("agent-1", "secret-1") == ["conv-a", "conv-b"]
            answer = await client.say("conv-a", "hello", idempotency_key="k1")
            assert await client.say("conv-a", "hello", idempotency_key="k1") == answer
    assert link.counts.forwarded == 3


async def test_failing_answers_503_or_loses_the_reply_after_the_server_stored_it(
    proxy: tuple[LinkProxy, RunningServer],
) -> None:
    link, server = proxy
    async with _client(link) as client:
        with trio.fail_after(WAIT):
            await client.login("agent-1", "secret-1")
            link.fail(0.5)  # half before forwarding, the other half after
            codes = []
            for n in range(40):
                try:
                    await client.say("conv-a", f"m{n}", idempotency_key=f"key-{n}")
                    codes.append("ok")
                except AppServerError as exc:
                    codes.append(f"{exc.code} {exc.status}")
    assert set(codes) == {"unavailable 503", "bad_gateway 502"}
    assert link.counts.failed_before + link.counts.failed_after == 40
    # Every lost reply was stored all the same: a retry must rely on its idempotency key.
    assert _stored(server.state.config.db_path) == link.counts.failed_after


async def test_a_cut_drops_open_connections_and_refuses_new_ones_until_restored(
    proxy: tuple[LinkProxy, RunningServer],
) -> None:
    link, _ = proxy
    async with _client(link) as client:
        with trio.fail_after(WAIT):
            await client.login("agent-1", "secret-1")
            async with trio.open_nursery() as nursery:
                outcome: list[str] = []

                async def long_poll() -> None:
                    try:
                        await client.sync("", timeout_ms=5000)
                        outcome.append("answered")
                    except AppServerError as exc:
                        outcome.append(exc.code)

                nursery.start_soon(long_poll)
                await server_parked(proxy[1])
                link.cut()
            assert outcome == ["unreachable"]
            with pytest.raises(AppServerError, match="unreachable"):
                await client.sync("")
            link.restore()
            assert (await client.sync(""))[0] == []
    assert link.counts.dropped_cut == 1
    assert link.counts.refused_cut >= 1


def _stored(path: Path) -> int:
    db = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        [(count,)] = db.execute("SELECT count(*) FROM messages").fetchall()
        assert isinstance(count, int)
        return count
    finally:
        db.close()


async def server_parked(server: RunningServer) -> None:
    await server.state.waiters.wait_sleeping(1)


async def test_slowness_delays_each_request(proxy: tuple[LinkProxy, RunningServer]) -> None:
    link, _ = proxy
    async with _client(link) as client:
        await client.login("agent-1", "secret-1")
        link.slow(0.3)
        started = trio.current_time()
        await client.sync("")
        assert trio.current_time() - started >= 0.3
        link.restore()
