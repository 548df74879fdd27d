"""A `direct` tool call from the transport receiving it to its result row committed in the
outbox, through the real router, focus, store and MiniApp processes.

The bench joins the tree *as the transport* (no transport child runs), so it hands the router
calls exactly as the transport would, and the router's outbox wake — sent only after a commit —
is the stop-watch: each call commits its `accepted` receipt, then its result.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final, TypeVar

import trio

from lineup import wire
from lineup.actors.kernel import ActorKind, Bus, Envelope, Identity, Message
from lineup.actors.router.messages import InboundEnvelopesReply, InboundEnvelopesRequest
from lineup.actors.store.messages import (
    CursorSetReply,
    CursorSetRequest,
    StoreStatsReply,
    StoreStatsRequest,
)
from lineup.actors.transport.messages import OutboxWakeEvent
from lineup.sdk.manifest import manifest_json
from lineup.sdk.tools import manifest_of
from lineup.supervisor import ChildSpec, Supervisor

from ._actors import BenchApp

CONVERSATION, AGENT = "conv-bench", "agent-bench"
T = TypeVar("T")


def _call(call_id: str, tool: str, revision: str) -> dict[str, Any]:
    return wire.dump(
        wire.envelope(
            wire.TOOL_CALL,
            wire.ToolCallPayload(
                call_id=call_id, tool=tool, inventory_revision=revision, input={"text": "x"}
            ),
            conversation_id=CONVERSATION,
            sender_kind="agent",
            sender_id=AGENT,
            message_id=f"env-{call_id}",
            app_scope="bench",
        )
    )


def _specs(tmp: Path) -> list[ChildSpec]:
    manifest = tmp / "bench.json"
    manifest.write_text(manifest_json(manifest_of(BenchApp)))
    app = {
        "app_scope": "bench",
        "manifest": str(manifest),
        "entry": "lineup.ops.bench._actors:BenchApp",
        "title": "Bench",
    }
    return [
        ChildSpec("store", ActorKind.STORE, "lineup.actors.store:StoreActor"),
        ChildSpec("router", ActorKind.ROUTER, "lineup.actors.router:RouterActor"),
        ChildSpec(
            "focus",
            ActorKind.FOCUS,
            "lineup.actors.focus:FocusActor",
            config={"apps": [app], "bundled_apps": False},  # the bench app alone
        ),
    ]


QUIET_S: Final = 0.3  # no store operation for this long: the tree's background work is done


async def _ops_for(bus: Bus, action: Callable[[], Awaitable[None]]) -> int:
    """The store operations `action` costs: counted from a quiet tree (a tree just started
    still recovers, sweeps and publishes for a while) until the result, so the figure is the
    call's alone, not whatever its start overlapped."""

    async def ops() -> int:
        return (await bus.request("store", StoreStatsRequest(), expect=StoreStatsReply)).ops

    seen = await ops()
    with trio.move_on_after(10.0):  # a tree never quiet is counted as it is
        while True:
            await trio.sleep(QUIET_S)
            now = await ops()
            if now == seen:
                break
            seen = now
    before = await ops()
    await action()
    return await ops() - before


class DirectTree:
    """The tree of `direct_calls`, joined as the transport: `call` makes one call and returns
    once its result is committed (its second outbox wake); `burst`, many with some in flight."""

    bus: Bus  # joined once the tree runs (`with_direct_tree`)

    def __init__(self, supervisor: Supervisor, data_dir: Path) -> None:
        self.supervisor = supervisor
        self.data_dir = data_dir
        self.wakes = 0
        self._woke = trio.Event()

    def on_wake(self, env: Envelope) -> Message | None:
        if isinstance(env.body, OutboxWakeEvent):
            self.wakes += 1
            self._woke.set()
            self._woke = trio.Event()
        return None

    async def until(self, count: int) -> None:
        with trio.fail_after(30):
            while self.wakes < count:
                await self._woke.wait()

    async def send(self, call_id: str, tool: str = "bench.echo") -> None:
        await self.bus.request(
            "router",
            InboundEnvelopesRequest(
                conversation_id=CONVERSATION, agent_id=AGENT, envelopes=(_call(call_id, tool, "1"),)
            ),
            expect=InboundEnvelopesReply,
        )

    async def launch(self) -> None:
        """An instance for the direct calls to go to."""
        await self.send("open", "bench.open")
        await self.until(4)  # accepted, starting, activation_ready, result

    async def call(self, call_id: str) -> None:
        base = self.wakes
        await self.send(call_id)
        await self.until(base + 2)  # accepted, result

    async def burst(self, prefix: str, count: int, concurrency: int) -> None:
        base = self.wakes

        async def sender(offset: int) -> None:
            for n in range(offset, count, concurrency):
                await self.send(f"{prefix}{n}")

        async with trio.open_nursery() as senders:
            for offset in range(concurrency):
                senders.start_soon(sender, offset)
        await self.until(base + 2 * count)


async def with_direct_tree(
    fn: Callable[[DirectTree], Awaitable[T]], *, env: dict[str, str] | None = None
) -> T:
    """Run `fn` on a fresh tree (store, router, focus and the bench app, spawned with `env`
    added to the environment), the session logged in, before any call."""
    with tempfile.TemporaryDirectory(prefix="lu-bench-") as tmp:
        specs = _specs(Path(tmp))
        saved = {key: os.environ.get(key) for key in env or {}}
        os.environ.update(env or {})
        try:
            supervisor = Supervisor(
                specs, data_dir=Path(tmp), preload=("lineup.ops.bench._actors", "lineup.sdk")
            )
            async with trio.open_nursery() as nursery:
                await nursery.start(supervisor.run)
                tree = DirectTree(supervisor, Path(tmp))
                tree.bus = await nursery.start(
                    supervisor.attach, Identity(ActorKind.TRANSPORT, "transport"), tree.on_wake
                )
                session = {
                    "user_id": "user-bench",
                    "agent_id": AGENT,
                    "conversation_id": CONVERSATION,
                }
                await tree.bus.request(
                    "store",
                    CursorSetRequest(name="transport.session", value=json.dumps(session)),
                    expect=CursorSetReply,
                )
                result = await fn(tree)
                nursery.cancel_scope.cancel()
            return result
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


COUNTED_DIRECT: Final = 20  # direct calls in a row whose store requests are counted


async def direct_calls(
    samples: int, burst: int, concurrency: int = 8
) -> tuple[list[float], float, dict[str, float]]:
    """(latencies of calls made one at a time, calls/s with `concurrency` in flight, the store
    requests one `launch` call and one `direct` call cost until their result is committed).

    A `direct` call's are the mean over `COUNTED_DIRECT` calls in a row: the router reads the
    AppServer session at most once a second (`SESSION_TTL`), so one call made after the quiet
    `_ops_for` waits for would always count that read, which calls in a row share."""

    async def measure(tree: DirectTree) -> tuple[list[float], float, dict[str, float]]:
        async def calls() -> None:
            for n in range(COUNTED_DIRECT):
                await tree.call(f"count{n}")

        counts = {
            "launch": float(await _ops_for(tree.bus, tree.launch)),
            "direct": await _ops_for(tree.bus, calls) / COUNTED_DIRECT,
        }
        for n in range(50):  # warm up
            await tree.call(f"w{n}")
        latencies = []
        for n in range(samples):
            started = time.perf_counter()
            await tree.call(f"s{n}")
            latencies.append(time.perf_counter() - started)
        started = time.perf_counter()
        await tree.burst("b", burst, concurrency)
        rate = burst / (time.perf_counter() - started)
        return latencies, rate, counts

    return await with_direct_tree(measure)
