from __future__ import annotations

from pathlib import Path

import httpx
import trio

from lineup.ops.devserver import DevServerConfig, serve
from lineup.ops.devserver._app import DevServerState
from lineup.ops.devserver._db import DevDatabase
from lineup.ops.devserver._serve import serve_state
from lineup.tests.ops._devserver import WAIT, Api, envelope, start_devserver


async def test_serve_reports_the_bound_url_of_a_free_port(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    config = DevServerConfig(host="127.0.0.1", port=0, db_path=tmp_path / "d.db")
    url = await nursery.start(serve, config)
    assert url.startswith("http://127.0.0.1:")
    assert not url.endswith(":0")
    async with httpx.AsyncClient(base_url=url) as http:
        assert (await http.get("/healthz")).json() == {"ok": True}


async def test_the_default_accounts_are_demo_and_demo_agent(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    config = DevServerConfig(port=0, db_path=tmp_path / "d.db")
    url = await nursery.start(serve, config)
    async with httpx.AsyncClient(base_url=url) as http:
        user = await http.post("/v1/auth/login", json={"username": "demo", "password": "demo"})
        agent = await http.post(
            "/v1/agent/login", json={"agent_id": "demo-agent", "secret": "demo-secret"}
        )
    assert {k: v for k, v in user.json().items() if k != "token"} == {
        "user_id": "user-demo",
        "agent_id": "demo-agent",
        "conversation_id": "conv-demo",
    }
    assert agent.json()["conversation_ids"] == ["conv-demo"]


async def test_idempotency_tokens_and_messages_survive_a_restart_on_the_same_file(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    path = tmp_path / "devserver.db"
    first = await start_devserver(nursery, path)
    async with httpx.AsyncClient(base_url=first.url) as http:
        api = Api(http)
        token = await api.user_token("alice")
        before = await api.post("/v1/messages", token, envelope("conv-a", id="m-1"), "out-1")
    await first.stop()

    second = await start_devserver(nursery, path)
    async with httpx.AsyncClient(base_url=second.url) as http:
        api = Api(http)
        after = await api.post("/v1/messages", token, envelope("conv-a", id="m-1"), "out-1")
        agent = await api.agent_token("agent-1")
        synced = (await api.sync("/v1/agent/sync", agent)).json()
    assert before.status_code == after.status_code == 200
    assert after.json() == before.json()
    assert second.db.count_messages() == 1
    assert [m["id"] for m in synced["messages"]] == ["m-1"]


async def test_a_graceful_shutdown_ends_long_polls_at_once(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    config = DevServerConfig(host="127.0.0.1", port=0, db_path=tmp_path / "d.db")
    db = DevDatabase.open(config.db_path)
    state = DevServerState(config, db)
    shutdown = trio.Event()
    stopped = trio.Event()

    async def run(task_status: trio.TaskStatus[str]) -> None:
        try:
            await serve_state(state, shutdown=shutdown, task_status=task_status)
        finally:
            db.close()
            stopped.set()

    url = await nursery.start(run)
    answers: list[httpx.Response] = []
    async with httpx.AsyncClient(base_url=url) as http:
        api = Api(http)
        login = await http.post("/v1/auth/login", json={"username": "demo", "password": "demo"})
        token = login.json()["token"]

        async def long_poll() -> None:
            answers.append(await api.sync("/v1/sync", token, timeout_ms=30_000))

        with trio.fail_after(WAIT):  # far below the poll's 30 s
            async with trio.open_nursery() as polls:
                polls.start_soon(long_poll)
                await state.waiters.wait_sleeping(1)
                shutdown.set()
            await stopped.wait()
    assert answers[0].json() == {"messages": [], "cursor": ""}
