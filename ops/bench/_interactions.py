"""A standard interaction answered: the user's answer frame in at the Shell's WebSocket → the
Agent's call's result row committed in the outbox, through the real hostbridge, router, store
and focus processes (issue 12).

The bench joins the tree *as the transport* (no transport child runs, nor an AppServer), as the
tools bench does: it hands the router the Agent's `interaction.choice` calls exactly as the
transport would, answers the hostbridge's state question "online", and the router's outbox wake
— sent only after a commit — is the stop-watch. Each call commits its `accepted` receipt (one
wake); once the Shell shows the card, the answer frame is sent and the clock runs until the
next wake (the result row). The rows are then acknowledged as the transport would, outside
the clock, so each interaction settles `completed` and the outbox stays empty.

The Agent's session (`transport.session`) is written before the router starts, in a store run
of its own: the router publishes the inventory at start only when it knows the session, and
the bench reads the revision from that outbox row.
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any, Final

import trio
from trio_websocket import open_websocket_url

from lineup import wire
from lineup.actors.kernel import ActorKind, Envelope, Identity, Message
from lineup.actors.router.messages import InboundEnvelopesReply, InboundEnvelopesRequest
from lineup.actors.store.messages import (
    CursorSetReply,
    CursorSetRequest,
    OutboxAckReply,
    OutboxAckRequest,
    OutboxPendingReply,
    OutboxPendingRequest,
)
from lineup.actors.transport.messages import (
    OutboxWakeEvent,
    RuntimeStateReply,
    RuntimeStateRequest,
)
from lineup.facts.interactions import WAITING
from lineup.hostbridge._server import INTERACTION_FRAMES_PER_S
from lineup.supervisor import Supervisor
from lineup.supervisor._runtime import PRELOAD, RuntimeOptions, plan_runtime, shell_socket

__all__ = ["answer_latencies"]

CONVERSATION, AGENT, USER = "conv-demo", "demo-agent", "user-demo"
WAIT: Final = 30.0
WARM_UP: Final = 10
_LEFT_OUT: Final = frozenset({"transport", "devserver", "demo-agent"})


class _Shell:
    """The Shell's socket: the interactions it shows, by call id."""

    def __init__(self, shell_url: str) -> None:
        self.socket = shell_socket(shell_url)
        self.by_call: dict[str, dict[str, Any]] = {}
        self.changed = trio.Event()
        self.ws: Any = None

    async def watch(self, *, task_status: trio.TaskStatus[None]) -> None:
        s = self.socket
        async with open_websocket_url(
            s.url, subprotocols=s.subprotocols, extra_headers=s.headers
        ) as ws:
            self.ws = ws
            await ws.send_message(json.dumps({"type": "shell.ready"}))
            task_status.started()
            while True:
                frame: dict[str, Any] = json.loads(await ws.get_message())
                if frame.get("type") != "shell.interactions":
                    continue
                for view in frame.get("interactions") or []:
                    self.by_call[str(view.get("call_id"))] = view
                self.changed.set()
                self.changed = trio.Event()

    async def shown(self, call_id: str) -> dict[str, Any]:
        with trio.fail_after(WAIT):
            while self.by_call.get(call_id, {}).get("state") not in WAITING:
                await self.changed.wait()
        return self.by_call[call_id]

    async def answer(self, interaction_id: str, answer: dict[str, Any]) -> None:
        frame = {"type": "interaction.answer", "interaction_id": interaction_id, "answer": answer}
        await self.ws.send_message(json.dumps(frame))


def _call(call_id: str, revision: str) -> dict[str, Any]:
    request = {
        "title": "Bench",
        "prompt": "Pick one.",
        "mode": "button",
        "actions": [{"id": "yes", "label": "Yes"}, {"id": "no", "label": "No"}],
        "expires_in_ms": 15 * 60_000,
    }
    return wire.dump(
        wire.envelope(
            wire.TOOL_CALL,
            wire.ToolCallPayload(
                call_id=call_id,
                tool="interaction.choice",
                inventory_revision=revision,
                input=request,
            ),
            conversation_id=CONVERSATION,
            sender_kind="agent",
            sender_id=AGENT,
            message_id=f"env-{call_id}",
        )
    )


async def _session_first(data_dir: Path, specs: list[Any]) -> None:
    """Write the Agent's session into the store before the router first starts."""
    store = [s for s in specs if s.name == "store"]
    supervisor = Supervisor(store, data_dir=data_dir, preload=PRELOAD)
    session = {"user_id": USER, "agent_id": AGENT, "conversation_id": CONVERSATION}
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        bus = await nursery.start(supervisor.attach, Identity(ActorKind.TRANSPORT, "transport"))
        await bus.request(
            "store",
            CursorSetRequest(name="transport.session", value=json.dumps(session)),
            expect=CursorSetReply,
        )
        nursery.cancel_scope.cancel()


