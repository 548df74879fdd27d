"""A `direct` tool call from the transport receiving it to its result row committed in the
outbox, through the real router, focus, store and MiniApp processes.

The bench joins the tree *as the transport* (no transport child runs), so it hands the router
calls exactly as the transport would, and the router's outbox wake — sent only after a commit —
is the stop-watch: each call commits its `accepted` receipt, then its result.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

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


async def direct_calls(
    samples: int, burst: int, concurrency: int = 8
) -> tuple[list[float], float, dict[str, int]]:
    """(latencies of calls made one at a time, calls/s with `concurrency` in flight, the store
    requests one `launch` and one `direct` call cost until their result is committed)."""
    with tempfile.TemporaryDirectory(prefix="lu-bench-") as tmp:
        specs = _specs(Path(tmp))
        supervisor = Supervisor(
            specs, data_dir=Path(tmp), preload=("lineup.ops.bench._actors", "lineup.sdk")
        )
        wakes = 0
        woke = trio.Event()

        def on_wake(env: Envelope) -> Message | None:
            nonlocal wakes, woke
            if isinstance(env.body, OutboxWakeEvent):
                wakes += 1
                woke.set()
                woke = trio.Event()
            return None

        async def until(count: int) -> None:
            with trio.fail_after(30):
                while wakes < count:
                    await woke.wait()

        async with trio.open_nursery() as nursery:
            await nursery.start(supervisor.run)
            bus = await nursery.start(
                supervisor.attach, Identity(ActorKind.TRANSPORT, "transport"), on_wake
            )
            session = {"user_id": "user-bench", "agent_id": AGENT, "conversation_id": CONVERSATION}
            await bus.request(
                "store",
                CursorSetRequest(name="transport.session", value=json.dumps(session)),
                expect=CursorSetReply,
            )

            async def send(call_id: str, tool: str) -> None:
                await bus.request(
                    "router",
                    InboundEnvelopesRequest(
                        conversation_id=CONVERSATION,
                        agent_id=AGENT,
                        envelopes=(_call(call_id, tool, "1"),),
                    ),
                    expect=InboundEnvelopesReply,
                )

            async def launch() -> None:  # an instance for the direct calls to go to
                await send("open", "bench.open")
                await until(4)  # accepted, starting, activation_ready, result

            async def direct() -> None:
                base = wakes
                await send("count", "bench.echo")
                await until(base + 2)

            counts = {"launch": await _ops_for(bus, launch), "direct": await _ops_for(bus, direct)}
            for n in range(50):  # warm up
                base = wakes
                await send(f"w{n}", "bench.echo")
                await until(base + 2)
            latencies = []
            for n in range(samples):
                base = wakes
                started = time.perf_counter()
                await send(f"s{n}", "bench.echo")
                await until(base + 2)
                latencies.append(time.perf_counter() - started)
            base = wakes
            started = time.perf_counter()

            async def sender(offset: int) -> None:
                for n in range(offset, burst, concurrency):
                    await send(f"b{n}", "bench.echo")

            async with trio.open_nursery() as senders:
                for offset in range(concurrency):
                    senders.start_soon(sender, offset)
            await until(base + 2 * burst)
            rate = burst / (time.perf_counter() - started)
            nursery.cancel_scope.cancel()
        return latencies, rate, counts
