"""Outbox drain: how fast a backlog reaches the AppServer once the link comes back.

The runtime runs with the transport behind the drill's link proxy. Once it is online the link
is cut, and the user types `n` messages at the Shell socket; each is stored (the chat shows it
pending) and queued. Then the link is restored, and the rate is taken between the first and
the last message arriving at the Agent (so the transport's reconnect backoff is not counted).
The baseline is the same number of sequential POSTs straight to the same kind of devserver,
in the same run: what one client in order could do at best.
"""

from __future__ import annotations

import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import trio
from trio_websocket import open_websocket_url

from lineup import wire
from lineup.ops.agent import AgentClient
from lineup.ops.devserver import DevServerConfig
from lineup.ops.devserver._app import DevServerState
from lineup.ops.devserver._db import DevDatabase
from lineup.ops.devserver._serve import serve_state
from lineup.supervisor._runtime import (
    shell_socket,
)

from ._linked import start_behind_a_link
from ._relay import LinkRelay

__all__ = ["outbox_drain", "sequential_posts"]


async def outbox_drain(n: int) -> float:
    """Messages/s at the Agent, from the first to the last of `n` queued messages."""
    with tempfile.TemporaryDirectory(prefix="lu-bench-") as tmp:
        async with trio.open_nursery() as nursery:
            plan, proxy = await start_behind_a_link(nursery, Path(tmp))
            shell = _Shell(plan.shell_url)
            async with shell.open() as ws, trio.open_nursery() as reading:
                reading.start_soon(shell.watch, ws)
                await ws.send_message(json.dumps({"type": "shell.ready"}))
                with trio.fail_after(30):
                    await shell.online.wait()  # logged in: the session a message needs
                proxy.cut()
                ids = [f"user-bench-{uuid.uuid4()}" for _ in range(n)]
                for message_id in ids:
                    event = {
                        "kind": "composer.submit",
                        "text": "bench",
                        "client_id": message_id.removeprefix("user-"),
                    }
                    await ws.send_message(
                        json.dumps({"type": "ui.event", "instance_id": "chat", "event": event})
                    )
                await shell.until_all([f"user:{i}" for i in ids], "pending")  # their items
                arrived = await _arrivals(plan.appserver_url, proxy, n)
                reading.cancel_scope.cancel()
            nursery.cancel_scope.cancel()
        # The first page may hold several: count from its arrival to the last one's.
        first_page = arrived.count(arrived[0])
        return (n - first_page) / (arrived[-1] - arrived[0])


class _Shell:
    def __init__(self, shell_url: str) -> None:
        self.socket = shell_socket(shell_url)
        self.states: dict[str, str] = {}
        self.online = trio.Event()
        self.changed = trio.Event()

    def open(self) -> Any:
        s = self.socket
        return open_websocket_url(s.url, subprotocols=s.subprotocols, extra_headers=s.headers)

    async def watch(self, ws: Any) -> None:
        while True:
            frame: dict[str, Any] = json.loads(await ws.get_message())
            if "online" in (frame.get("state"), frame.get("runtime", {}).get("state")):
                self.online.set()
            if frame.get("type") == "shell.items" and frame["instance_id"] == "chat":
                for item in frame["items"]:  # the timeline's new or changed messages
                    self.states[item["id"]] = item["state"]
                self.changed.set()
                self.changed = trio.Event()

    async def until_all(self, ids: list[str], state: str) -> None:
        with trio.fail_after(120):
            while not all(self.states.get(i) == state for i in ids):
                await self.changed.wait()


async def _arrivals(appserver_url: str, proxy: LinkRelay, n: int) -> list[float]:
    """Restore the link, and note when each of the `n` queued messages reaches the Agent."""
    async with AgentClient(appserver_url) as agent:
        await agent.login("demo-agent", "demo-secret")
        _, cursor = await agent.sync("")  # everything before the backlog
        proxy.restore()
        arrived: list[float] = []
        with trio.fail_after(120):
            while len(arrived) < n:
                page, cursor = await agent.sync(cursor, timeout_ms=5000)
                arrived += [time.perf_counter()] * len(page)
        return arrived


async def sequential_posts(n: int) -> float:
    """POSTs/s of `n` user messages sent one after another straight to a devserver."""
    with tempfile.TemporaryDirectory(prefix="lu-bench-") as tmp:
        config = DevServerConfig(host="127.0.0.1", port=0, db_path=Path(tmp) / "dev.db")
        db = DevDatabase.open(config.db_path)
        try:
            async with trio.open_nursery() as nursery:
                url = await nursery.start(serve_state, DevServerState(config, db))
                async with httpx.AsyncClient(base_url=url) as http:
                    login = await http.post(
                        "/v1/auth/login", json={"username": "demo", "password": "demo"}
                    )
                    auth = {"Authorization": f"Bearer {login.json()['token']}"}
                    started = time.perf_counter()
                    for _ in range(n):
                        message_id = f"bench-{uuid.uuid4()}"
                        envelope = wire.dump(
                            wire.envelope(
                                wire.TEXT,
                                wire.TextPayload(markdown="bench"),
                                conversation_id="conv-demo",
                                sender_kind="user",
                                sender_id="demo",
                                message_id=message_id,
                            )
                        )
                        headers = {**auth, "Idempotency-Key": message_id}
                        answer = await http.post("/v1/messages", json=envelope, headers=headers)
                        answer.raise_for_status()
                    rate = n / (time.perf_counter() - started)
                nursery.cancel_scope.cancel()
        finally:
            db.close()
        return rate
