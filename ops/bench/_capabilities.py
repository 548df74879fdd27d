"""A capability request under an "allow" policy (issue 14): from the app's
`capabilities.request("notification.show", …)` to its `completed` result, timed in the app's
process, through the real gateway, focus and store processes.

What one sample includes: the app → gateway request; the gateway asking focus for the
instance's context and the store for the app's grant; the decision; the rate limit (set high
enough never to refuse here); the provider run told to the hostbridge and the hostbridge's
`gateway.ui.provider.done` answer; the result back to the app; and the audit rows queued (they
are written to the store in the background). What it leaves out: the Shell. The hostbridge is
the bench's own peer of that kind (no real hostbridge runs), which answers each run the moment
it is told, as a Shell that shows a toast at once would, minus the WebSocket hop.

The Agent starts the app's tool once (through the embedded AppServer), outside the clock; the
tool makes the requests one at a time and returns their times.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Final

import trio

from lineup import wire
from lineup.actors.gateway.messages import ProviderDoneRequest, UiAccepted
from lineup.actors.kernel import ActorKind, Bus, Envelope, Identity, Outcome
from lineup.hostbridge.messages import ProviderRunEvent
from lineup.ops.agent import AgentClient
from lineup.sdk.manifest import manifest_json
from lineup.sdk.tools import manifest_of
from lineup.supervisor import Intensity, Supervisor
from lineup.supervisor._runtime import LANES, PRELOAD, RuntimeOptions, plan_runtime

from ._capability_app import CapabilityBenchApp

__all__ = ["capability_latencies"]

WAIT_S: Final = 60.0
AGENT, SECRET, CONVERSATION = "demo-agent", "demo-secret", "conv-demo"
CAPABILITIES: Final = {
    "policy": {"bench-cap": {"notification.show": "allow"}},
    "rate_per_minute": {"notification.show": 1_000_000},
}


async def _answer_runs(bus: Bus, runs: trio.MemoryReceiveChannel[str]) -> None:
    async for run_id in runs:
        done = ProviderDoneRequest(run_id=run_id, status="completed")
        await bus.request("gateway", done, expect=UiAccepted)


async def _result(client: AgentClient, call_id: str) -> dict[str, Any]:
    cursor = ""
    with trio.fail_after(WAIT_S * 10):
        while True:
            page, cursor = await client.sync(cursor, timeout_ms=5_000)
            for message in page:
                if message.get("type") in (wire.RESULT, wire.TOOL_ERROR) and (
                    message["payload"].get("call_id") == call_id
                ):
                    assert message["type"] == wire.RESULT, message
                    result: dict[str, Any] = message["payload"]["result"]
                    return result


async def _revision(client: AgentClient) -> str:
    with trio.fail_after(WAIT_S):
        while True:
            page, _ = await client.sync("", timeout_ms=1_000)
            revisions = [m["payload"]["revision"] for m in page if m.get("type") == wire.INVENTORY]
            if revisions:
                return str(revisions[-1])


async def capability_latencies(count: int) -> list[float]:
    """`count` request → completed times, in seconds (after a few untimed warm-up ones)."""
    with tempfile.TemporaryDirectory(prefix="lineup-bench-cap-") as tmp:
        data_dir = Path(tmp) / "rt"
        data_dir.mkdir(mode=0o700)
        manifest = Path(tmp) / "bench-cap.json"
        manifest.write_text(manifest_json(manifest_of(CapabilityBenchApp)))
        app = {
            "app_scope": "bench-cap",
            "manifest": str(manifest),
            "entry": "lineup.ops.bench._capability_app:CapabilityBenchApp",
            "title": "bench",
        }
        plan = plan_runtime(
            RuntimeOptions(
                data_dir=data_dir,
                demo_agent=False,
                extra_apps=(app,),
                capabilities=CAPABILITIES,
            )
        )
        supervisor = Supervisor(
            [spec for spec in plan.specs if spec.name != "hostbridge"],
            data_dir=data_dir,
            preload=PRELOAD,
            lanes=LANES,
            intensity=Intensity(max_restarts=50, period=10.0),
            link_wait=plan.link_wait,
        )
        async with trio.open_nursery() as nursery:
            await nursery.start(supervisor.run)
            send, receive = trio.open_memory_channel[str](64)

            def told(env: Envelope) -> Outcome:
                if isinstance(env.body, ProviderRunEvent):
                    send.send_nowait(env.body.run.run_id)
                return None

            bus: Bus = await nursery.start(
                supervisor.attach, Identity(ActorKind.HOSTBRIDGE, "hostbridge"), told
            )
            nursery.start_soon(_answer_runs, bus, receive)
            async with AgentClient(plan.appserver_url) as client:
                await client.login(AGENT, SECRET)
                revision = await _revision(client)
                warm = min(20, count)
                sent = await client.call_tool(
                    CONVERSATION, "bench-cap.run", {"count": warm + count}, revision
                )
                result = await _result(client, sent["call_id"])
            nursery.cancel_scope.cancel()
    if result["statuses"]:
        raise RuntimeError(f"capability requests not completed: {json.dumps(result['statuses'])}")
    seconds: list[float] = result["seconds"][warm:]
    return seconds
