"""Agent message → shown by the chat, through the real runtime (AppServer, transport, router,
store, chat, focus, hostbridge): what a user waits for, measured at the Shell's WebSocket.

Latency: one message at a time, each sent once the one before it is shown.

Burst: the Agent's messages reach the runtime as fast as the AppServer hands them out. They
are posted while the transport's link is cut (the runtime runs behind the drill's link proxy),
then the link is restored, and the rate is taken between the first and the last message shown
(so neither the Agent's own POSTs nor the transport's reconnect backoff are counted; the first
view's messages are left out, as the outbox drain leaves out its first page). Posting them
live instead measures the bench's Agent client and the reference AppServer, which spend more
CPU per message than the whole runtime: on two cores the runtime then waits for its producer.
"""

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
from lineup.supervisor._runtime import (
    PRELOAD,
    RuntimeOptions,
    plan_runtime,
    shell_socket,
)

from . import _measure as m
from ._linked import start_behind_a_link
from ._measure import median, pct
from ._outbox import outbox_drain, sequential_posts
from ._report import Figure

__all__ = ["im_delivery", "im_figures"]

CONVERSATION = "conv-demo"
SENDERS = 8  # concurrent POSTs while the link is cut
WAIT = 60.0


class _Chat:
    """What the Shell's socket has shown of the chat: each item id, when first seen."""

    def __init__(self, shell_url: str) -> None:
        self.socket = shell_socket(shell_url)
        self.seen: dict[str, float] = {}
        self.online = trio.Event()
        self.changed = trio.Event()

    async def watch(self, *, task_status: trio.TaskStatus[None]) -> None:
        s = self.socket
        async with open_websocket_url(
            s.url, subprotocols=s.subprotocols, extra_headers=s.headers
        ) as ws:
            await ws.send_message(json.dumps({"type": "shell.ready"}))
            task_status.started()
            while True:
                frame: dict[str, Any] = json.loads(await ws.get_message())
                if "online" in (frame.get("state"), frame.get("runtime", {}).get("state")):
                    self.online.set()
                if frame.get("type") != "shell.items":  # the timeline's new messages
                    continue
                now = time.perf_counter()
                for item in frame["items"]:  # an Agent message's item is `agent:<its id>`
                    self.seen.setdefault(str(item["id"]).removeprefix("agent:"), now)
                self.changed.set()
                self.changed = trio.Event()

    async def until_seen(self, ids: list[str]) -> None:
        with trio.fail_after(WAIT):
            while not all(i in self.seen for i in ids):
                await self.changed.wait()


async def _send(agent: AgentClient, n: int) -> str:
    answer = await agent.say(CONVERSATION, f"bench {n}", idempotency_key=f"bench-{n}")
    return str(answer["message_id"])


async def _latencies(samples: int) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="lu-bench-") as tmp:
        plan = plan_runtime(RuntimeOptions(data_dir=Path(tmp), demo_agent=False))
        supervisor = Supervisor(
            plan.specs, data_dir=Path(tmp), preload=PRELOAD, intensity=Intensity()
        )
        chat = _Chat(plan.shell_url)
        latencies = []
        async with trio.open_nursery() as nursery:
            await nursery.start(supervisor.run)
            await nursery.start(chat.watch)
            async with AgentClient(plan.appserver_url) as agent:
                await agent.login("demo-agent", "demo-secret")
                for n in range(samples):
                    started = time.perf_counter()
                    message_id = await _send(agent, n)
                    await chat.until_seen([message_id])
                    latencies.append(chat.seen[message_id] - started)
            nursery.cancel_scope.cancel()
        return latencies


async def _burst_rate(burst: int) -> float:
    with tempfile.TemporaryDirectory(prefix="lu-bench-") as tmp:
        async with trio.open_nursery() as nursery:
            plan, proxy = await start_behind_a_link(nursery, Path(tmp))
            chat = _Chat(plan.shell_url)
            await nursery.start(chat.watch)
            with trio.fail_after(WAIT):
                await chat.online.wait()  # logged in: the session a message needs
            async with AgentClient(plan.appserver_url) as agent:  # not through the proxy
                await agent.login("demo-agent", "demo-secret")
                proxy.cut()
                ids: list[str] = []

                async def sender(offset: int) -> None:
                    for n in range(offset, burst, SENDERS):
                        ids.append(await _send(agent, n))

                async with trio.open_nursery() as senders:
                    for offset in range(SENDERS):
                        senders.start_soon(sender, offset)
                proxy.restore()
                await chat.until_seen(ids)
            nursery.cancel_scope.cancel()
        shown = sorted(chat.seen[i] for i in ids)
        first = shown.count(shown[0])
        if first == len(shown):  # all in one view: no rate to take between two
            return float("inf")
        return (len(shown) - first) / (shown[-1] - shown[0])


async def im_delivery(latency_samples: int, burst: int) -> tuple[list[float], float]:
    """(per-message latencies sent one at a time, messages/s of a burst of `burst`)."""
    return await _latencies(latency_samples), await _burst_rate(burst)


def im_figures(quick: bool, bus: list[float] | None = None, seconds: float = 0.0) -> list[Figure]:
    """The IM path (issue 32): an Agent's messages shown by the chat, one at a time and in a
    burst, and the outbox's backlog drained after an outage, each beside its floor measured in
    the same run (the bus round trip and raw commits measured here when not given)."""
    if bus is None:
        bus = trio.run(m.bus_roundtrip, 1000 if quick else 5000)
    seconds = seconds or (1.6 if quick else 4.0)
    # A burst under ~500 reaches the chat in one view: no rate to take between two.
    latencies, rate = trio.run(im_delivery, 20 if quick else 100, 500)
    insert_rate = m.raw_apsw_commits(seconds)
    shown = median(latencies) * 1e3
    round_trip = pct(bus, 0.5) * 1e3
    backlog = 190  # the chat view shows the newest 200: all of them must be seen pending
    drained = trio.run(outbox_drain, backlog)
    posts = trio.run(sequential_posts, backlog)
    return [
        Figure(
            "IM",
            "agent message → shown by the chat, msgs/s (burst)",
            rate,
            "/s",
            "raw apsw single-row commits (WAL, NORMAL)",
            insert_rate,
            "≥ 0.25× baseline",
            rate >= 0.25 * insert_rate,
        ),
        Figure(
            "IM",
            "agent message → shown by the chat p50",
            shown,
            "ms",
            "bus request/reply round trip p50",
            round_trip,
            "≤ 15× baseline",
            shown <= 15 * round_trip,
        ),
        Figure(
            "IM",
            f"outbox drain after an outage: {backlog} queued messages → at the Agent, msgs/s",
            drained,
            "/s",
            "sequential POSTs straight to a devserver (one client, in order)",
            posts,
            "≥ 0.8× baseline",
            drained >= 0.8 * posts,
            note="the reference AppServer is the bottleneck: it serves the Agent's sync too",
        ),
    ]