class _AsTransport:
    """The bench's place in the tree: the transport's, its outbox wakes with their times."""

    def __init__(self) -> None:
        self.wakes: list[float] = []  # when each outbox wake arrived
        self.woke = trio.Event()
        self.bus: Any = None

    def handle(self, env: Envelope) -> Message | None:
        if isinstance(env.body, RuntimeStateRequest):
            return RuntimeStateReply(state="online")
        if isinstance(env.body, OutboxWakeEvent):
            self.wakes.append(time.perf_counter())
            self.woke.set()
            self.woke = trio.Event()
        return None

    async def wake_after(self, index: int) -> float:
        """When wake number `index` (counted from 0) arrived, once it has."""
        with trio.fail_after(WAIT):
            while len(self.wakes) <= index:
                await self.woke.wait()
        return self.wakes[index]

    async def pending(self) -> tuple[Any, ...]:
        reply = await self.bus.request(
            "store", OutboxPendingRequest(limit=100), expect=OutboxPendingReply
        )
        return tuple(reply.rows)

    async def committed(self, kind: str, call_id: str) -> bool:
        return any(
            r.kind == kind and r.body["payload"].get("call_id") == call_id
            for r in await self.pending()
        )

    async def ack_all(self) -> None:
        for row in await self.pending():
            await self.bus.request(
                "store", OutboxAckRequest(outbox_id=row.outbox_id), expect=OutboxAckReply
            )

    async def revision(self) -> str:
        with trio.fail_after(WAIT):
            while True:
                for row in await self.pending():
                    if row.kind == wire.INVENTORY:
                        return str(row.body["payload"]["revision"])
                with trio.move_on_after(0.05):  # a wake may come while we read
                    await self.woke.wait()

    async def ask(self, call_id: str, revision: str) -> None:
        await self.bus.request(
            "router",
            InboundEnvelopesRequest(
                conversation_id=CONVERSATION, agent_id=AGENT, envelopes=(_call(call_id, revision),)
            ),
            expect=InboundEnvelopesReply,
        )
        with trio.fail_after(WAIT):  # its `accepted` receipt, committed with the ask
            while not await self.committed(wire.RECEIPT, call_id):
                await self.wake_after(len(self.wakes))

    async def result_after(self, seen: int, call_id: str) -> float:
        """When the wake came after which the call's result row is there (another wake, an
        inventory's say, may come first)."""
        with trio.fail_after(WAIT):
            while True:
                at = await self.wake_after(seen)
                seen += 1
                if await self.committed(wire.RESULT, call_id):
                    return at


async def answer_latencies(samples: int) -> list[float]:
    """Seconds from each answer frame sent at the Shell's socket to the call's result row
    committed (the router's wake), one interaction at a time."""
    with tempfile.TemporaryDirectory(prefix="lu-bench-") as tmp:
        data_dir = Path(tmp)
        plan = plan_runtime(RuntimeOptions(data_dir=data_dir, demo_agent=False))
        specs = [s for s in plan.specs if s.name not in _LEFT_OUT]
        await _session_first(data_dir, specs)
        supervisor = Supervisor(specs, data_dir=data_dir, preload=PRELOAD)
        peer = _AsTransport()
        latencies: list[float] = []
        async with trio.open_nursery() as nursery:
            await nursery.start(supervisor.run)
            peer.bus = await nursery.start(
                supervisor.attach, Identity(ActorKind.TRANSPORT, "transport"), peer.handle
            )
            revision = await peer.revision()
            await peer.ack_all()
            shell = _Shell(plan.shell_url)
            await nursery.start(shell.watch)
            answered_at = -math.inf
            for n in range(WARM_UP + samples):
                call_id = f"ask-{n}"
                await peer.ask(call_id, revision)
                view = await shell.shown(call_id)
                # A person's pace: one Shell may send INTERACTION_FRAMES_PER_S answers a second
                # (past its burst the hostbridge refuses more), so answers are spaced to it,
                # outside the clock.
                await trio.sleep_until(answered_at + 1 / INTERACTION_FRAMES_PER_S)
                answered_at = trio.current_time()
                seen = len(peer.wakes)
                started = time.perf_counter()
                await shell.answer(str(view["interaction_id"]), {"action_ids": ["yes"]})
                at = await peer.result_after(seen, call_id)
                if n >= WARM_UP:
                    latencies.append(at - started)
                await peer.ack_all()
            nursery.cancel_scope.cancel()
        return latencies
