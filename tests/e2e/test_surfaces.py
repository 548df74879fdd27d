"""Surfaces through the real tree (focus, the store, the test app's own process): the view
focus makes, an event from the hostbridge's side to the app, session data from both writers
with the hostbridge told, the refusals, and a SIGKILL of the app that the Surface outlives.
The hostbridge's side is a peer of its kind on the bus (the Shell's Surface frames are the
hostbridge's own tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from lineup.actors.focus.messages import (
    SurfaceAccepted,
    SurfaceAssetsReply,
    SurfaceAssetsRequest,
    SurfaceEventRequest,
    SurfaceSessionDataRequest,
)
from lineup.actors.kernel import ActorKind, Bus, Envelope, ErrorCode, Identity, LineUpError
from lineup.hostbridge.messages import SessionDataUpdatedEvent
from lineup.tests.support.runtime import (
    CONVERSATION,
    Runtime,
    kill_and_wait_restarted,
    shell_and_agent,
    start_runtime,
)
from lineup.tests.support.shell import ShellClient
from lineup.tests.support.surface_app import SurfaceApp

WAIT = 20.0
APP = Path(__file__).parents[1] / "support" / "surface_app"
INSTANCE = "surfacer:s-open"
SID = "lu:surface:" + INSTANCE


async def runtime_with_surface_app(nursery: trio.Nursery, data_dir: Path) -> Runtime:
    config = {
        "app_scope": SurfaceApp.app_info.app_scope,
        "manifest": str(APP / "manifest.json"),
        "entry": f"{SurfaceApp.__module__}:{SurfaceApp.__qualname__}",
        "title": "Surfacer",
    }
    return await start_runtime(nursery, data_dir / "rt", demo_agent=False, extra_apps=(config,))


class BridgeSide:
    """A peer of the hostbridge's kind: what focus tells it, and its requests."""

    def __init__(self) -> None:
        self.updates: list[SessionDataUpdatedEvent] = []
        self.bus: Bus | None = None
        self.updated = trio.Event()

    def handle(self, env: Envelope) -> None:
        if isinstance(env.body, SessionDataUpdatedEvent):
            self.updates.append(env.body)
            self.updated.set()

    async def ask(self, body: Any, expect: type[Any] = SurfaceAccepted) -> Any:
        assert self.bus is not None
        return await self.bus.request("focus", body, expect=expect)

    async def code_of(self, body: Any) -> ErrorCode | None:
        try:
            await self.ask(body)
        except LineUpError as exc:
            return exc.code
        return None


async def wait_view(shell: ShellClient, test: Any) -> dict[str, Any]:
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda sh: test(sh.views.get(INSTANCE) or {}))
    return shell.views[INSTANCE]


def session(op: str, **fields: Any) -> SurfaceSessionDataRequest:
    return SurfaceSessionDataRequest(instance_id=INSTANCE, surface_id=SID, op=op, **fields)


async def event_accepted(bridge: BridgeSide, text: str) -> None:
    """Send a `note.add` as a Surface does: again while the app's process is not there."""
    event = SurfaceEventRequest(
        instance_id=INSTANCE, surface_id=SID, name="note.add", data={"text": text}
    )
    with trio.fail_after(WAIT):
        while (code := await bridge.code_of(event)) is not None:
            assert code in (ErrorCode.ACTOR_RESTARTED, ErrorCode.ACTOR_UNAVAILABLE)
            await trio.sleep(0.1)  # the Surface's retry pace, not a synchronisation


async def test_a_surface_carries_events_and_session_data_both_ways_and_outlives_a_sigkill(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await runtime_with_surface_app(nursery, data_dir)
    shell, agent, revision = await shell_and_agent(nursery, runtime)

    async def call(call_id: str, **arguments: str) -> dict[str, Any]:
        await agent.client.call_tool(
            CONVERSATION, "surfacer.open", arguments, revision, call_id=call_id
        )
        result: dict[str, Any] = (await agent.terminal(call_id))["payload"]["result"]
        return result

    assert await call("s-open", mode="open") == {"surface_id": SID, "codes": []}
    view = await wait_view(shell, lambda v: v.get("kind") == "lineup.surface")
    assert {k: view[k] for k in ("surface_id", "entrypoint", "surface_version", "label")} == {
        "surface_id": SID, "entrypoint": "board", "surface_version": 1, "label": "Surfacer"
    }  # fmt: skip
    assert view["tool_input"] == {"call": "s-open"}

    bridge = BridgeSide()
    bridge.bus = await nursery.start(
        runtime.supervisor.attach, Identity(ActorKind.HOSTBRIDGE, "bridge-side"), bridge.handle
    )
    assets = await bridge.ask(SurfaceAssetsRequest(instance_id=INSTANCE), SurfaceAssetsReply)
    assert (Path(assets.web_root) / assets.document).read_text().startswith("<!doctype html>")
    snapshot = await bridge.ask(session("subscribe"))
    assert (snapshot.data, snapshot.revision) == (None, 0)

    # The Surface sends an event; the app writes session data; the Surface's side is told.
    await event_accepted(bridge, "first")
    with trio.fail_after(WAIT):
        await bridge.updated.wait()
    assert [(u.surface_id, u.data, u.revision) for u in bridge.updates] == [
        (SID, {"notes": ["first"]}, 1)
    ]
    await wait_view(shell, lambda v: v.get("state", {}).get("seen") == 1)

    # The Surface writes; a write on an older revision is refused.
    wrote = await bridge.ask(
        session("replace", data={"notes": ["first", "mine"]}, expected_revision=1)
    )
    assert wrote.revision == 2
    stale = session("replace", data={"notes": []}, expected_revision=1)
    assert await bridge.code_of(stale) is ErrorCode.STALE_REVISION
    await wait_view(shell, lambda v: v.get("state", {}).get("seen") == 2)  # the app heard it

    # Refusals the app gets.
    assert await call("s-future", mode="future") == {"codes": ["surface_unavailable"]}
    assert await call("s-reach", mode="reach", other_surface="lu:surface:chat") == {
        "codes": ["surface_not_found", "surface_not_found"]
    }

    # SIGKILL of the app's process: the Surface and its view stay; the new process hears
    # the session data again and the Surface's events reach it.
    await kill_and_wait_restarted(runtime, "miniapp:surfacer")
    assert shell.views[INSTANCE]["surface_id"] == SID
    again = await bridge.ask(session("get"))
    assert (again.data, again.revision) == ({"notes": ["first", "mine"]}, 2)
    await event_accepted(bridge, "after")
    await wait_view(shell, lambda v: v.get("state", {}).get("seen") == 3)
    final = await bridge.ask(session("get"))
    assert (final.data, final.revision) == ({"notes": ["first", "mine", "after"]}, 3)
    assert [u.revision for u in bridge.updates] == [1, 2, 3]
    view = shell.views[INSTANCE]
    assert (view["kind"], view["surface_id"]) == ("lineup.surface", SID)
