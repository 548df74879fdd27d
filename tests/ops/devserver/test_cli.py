"""`lineup devserver` as a real process: python -m lineup.ops.devserver."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import httpx
import pytest
import trio

from lineup.ops.devserver import WireErrorCode
from lineup.ops.devserver.cli import main
from lineup.tests.ops._devserver import WAIT
from lineup.tests.support.process import LineupProcess

PREFIX = "lineup devserver: listening on "
# A fresh interpreter importing the server (h11, apsw, pydantic) before it listens:
# about a second on a quiet machine, many more with the suite oversubscribing the cores.
START_WAIT = 30.0
DEVSERVER = (sys.executable, "-m", "lineup.ops.devserver")


@asynccontextmanager
async def _devserver(*args: str) -> AsyncIterator[LineupProcess]:
    """`python -m lineup.ops.devserver ARGS`, killed and reaped when the block ends."""
    process = await trio.lowlevel.open_process(
        [*DEVSERVER, *args],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    try:
        yield LineupProcess(process)
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()
            if process.stdout is not None:
                await process.stdout.aclose()


async def _url(server: LineupProcess) -> str:
    with trio.fail_after(START_WAIT):
        line = await server.wait_for_line(PREFIX)
    return line.removeprefix(PREFIX)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_it_prints_its_url_serves_and_exits_0_on_a_signal(
    tmp_path: Path, sig: signal.Signals
) -> None:
    async with _devserver("--port", "0", "--db", str(tmp_path / "d.db")) as server:
        url = await _url(server)
        assert url.startswith("http://127.0.0.1:")
        async with httpx.AsyncClient(base_url=url) as http:
            with trio.fail_after(WAIT):
                assert (await http.get("/healthz")).json() == {"ok": True}
        server.signal(sig)
        with trio.fail_after(WAIT):
            assert await server.wait() == 0


async def test_a_signal_during_a_long_poll_still_exits_promptly(tmp_path: Path) -> None:
    async with _devserver("--port", "0", "--db", str(tmp_path / "d.db")) as server:
        url = await _url(server)
        async with httpx.AsyncClient(base_url=url, timeout=60) as http:
            login = await http.post("/v1/auth/login", json={"username": "demo", "password": "demo"})
            headers = {"Authorization": f"Bearer {login.json()['token']}"}
            polled = trio.Event()

            async def long_poll() -> None:
                # Ended by the shutdown: an empty answer, or the connection closing under it.
                with suppress(httpx.TransportError):
                    await http.get("/v1/sync", params={"timeout_ms": "30000"}, headers=headers)
                polled.set()

            with trio.fail_after(WAIT):  # far below the poll's 30 s
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(long_poll)
                    await trio.testing.wait_all_tasks_blocked()
                    server.signal(signal.SIGTERM)
                    assert await server.wait() == 0
                    await polled.wait()


async def test_the_account_flags_replace_the_demo_accounts(tmp_path: Path) -> None:
    async with _devserver(
        "--port",
        "0",
        "--db",
        str(tmp_path / "d.db"),
        "--user",
        "ann:secret-pw",
        "--user",
        "ben:other-pw",
        "--agent-id",
        "bot",
        "--agent-secret",
        "bot-pw",
        "--conversation-id",
        "conv-x",
    ) as server:
        url = await _url(server)
        async with httpx.AsyncClient(base_url=url) as http:
            with trio.fail_after(WAIT):
                ann = await http.post(
                    "/v1/auth/login", json={"username": "ann", "password": "secret-pw"}
                )
                ben = await http.post(
                    "/v1/auth/login", json={"username": "ben", "password": "other-pw"}
                )
                demo = await http.post(
                    "/v1/auth/login", json={"username": "demo", "password": "demo"}
                )
                agent = await http.post(
                    "/v1/agent/login", json={"agent_id": "bot", "secret": "bot-pw"}
                )
        assert (ann.json()["user_id"], ann.json()["conversation_id"]) == ("user-ann", "conv-x")
        assert (ben.json()["user_id"], ben.json()["conversation_id"]) == ("user-ben", "conv-ben")
        assert ann.json()["agent_id"] == "bot"
        assert demo.status_code == 401
        assert agent.json()["conversation_ids"] == ["conv-x", "conv-ben"]


async def test_fail_rate_one_answers_every_post_with_503(tmp_path: Path) -> None:
    async with _devserver(
        "--port", "0", "--db", str(tmp_path / "d.db"), "--fail-rate", "1"
    ) as server:
        url = await _url(server)
        async with httpx.AsyncClient(base_url=url) as http:
            with trio.fail_after(WAIT):
                login = await http.post(
                    "/v1/auth/login", json={"username": "demo", "password": "demo"}
                )
                health = await http.get("/healthz")
        assert login.status_code == 503
        assert login.json() == {"error": WireErrorCode.UNAVAILABLE}
        assert health.status_code == 200


async def test_a_port_in_use_exits_1(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = await trio.run_process(
            [*DEVSERVER, "--port", str(port), "--db", str(tmp_path / "d.db")],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert result.returncode == 1
    assert b"listening" not in result.stdout


@pytest.mark.parametrize(
    "argv",
    [["--fail-rate", "1.5"], ["--delay-ms", "-1"], ["--user", "no-password"], ["--port", "x"]],
)
def test_bad_usage_exits_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
