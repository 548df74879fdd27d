"""Agent message → shown by the chat, through the real runtime (AppServer, transport, router,
store, chat, focus, hostbridge): what a user waits for, measured at the Shell's WebSocket."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import trio
from trio_websocket import open_websocket_url

from lineup.ops.agent import AgentClient
from lineup.supervisor import Intensity, Supervisor
from lineup.supervisor._runtime import PRELOAD, RuntimeOptions, plan_runtime, shell_socket

CONVERSATION = "conv-demo"


async def im_delivery(latency_samples: int, burst: int) -> tuple[list[float], float]:
    """(per-message latencies sent one at a time, messages/s for a burst of `burst`)."""
    with tempfile.TemporaryDirectory(prefix="lu-bench-") as tmp:
        plan = plan_runtime(RuntimeOptions(data_dir=Path(tmp), demo_agent=False))
        supervisor = Supervisor(
            plan.specs, data_dir=Path(tmp), preload=PRELOAD, intensity=Intensity()
        )
        url, origin = shell_socket(plan.shell_url)
        async with trio.open_nursery() as nursery:
            await nursery.start(supervisor.run)
            seen: dict[str, float] = {}
            changed = trio.Event()

            async def watch(*, task_status: trio.TaskStatus[None]) -> None:
                nonlocal changed
                headers = [(b"Origin", origin.encode())]
                async with open_websocket_url(url, extra_headers=headers) as ws:
                    await ws.send_message(json.dumps({"type": "shell.ready"}))
                    task_status.started()
                    while True:
                        frame: dict[str, Any] = json.loads(await ws.get_message())
                        if frame.get("type") != "shell.view":
                            continue
                        now = time.perf_counter()
                        for item in frame["view"].get("items", []):
                            seen.setdefault(item["id"], now)
                        changed.set()
                        changed = trio.Event()

            await nursery.start(watch)
            async with AgentClient(plan.appserver_url) as agent:
                await agent.login("demo-agent", "demo-secret")

                async def send(n: int) -> tuple[str, float]:
                    started = time.perf_counter()
                    answer = await agent.say(
                        CONVERSATION, f"bench {n}", idempotency_key=f"bench-{n}"
                    )
                    return str(answer["message_id"]), started

                async def until_seen(ids: list[str]) -> None:
                    with trio.fail_after(60):
                        while not all(i in seen for i in ids):
                            await changed.wait()

                latencies = []
                for n in range(latency_samples):
                    message_id, started = await send(n)
                    await until_seen([message_id])
                    latencies.append(seen[message_id] - started)

                ids: list[str] = []
                started = time.perf_counter()

                async def sender(offset: int) -> None:
                    for n in range(offset, burst, 8):
                        message_id, _ = await send(latency_samples + n)
                        ids.append(message_id)

                async with trio.open_nursery() as senders:
                    for offset in range(8):
                        senders.start_soon(sender, offset)
                await until_seen(ids)
                rate = burst / (time.perf_counter() - started)
            nursery.cancel_scope.cancel()
        return latencies, rate
