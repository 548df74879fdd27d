"""Interact's mode through the SDK's wire on real processes (issue 29, item 5): store, router
and focus as the supervisor runs them, and the chat's channel as a MiniApp's peer. The chat
asks for Audio; focus records it and tells the chat; the chat's context says Audio, also
after a SIGKILL of focus; another app may not switch the chat (`app_scope_mismatch`)."""

from __future__ import annotations

from pathlib import Path

import trio

from lineup.actors.kernel import ActorKind, Bus, Envelope, ErrorCode, Identity, LineUpError
from lineup.actors.store.messages import InstanceListReply, InstanceListRequest
from lineup.sdk import protocol as sdk
from lineup.supervisor import ChildSpec, Supervisor
from lineup.tests.support.process import wait_pid_gone
from lineup.tests.support.tree import attach, start_tree

WAIT = 20.0


async def tree(nursery: trio.Nursery, data_dir: Path) -> Supervisor:
    specs = [
        ChildSpec("store", ActorKind.STORE, "lineup.actors.store:StoreActor"),
        ChildSpec("router", ActorKind.ROUTER, "lineup.actors.router:RouterActor"),
        ChildSpec("focus", ActorKind.FOCUS, "lineup.actors.focus:FocusActor", config={"apps": []}),
    ]
    data_dir.mkdir(parents=True, exist_ok=True)
    return await start_tree(nursery, specs, data_dir)


async def kill_focus(supervisor: Supervisor) -> None:
    child = supervisor.children["focus"]
    pid, incarnation = child.pid, child.incarnation
    assert pid is not None
    supervisor.kill("focus")
    await wait_pid_gone(pid)
    with trio.fail_after(WAIT):
        await supervisor.wait_until(
            lambda: child.incarnation > incarnation and child.state == "running"
        )


async def context(chat: Bus) -> sdk.ContextReply:
    with trio.fail_after(WAIT):
        return await chat.request(
            "router", sdk.ContextRequest(instance_id="chat"), expect=sdk.ContextReply, retry=True
        )


async def refused(bus: Bus, request: sdk.ModeSwitchRequest) -> ErrorCode:
    try:
        with trio.fail_after(WAIT):
            await bus.request("focus", request, expect=sdk.CommandReceipt)
    except LineUpError as exc:
        return exc.code
    raise AssertionError("accepted")


async def test_the_chats_switch_is_recorded_told_and_kept_across_a_kill_of_focus(
    tmp_path: Path,
) -> None:
    told: list[sdk.ModeChangedEvent] = []
    arrived = trio.Event()

    def on_event(env: Envelope) -> None:
        if isinstance(env.body, sdk.ModeChangedEvent):
            told.append(env.body)
            arrived.set()

    async with trio.open_nursery() as nursery:
        supervisor = await tree(nursery, tmp_path / "rt")
        chat: Bus = await nursery.start(
            supervisor.attach, Identity(ActorKind.MINIAPP, "miniapp:chat"), on_event
        )
        reader = await attach(nursery, supervisor, ActorKind.ROUTER, "reader")
        before = await context(chat)
        assert (before.mode, before.parent_instance_id) == ("im", None)

        with trio.fail_after(WAIT):
            receipt = await chat.request(
                "focus",
                sdk.ModeSwitchRequest(instance_id="chat", mode="audio"),
                expect=sdk.CommandReceipt,
            )
            await arrived.wait()
        assert receipt.id == "chat"
        assert told == [sdk.ModeChangedEvent(instance_id="chat", mode="audio", restored=False)]
        assert (await context(chat)).mode == "audio"
        rows = await reader.request("store", InstanceListRequest(), expect=InstanceListReply)
        assert {row.instance_id: row.mode for row in rows.instances} == {"chat": "audio"}

        await kill_focus(supervisor)
        assert (await context(chat)).mode == "audio"  # focus rebuilt it from the store

        other = await attach(nursery, supervisor, ActorKind.MINIAPP, "miniapp:probe")
        switch = sdk.ModeSwitchRequest(instance_id="chat", mode="video")
        assert await refused(other, switch) == ErrorCode.APP_SCOPE_MISMATCH
        assert (await context(chat)).mode == "audio"
        nursery.cancel_scope.cancel()
