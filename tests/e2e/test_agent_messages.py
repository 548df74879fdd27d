"""`app.agent_messages` and the delivery chain through real processes (seed 004 §5.3–§5.4,
issue 29 items 1 and 2): an app hears the Agent's texts it subscribed to once each; what came
while its process was stopped and then SIGKILLed is in its inbox, and the next process's
`list()` and `subscribe(include_pending=True)` fill the gap; unsubscribed, a text waits until
the app's `acknowledge` removes it (once: a second says it was not there); a text its manifest
does not subscribe to reaches no inbox (accepted, audited as filtered); a text for a disabled
app is refused `app_disabled` and audited, never dropped in silence."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from lineup.actors.focus.messages import AppEnableRequest, InventoryReply
from lineup.actors.kernel import ActorKind, Bus, ErrorCode, LineUpError
from lineup.actors.router.messages import SurfaceAgentMessagesReply, SurfaceAgentMessagesRequest
from lineup.actors.store.messages import InboxListReply, InboxListRequest
from lineup.ops.agent import AgentClient
from lineup.sdk import MiniApp
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.listener_app import SCOPE, TEXT, Bystander, Listener
from lineup.tests.support.runtime import (
    AGENT_ID,
    CONVERSATION,
    Runtime,
    kill_and_wait_restarted,
    shell_and_agent,
    start_runtime_with_app,
)
from lineup.tests.support.shell import ShellClient
from lineup.tests.support.tree import attach, audit_rows

WAIT = 20.0
INSTANCE = f"{SCOPE}:open-1"


async def say(
    agent: AgentClient, message_id: str, markdown: str, *, instance_id: str | None = INSTANCE
) -> None:
    envelope: dict[str, Any] = {
        "v": 1,
        "id": message_id,
        "type": TEXT,
        "conversation_id": CONVERSATION,
        "app_scope": SCOPE,
        "sender": {"kind": "agent", "id": AGENT_ID},
        "payload": {"markdown": markdown},
    }
    if instance_id is not None:
        envelope["instance_id"] = instance_id
    await agent.send(envelope, idempotency_key=message_id)


async def view_until(shell: ShellClient, **wanted: list[str]) -> dict[str, Any]:
    def holds(sh: ShellClient) -> bool:
        view = sh.views.get(INSTANCE, {})
        return all(view.get(key) == value for key, value in wanted.items())

    with trio.fail_after(WAIT):
        await shell.wait_until(holds)
    return shell.views[INSTANCE]


async def inbox(reader: Bus, instance_id: str | None) -> list[str]:
    page = await reader.request(
        "store",
        InboxListRequest(app_scope=SCOPE, conversation_id=CONVERSATION, instance_id=instance_id),
        expect=InboxListReply,
    )
    return [row.delivery_id for row in page.rows]


async def inbox_until(reader: Bus, wanted: list[str]) -> None:
    with trio.fail_after(WAIT):
        while await inbox(reader, INSTANCE) != wanted:
            await trio.testing.wait_all_tasks_blocked()


async def test_an_app_hears_its_texts_once_and_the_gap_a_crash_left_is_filled_after_restart(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime_with_app(nursery, data_dir, Listener, title="Listener")
    shell, agent, revision = await shell_and_agent(nursery, runtime)
    await agent.client.call_tool(CONVERSATION, "listener.open", {}, revision, call_id="open-1")
    await agent.terminal("open-1")
    reader = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "inbox-reader")

    # Running: each text is handed once, live, and acknowledged by the SDK (a display message).
    await say(agent.client, "m-one", "one")
    await say(agent.client, "m-two", "two")
    await view_until(shell, live=["one", "two"])
    await inbox_until(reader, [])

    # Stopped, then SIGKILLed: what the Agent says meanwhile is persisted in the inbox (rule 1,
    # rule 4), told to a process that never reads it.
    child = runtime.supervisor.children[f"miniapp:{SCOPE}"]
    assert child.pid is not None
    os.kill(child.pid, signal.SIGSTOP)
    await say(agent.client, "m-three", "three")
    await say(agent.client, "m-four", "four")
    await inbox_until(reader, ["m-three", "m-four"])
    await kill_and_wait_restarted(runtime, f"miniapp:{SCOPE}")

    # The new process: `list()` names the gap, the subscription is handed it at once, each
    # text once however often the runtime tells it again, and then the inbox is empty.
    view = await view_until(shell, listed=["three", "four"], pending=["three", "four"])
    assert view["live"] == []
    await inbox_until(reader, [])
    await say(agent.client, "m-five", "five")
    view = await view_until(shell, live=["five"])
    assert view["pending"] == ["three", "four"]

    # Unsubscribed: a text waits in the inbox until the app acknowledges it, once.
    await agent.client.call_tool(CONVERSATION, "listener.mute", {}, revision, call_id="mute-1")
    await agent.terminal("mute-1")
    await say(agent.client, "m-six", "six")
    await inbox_until(reader, ["m-six"])
    ack = {"message_id": "m-six"}
    await agent.client.call_tool(CONVERSATION, "listener.ack", ack, revision, call_id="ack-1")
    done = await agent.terminal("ack-1")
    assert done["payload"]["result"] == {"listed": ["m-six"], "first": True, "again": False}
    await inbox_until(reader, [])
    assert shell.views[INSTANCE]["live"] == ["five"]


async def conversation_text_filtered(
    nursery: trio.Nursery, data_dir: Path, app: type[MiniApp], title: str, step: str
) -> tuple[Runtime, AgentView, Bus]:
    """`app`'s instance open, a text for the app's conversation and one for its instance said:
    the first accepted (not the Agent's error), in no inbox, never handed, and audited as
    filtered by `step`; the second shown. Returns the runtime, the Agent and an auditor."""
    runtime = await start_runtime_with_app(nursery, data_dir, app, title=title)
    shell, agent, revision = await shell_and_agent(nursery, runtime)
    await agent.client.call_tool(CONVERSATION, "listener.open", {}, revision, call_id="open-1")
    await agent.terminal("open-1")
    router = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "auditor")
    await say(agent.client, "m-conversation", "not mine", instance_id=None)
    await say(agent.client, "m-mine", "mine")
    await view_until(shell, live=["mine"])
    rows = await audit_rows(
        router,
        lambda rows: any(r.subject_id == "m-conversation" for r in rows),
        event_prefix="router.message_filtered",
    )
    filtered = [r for r in rows if r.subject_id == "m-conversation"]
    assert [(r.event, r.code, r.message_type) for r in filtered] == [
        (f"router.message_filtered.{step}", None, TEXT)
    ]
    assert await inbox(router, None) == []
    return runtime, agent, router


async def test_a_text_the_manifest_does_not_subscribe_to_is_filtered_and_a_disabled_app_refuses(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    # The manifest subscribes to texts for an instance, not the conversation's.
    runtime, agent, router = await conversation_text_filtered(
        nursery, data_dir, Listener, "Listener", "manifest"
    )

    # Disabled: a text for it is refused with its code and audited (rule 5), stored nowhere.
    ui = await attach(nursery, runtime.supervisor, ActorKind.HOSTBRIDGE, "switch")
    off = await ui.request(
        "focus", AppEnableRequest(app_scope=SCOPE, enabled=False), expect=InventoryReply
    )
    assert SCOPE in off.disabled_apps
    await say(agent.client, "m-off", "while off")
    rows = await audit_rows(
        router,
        lambda rows: any(r.subject_id == "m-off" for r in rows),
        event_prefix="router.envelope_rejected",
    )
    assert [r.code for r in rows if r.subject_id == "m-off"] == [ErrorCode.APP_DISABLED.value]
    assert await inbox(router, INSTANCE) == []


async def test_a_conversation_text_an_app_holds_no_permission_for_is_filtered_and_audited(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """Seed 004 §5.3: its own instance's texts reach it; the conversation's are another
    subscription it never asked for: accepted, in no inbox, audited by the permission step."""
    await conversation_text_filtered(nursery, data_dir, Bystander, "Bystander", "permission")


async def test_a_surface_reaches_its_own_instances_messages_only_and_another_is_audited(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    # Issue 29 item 1: the Surface bridge's `agent_messages`, as the hostbridge relays it
    # (`router.ui.surface.agent_messages`), for the Surface's own app and instance.
    runtime = await start_runtime_with_app(nursery, data_dir, Listener, title="Listener")
    _shell, agent, revision = await shell_and_agent(nursery, runtime)
    for call_id in ("open-1", "open-2"):
        await agent.client.call_tool(CONVERSATION, "listener.open", {}, revision, call_id=call_id)
        await agent.terminal(call_id)
    await agent.client.call_tool(CONVERSATION, "listener.mute", {}, revision, call_id="mute-1")
    await agent.terminal("mute-1")
    reader = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "inbox-reader")
    await say(agent.client, "m-mine", "mine")
    await say(agent.client, "m-other", "other", instance_id=f"{SCOPE}:open-2")
    await inbox_until(reader, ["m-mine"])
    host = await attach(nursery, runtime.supervisor, ActorKind.HOSTBRIDGE, "surface-host")

    def ask(op: str, **fields: Any) -> SurfaceAgentMessagesRequest:
        return SurfaceAgentMessagesRequest(
            instance_id=INSTANCE, app_scope=SCOPE, surface_id="lu:surface:x", op=op, **fields
        )

    listed = await host.request("router", ask("list"), expect=SurfaceAgentMessagesReply)
    assert [(m.message_id, m.instance_id) for m in listed.messages] == [("m-mine", INSTANCE)]

    other = await host.request(
        "router", ask("acknowledge", message_id="m-other"), expect=SurfaceAgentMessagesReply
    )
    assert not other.acknowledged
    rows = await audit_rows(
        reader,
        lambda rows: any(r.subject_id == "m-other" for r in rows),
        event_prefix="router.scope_denied",
    )
    assert [(r.code, r.peer) for r in rows if r.subject_id == "m-other"] == [
        (ErrorCode.APP_SCOPE_MISMATCH.value, "surface-host")
    ]
    mine = [
        (await host.request("router", ask("acknowledge", message_ids=("m-mine",)),
                            expect=SurfaceAgentMessagesReply)).acknowledged
        for _ in range(2)
    ]  # fmt: skip
    assert mine == [True, False]
    await inbox_until(reader, [])
    gone = ask("list").model_copy(update={"instance_id": f"{SCOPE}:nobody"})
    with pytest.raises(LineUpError) as refused:
        await host.request("router", gone, expect=SurfaceAgentMessagesReply)
    assert refused.value.code is ErrorCode.APP_INSTANCE_NOT_FOUND
