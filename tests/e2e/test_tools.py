"""Agent tool calls through the real runtime: AppServer, transport, router, focus, store and
the MiniApp processes, with the stable codes, the receipts and one terminal message per call."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.actors.focus.messages import (
    AppEnableRequest,
    InstanceReply,
    InventoryReply,
    LaunchRequest,
    UiIntentRequest,
)
from lineup.actors.kernel import ActorKind, AuditRecord, ErrorCode, LineUpError
from lineup.actors.store.messages import (
    MAX_FOCUS_STACK,
    FocusStackGetReply,
    FocusStackGetRequest,
    ToolCallGetReply,
    ToolCallGetRequest,
)
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.probe_app import Probe
from lineup.tests.support.process import wait_pid_gone
from lineup.tests.support.runtime import (
    AGENT_ID,
    CONVERSATION,
    Runtime,
    agent_client,
    kill_and_wait_restarted,
    shell_and_agent,
    start_runtime,
    start_runtime_with_app,
)
from lineup.tests.support.shell import ShellClient, tree_text
from lineup.tests.support.tree import attach, audit_rows

WAIT = 20.0
STANDARD = ("interaction.notice", "interaction.choice", "interaction.confirm", "interaction.input")


async def runtime_with_probe(nursery: trio.Nursery, data_dir: Path) -> Runtime:
    return await start_runtime_with_app(nursery, data_dir, Probe, title="Probe")


@dataclass
class Scene:
    """A running runtime, a Shell on it, and the Agent with the current inventory revision."""

    runtime: Runtime
    shell: ShellClient
    agent: AgentView
    revision: str
    nursery: trio.Nursery
    auditor: Any = None

    async def call(self, tool: str, arguments: dict[str, Any], call_id: str) -> None:
        """The Agent calls `tool` with the current inventory revision."""
        await self.agent.client.call_tool(
            CONVERSATION, tool, arguments, self.revision, call_id=call_id
        )

    async def chat_still_answers(self, text: str) -> None:
        """The runtime still serves the IM: an Agent's message reaches the chat's timeline."""
        await self.agent.client.say(CONVERSATION, text)
        with trio.fail_after(WAIT):
            await self.shell.wait_until(
                lambda sh: (
                    text in [tree_text(i["tree"]) for i in sh.timeline() if i["author"] == "agent"]
                )
            )

    async def scope_denials(self, count: int) -> list[AuditRecord]:
        """The probe's scope refusals in the audit, once there are `count` of them."""
        auditor = await attach_once(self)
        rows = await audit_rows(
            auditor,
            lambda rows: len([r for r in rows if r.event.endswith(".scope_denied")]) >= count,
            peer="miniapp:probe",
        )
        return [r for r in rows if r.event.endswith(".scope_denied")]

    async def open_dashboard(self, call_id: str, task_id: str, title: str) -> None:
        """`task-dashboard.open`, returning once the dashboard reported it opened."""
        await self.call("task-dashboard.open", {"task_id": task_id, "title": title}, call_id)
        await self.agent.pull(
            "lineup.v1.tool.progress", lambda m: m["payload"]["call_id"] == call_id
        )


async def attach_once(s: Scene) -> Any:
    """A router-kind peer that reads the audit (one per scene)."""
    if s.auditor is None:
        s.auditor = await attach(s.nursery, s.runtime.supervisor, ActorKind.ROUTER, "auditor")
    return s.auditor


async def scene(nursery: trio.Nursery, data_dir: Path, *, probe: bool = False) -> Scene:
    runtime = (
        await runtime_with_probe(nursery, data_dir)
        if probe
        else await start_runtime(nursery, data_dir, demo_agent=False)
    )
    shell, agent, revision = await shell_and_agent(nursery, runtime)
    return Scene(runtime, shell, agent, revision, nursery)


def foreground(shell: ShellClient) -> str | None:
    apps = [f for f in shell.frames if f.get("type") == "shell.apps"]
    return apps[-1]["foreground"] if apps else None


async def test_open_update_and_close_go_round_trip_with_receipts_and_one_result_each(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    shell, agent, revision = s.shell, s.agent, s.revision
    await s.open_dashboard("open-1", "t1", "Write the report")
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: (foreground(s) or "").startswith("task-dashboard:"))
    instance = foreground(shell)
    assert instance is not None
    apps = [f for f in shell.frames if f.get("type") == "shell.apps"][-1]
    states = {i["instance_id"]: i["state"] for i in apps["instances"]}
    assert states == {"chat": "background", instance: "foreground"}  # chat went behind

    await agent.client.call_tool(
        CONVERSATION,
        "task-dashboard.update",
        {"task_id": "t1", "progress": 40},
        revision,
        call_id="upd-1",
    )
    update = await agent.terminal("upd-1")
    assert update["type"] == "lineup.v1.tool.result"
    assert update["payload"]["result"]["progress"] == 40
    with trio.fail_after(WAIT):
        await shell.wait_until(
            lambda s: (s.views.get(instance) or {}).get("task", {}).get("progress") == 40
        )

    await shell.send(
        {
            "type": "ui.event",
            "app_scope": "task-dashboard",
            "instance_id": instance,
            "event": {"kind": "task.finish"},
        }
    )
    await shell.send(
        {
            "type": "ui.event",
            "app_scope": "task-dashboard",
            "instance_id": instance,
            "event": {"kind": "task.close"},
        }
    )
    opened = await agent.terminal("open-1")
    assert opened["payload"]["result"] == {"status": "completed"}
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: foreground(s) == "chat")
    await agent.settle()
    receipts = [m["payload"]["status"] for m in agent.of_call("open-1", "lineup.v1.tool.receipt")]
    assert receipts == ["accepted", "starting", "activation_ready"]
    for call_id in ("open-1", "upd-1"):
        finals = [
            m
            for m in agent.of_call(call_id)
            if m["type"] in ("lineup.v1.tool.result", "lineup.v1.tool.error")
        ]
        assert len(finals) == 1


async def test_refused_calls_get_their_stable_code_and_never_reach_a_miniapp(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url))
    revision = await agent.inventory()
    good = {"task_id": "t1", "title": "x"}
    calls: list[tuple[str, str, dict[str, Any], str, dict[str, Any], ErrorCode]] = [
        ("c-rev", "task-dashboard.open", good, "999", {}, ErrorCode.INVENTORY_REVISION_MISMATCH),
        ("c-adv", "task-dashboard.delete", good, revision, {}, ErrorCode.TOOL_NOT_ADVERTISED),
        (
            "c-in",
            "task-dashboard.open",
            {"task_id": "t1"},
            revision,
            {},
            ErrorCode.TOOL_INPUT_INVALID,
        ),
        (
            "c-in2",
            "task-dashboard.open",
            {**good, "extra": 1},
            revision,
            {},
            ErrorCode.TOOL_INPUT_INVALID,
        ),
        (
            "c-in3",
            "interaction.input",
            {
                "title": "t",
                "prompt": "p",
                "fields": [{"id": "n", "label": "N", "type": "number", "max_length": 3}],
            },
            revision,
            {},
            ErrorCode.TOOL_INPUT_INVALID,
        ),
        (
            "c-long",
            "task-dashboard.open",
            {**good, "x" * 300: 1},
            revision,
            {},
            ErrorCode.TOOL_INPUT_INVALID,
        ),  # a pointer past the wire's 200 characters: its nearest ancestor that fits
        (
            "c-scope",
            "task-dashboard.open",
            good,
            revision,
            {"app_scope": "chat"},
            ErrorCode.APP_SCOPE_MISMATCH,
        ),
        (
            "c-inst",
            "task-dashboard.update",
            {"task_id": "t1"},
            revision,
            {"app_scope": "task-dashboard", "instance_id": "task-dashboard:nope"},
            ErrorCode.APP_INSTANCE_NOT_FOUND,
        ),
    ]
    for call_id, tool, arguments, rev, extra, _ in calls:
        envelope = {
            "v": 1,
            "id": f"env-{call_id}",
            "type": "lineup.v1.tool.call",
            "conversation_id": CONVERSATION,
            **extra,
            "payload": {
                "call_id": call_id,
                "tool": tool,
                "inventory_revision": rev,
                "input": arguments,
            },
        }
        await agent.client.send(envelope, idempotency_key=f"env-{call_id}")
    # A refused input names its first offending field (a path, not content); nothing else does.
    pointers = {"c-in": "/title", "c-in2": "/extra", "c-in3": "/fields/0", "c-long": ""}
    for call_id, *_, code in calls:
        error = await agent.terminal(call_id)
        assert (error["type"], error["payload"]["code"]) == ("lineup.v1.tool.error", code.value)
        assert error["payload"].get("pointer") == pointers.get(call_id)
    auditor = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "auditor")
    rejected = await audit_rows(
        auditor,
        lambda rows: len([r for r in rows if r.subject_id in pointers]) == len(pointers),
        event_prefix="router.tool_call_rejected",
    )
    for row in rejected:  # the audit keeps the code and the ids, never the pointer
        assert not any(p in row.model_dump_json() for p in ("/title", "/extra", "/fields/0"))

    # Disable the app: its tools leave the inventory; a call with the new revision is refused.
    shell_side = await attach(nursery, runtime.supervisor, ActorKind.HOSTBRIDGE, "probe-ui")
    inventory = await shell_side.request(
        "focus", AppEnableRequest(app_scope="task-dashboard", enabled=False), expect=InventoryReply
    )
    assert inventory.revision != revision
    # Only the runtime's own standard interactions and the other bundled apps' tools are left.
    left = {
        *STANDARD,
        "whiteboard.open",
        "whiteboard.show",
        "whiteboard.submit",
        "app-registry.open",
        "pomodoro.focus",
        "pomodoro.interrupt",
    }
    assert {t.method for t in inventory.tools} == left
    newest = await agent.pull(
        "lineup.v1.client.inventory", lambda m: m["payload"]["revision"] == inventory.revision
    )
    assert {t["method"] for t in newest["payload"]["tools"]} == left
    await agent.client.call_tool(
        CONVERSATION, "task-dashboard.open", good, inventory.revision, call_id="c-off"
    )
    error = await agent.terminal("c-off")
    assert error["payload"]["code"] == ErrorCode.APP_DISABLED.value

    # None of them ever reached a MiniApp: the dashboard's process was never even started.
    assert "miniapp:task-dashboard" not in runtime.supervisor.children
    await agent.settle()
    for call_id in [*(call[0] for call in calls), "c-off"]:
        assert len(agent.of_call(call_id)) == 1  # the error, and no receipt or result


async def test_a_launch_onto_a_full_focus_stack_is_refused_before_anything_changes(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """The drill opened instances faster than its user closed them: past the stack's bound
    every launch failed `handler_failed`, half-applied (in focus's memory, not in the store).
    Now the launch is refused with `lifecycle_denied` before anything changes, the Agent gets
    that code, and a close makes room again."""
    s = await scene(nursery, data_dir)
    router_side = await attach(nursery, s.runtime.supervisor, ActorKind.ROUTER, "filler")
    for n in range(MAX_FOCUS_STACK - 1):  # the chat is already on the stack
        await router_side.request(
            "focus",
            LaunchRequest(app_scope="task-dashboard", call_id=f"fill-{n}", foreground=False),
            expect=InstanceReply,
        )
    with pytest.raises(LineUpError) as refused:
        await router_side.request(
            "focus",
            LaunchRequest(app_scope="task-dashboard", call_id="one-more"),
            expect=InstanceReply,
        )
    assert refused.value.code is ErrorCode.LIFECYCLE_DENIED
    stack_side = await attach(nursery, s.runtime.supervisor, ActorKind.FOCUS, "stack-reader")
    stack = await stack_side.request("store", FocusStackGetRequest(), expect=FocusStackGetReply)
    assert len(stack.instance_ids) == MAX_FOCUS_STACK
    assert "task-dashboard:one-more" not in stack.instance_ids

    await s.call("task-dashboard.open", {"task_id": "t", "title": "T"}, "open-full")
    error = await s.agent.terminal("open-full")
    assert error["type"] == "lineup.v1.tool.error"
    assert error["payload"]["code"] == ErrorCode.LIFECYCLE_DENIED.value

    shell_side = await attach(nursery, s.runtime.supervisor, ActorKind.HOSTBRIDGE, "closer")
    await shell_side.request(
        "focus",
        UiIntentRequest(intent="close", instance_id="task-dashboard:fill-0"),
        expect=InstanceReply,
    )
    again = await router_side.request(
        "focus",
        LaunchRequest(app_scope="task-dashboard", call_id="one-more"),
        expect=InstanceReply,
    )
    assert again.instance_id == "task-dashboard:one-more"


async def test_a_call_the_router_died_routing_is_routed_by_the_next_router(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """The long drill left a launch call in `routing` for good: the router died between
    recording it and handing it to the app, and the replayed envelope found it recorded. The
    next router now resumes what it finds half-routed."""
    s = await scene(nursery, data_dir)
    store_side = await attach(nursery, s.runtime.supervisor, ActorKind.ROUTER, "watcher")
    s.runtime.supervisor.kill("focus", signal.SIGSTOP)  # the launch waits on focus
    try:
        await s.call("task-dashboard.open", {"task_id": "t1", "title": "T"}, "half-routed")
        # `starting` is sent once the call is `routing`, just before the launch (which waits).
        await s.agent.pull(
            "lineup.v1.tool.receipt",
            lambda m: m["payload"] == {"call_id": "half-routed", "status": "starting"},
        )
        row = await store_side.request(
            "store", ToolCallGetRequest(call_id="half-routed"), expect=ToolCallGetReply
        )
        assert row.call is not None
        assert row.call.state == "routing"
        router = s.runtime.supervisor.children["router"].pid
        assert router is not None
        s.runtime.supervisor.kill("router")
        await wait_pid_gone(router)
    finally:
        s.runtime.supervisor.kill("focus", signal.SIGCONT)
    progress = await s.agent.pull(
        "lineup.v1.tool.progress", lambda m: m["payload"]["call_id"] == "half-routed"
    )
    assert progress["payload"]["progress"] == {"opened": "t1"}
    with trio.fail_after(WAIT):
        await s.shell.wait_until(lambda sh: (foreground(sh) or "").startswith("task-dashboard:"))


async def test_the_recovery_app_cannot_be_closed_from_the_shell(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    shell_side = await attach(nursery, runtime.supervisor, ActorKind.HOSTBRIDGE, "probe-ui")
    with pytest.raises(LineUpError) as refused:
        await shell_side.request(
            "focus", UiIntentRequest(intent="close", instance_id="chat"), expect=InventoryReply
        )
    assert refused.value.code is ErrorCode.LIFECYCLE_DENIED


@pytest.mark.parametrize(
    ("mode", "codes"),
    [
        ("complete_twice", ["ok", "call_already_final"]),
        ("bad_output", ["tool_output_invalid", "ok"]),
    ],
)
async def test_a_miniapps_bad_writes_get_codes_and_the_agent_sees_one_good_result(
    nursery: trio.Nursery, data_dir: Path, mode: str, codes: list[str]
) -> None:
    s = await scene(nursery, data_dir, probe=True)
    shell, agent, revision = s.shell, s.agent, s.revision
    await agent.client.call_tool(CONVERSATION, "probe.run", {"mode": mode}, revision, call_id="p-1")
    result = await agent.terminal("p-1")
    assert result["payload"]["result"] == {"echoed": mode}
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: any(v.get("codes") == codes for v in s.views.values()))
    await agent.settle()
    assert [m["type"] for m in agent.of_call("p-1") if m["type"] != "lineup.v1.tool.receipt"] == [
        "lineup.v1.tool.result"
    ]


async def test_a_miniapp_cannot_complete_another_apps_call(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir, probe=True)
    shell, agent, revision = s.shell, s.agent, s.revision
    await s.open_dashboard("td-1", "t", "theirs")
    await agent.client.call_tool(
        CONVERSATION,
        "probe.run",
        {"mode": "steal", "other_call_id": "td-1"},
        revision,
        call_id="p-2",
    )
    await agent.terminal("p-2")
    with trio.fail_after(WAIT):
        await shell.wait_until(
            lambda s: any(v.get("codes") == ["app_scope_mismatch", "ok"] for v in s.views.values())
        )
    await agent.settle()
    assert [
        m
        for m in agent.of_call("td-1")
        if m["type"] != "lineup.v1.tool.receipt" and m["type"] != "lineup.v1.tool.progress"
    ] == []  # td-1 is still open
    [denied] = await s.scope_denials(1)
    assert (denied.event, denied.actor, denied.code) == (
        "router.scope_denied",
        "router",
        ErrorCode.APP_SCOPE_MISMATCH.value,
    )
    assert (denied.message_type, denied.subject_id) == ("router.sdk.tool.complete", "td-1")
    await s.chat_still_answers("still here after the steal")


async def test_only_the_chat_speaks_as_the_user_another_app_is_refused_and_keeps_running(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """Seed 003 §5.1: `conversation.send_text` belongs to the chat. Another app's is refused
    `permission_denied` by the bus (one ACL row), audited, never reaches the Agent, and costs
    the app nothing else: it completes its call and is not stopped."""
    s = await scene(nursery, data_dir, probe=True)
    await s.call("probe.run", {"mode": "speak"}, "p-speak")
    result = await s.agent.terminal("p-speak")
    assert result["payload"]["result"] == {"echoed": "speak"}
    with trio.fail_after(WAIT):
        await s.shell.wait_until(
            lambda sh: any(v.get("codes") == ["permission_denied", "ok"] for v in sh.views.values())
        )
    auditor = await attach_once(s)
    rows = await audit_rows(
        auditor, bool, event_prefix="bus.permission_denied", peer="miniapp:probe"
    )
    assert [(r.actor, r.code, r.message_type) for r in rows] == [
        ("router", "permission_denied", "router.sdk.conversation.send_text")
    ]
    await s.chat_still_answers("the user's own words only")
    await s.agent.settle()
    assert not [m for m in s.agent.seen if "I am the user" in str(m.get("payload"))]
    await s.call("probe.echo", {"mode": "ok"}, "p-after")  # the same process, still running
    assert (await s.agent.terminal("p-after"))["payload"]["result"] == {"echoed": "ok"}


async def test_a_view_nested_too_deep_is_refused_with_a_code_and_focus_keeps_serving(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """Issue 11, finding 6: a deep view made focus fail until the tree gave up. Now it is
    refused (`invalid_arguments`, audited with the bound it broke) and nothing restarts."""
    s = await scene(nursery, data_dir, probe=True)
    await s.call("probe.run", {"mode": "deep_view"}, "p-deep")
    assert (await s.agent.terminal("p-deep"))["payload"]["result"] == {"echoed": "deep_view"}
    with trio.fail_after(WAIT):
        await s.shell.wait_until(
            lambda sh: any(v.get("codes") == ["invalid_arguments", "ok"] for v in sh.views.values())
        )
    auditor = await attach_once(s)
    [refused] = await audit_rows(auditor, bool, event_prefix="focus.view_refused")
    assert (refused.peer, refused.code) == ("miniapp:probe", "envelope_too_deep")
    await s.chat_still_answers("views have bounds")
    assert all(c.restarts == 0 for c in s.runtime.supervisor.status().children)


async def test_a_miniapp_naming_another_apps_instance_is_refused_audited_and_changes_nothing(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir, probe=True)
    await s.call("probe.run", {"mode": "forge_instance", "other_id": "chat"}, "p-forge")
    await s.agent.terminal("p-forge")
    # Its own view, then a lifecycle request to close the chat: both refused, its call fine.
    mismatch = ErrorCode.APP_SCOPE_MISMATCH.value
    with trio.fail_after(WAIT):
        await s.shell.wait_until(
            lambda sh: any(v.get("codes") == [mismatch, mismatch, "ok"] for v in sh.views.values())
        )
    denials = await s.scope_denials(2)
    assert {(r.event, r.code, r.subject_id) for r in denials} == {
        ("focus.scope_denied", mismatch, "chat")
    }
    assert {r.message_type for r in denials} == {"focus.sdk.view.update", "focus.sdk.lifecycle"}
    assert s.shell.views["chat"].get("kind") != "forged"  # the chat's view is the chat's
    assert foreground(s.shell) != "probe"
    await s.chat_still_answers("the chat is still open")
    # The sandboxed apps (chat, probe) did all that without one system call seccomp denies.
    denied = await audit_rows(await attach_once(s), lambda rows: True, event_prefix="sandbox.")
    assert denied == ()


async def test_an_instance_focus_does_not_know_is_not_found_and_no_forgery_is_recorded(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """A restarted focus knows only live instances: an app rendering its own instance that
    ended before got `app_scope_mismatch` and a forgery audit row (seen in the drill). An
    unknown instance is `app_instance_not_found`, and nobody is accused."""
    s = await scene(nursery, data_dir, probe=True)
    await s.call("probe.run", {"mode": "forge_instance", "other_id": "probe:gone"}, "p-gone")
    await s.agent.terminal("p-gone")
    missing = ErrorCode.APP_INSTANCE_NOT_FOUND.value
    with trio.fail_after(WAIT):
        await s.shell.wait_until(
            lambda sh: any(v.get("codes") == [missing, missing, "ok"] for v in sh.views.values())
        )
    rows = await audit_rows(await attach_once(s), lambda rows: True, event_prefix="focus.")
    assert [r for r in rows if r.event == "focus.scope_denied"] == []


async def test_a_miniapp_acknowledging_another_apps_delivery_changes_nothing_and_is_audited(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir, probe=True)
    sent = await s.agent.client.say(CONVERSATION, "for the chat only")
    delivery_id = sent["message_id"]  # the chat's inbox delivery is named after the envelope
    await s.call("probe.run", {"mode": "ack_other", "other_id": delivery_id}, "p-ack")
    await s.agent.terminal("p-ack")
    # The app is told only that nothing changed: no oracle for what other apps receive.
    with trio.fail_after(WAIT):
        await s.shell.wait_until(
            lambda sh: any(v.get("codes") == ["unchanged", "ok"] for v in sh.views.values())
        )
    [denied] = await s.scope_denials(1)
    assert (denied.event, denied.code, denied.message_type, denied.subject_id) == (
        "router.scope_denied",
        ErrorCode.APP_SCOPE_MISMATCH.value,
        "router.sdk.inbox.ack",
        delivery_id,
    )
    await s.chat_still_answers("the chat still gets its messages")
    # And the chat was shown its own message, whatever the probe tried.
    texts = [tree_text(i["tree"]) for i in s.shell.timeline() if i["author"] == "agent"]
    assert "for the chat only" in texts


async def test_a_delivery_for_one_instance_is_not_listed_or_acknowledged_by_another(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """Seed 003 §3.1: an app lists and acknowledges only `app_scope + conversation_id +
    instance_id`; what the Agent addressed to no instance is the app's conversation-level inbox."""
    s = await scene(nursery, data_dir, probe=True)
    await s.call("probe.run", {"mode": "ok"}, "p-a")  # instance probe:p-a
    await s.agent.terminal("p-a")

    def text(message_id: str, instance_id: str | None) -> dict[str, Any]:
        return {
            "v": 1, "id": message_id, "type": "lineup.v1.text", "conversation_id": CONVERSATION,
            "app_scope": "probe", "instance_id": instance_id,
            "sender": {"kind": "agent", "id": AGENT_ID}, "payload": {"markdown": message_id},
        }  # fmt: skip

    for message_id, instance_id in (("for-a", "probe:p-a"), ("for-b", "probe:p-b"),
                                    ("for-app", None)):  # fmt: skip
        await s.agent.client.send(text(message_id, instance_id), idempotency_key=message_id)
    # The transport admits a conversation in order: once the chat shows this, the three are in.
    await s.chat_still_answers("after the probe's three")

    await s.call("probe.run", {"mode": "inbox", "other_id": "probe:p-a"}, "p-b")
    with trio.fail_after(WAIT):
        await s.shell.wait_until(lambda sh: "inbox" in sh.views.get("probe:p-b", {}))
    seen = s.shell.views["probe:p-b"]["inbox"]
    assert seen["before"] == {"own": ["for-b"], "other": ["for-a"], "app": ["for-app"]}
    assert seen["acks"] == {"for-a": False, "for-app": False, "for-b": True}
    assert seen["after"] == {"own": [], "other": ["for-a"], "app": ["for-app"]}
    denials = await s.scope_denials(2)
    assert sorted((r.message_type, r.subject_id) for r in denials) == [
        ("router.sdk.inbox.ack", "for-a"),
        ("router.sdk.inbox.ack", "for-app"),
    ]


async def test_a_call_past_its_timeout_expires_once_and_its_handler_is_stopped(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir, probe=True)
    shell, agent, revision = s.shell, s.agent, s.revision
    await agent.client.call_tool(
        CONVERSATION, "probe.run", {"mode": "hang"}, revision, call_id="p-slow"
    )
    error = await agent.terminal("p-slow")
    assert error["payload"]["code"] == ErrorCode.OPERATION_EXPIRED.value
    with trio.fail_after(WAIT):
        await shell.wait_until(
            lambda s: any(
                v.get("cancelled") == "expired" and v.get("handler_stopped")
                for v in s.views.values()
            )
        )
    await agent.settle()
    assert len([m for m in agent.of_call("p-slow") if m["type"] == "lineup.v1.tool.error"]) == 1


@pytest.mark.parametrize("victim", ["miniapp:task-dashboard", "router", "focus", "store"])
async def test_a_sigkill_in_the_middle_of_a_call_still_ends_it_exactly_once(
    nursery: trio.Nursery, data_dir: Path, victim: str
) -> None:
    s = await scene(nursery, data_dir)
    runtime, shell, agent = s.runtime, s.shell, s.agent
    await s.open_dashboard("k-1", "t1", "Survive")
    await kill_and_wait_restarted(runtime, victim, wait=WAIT)
    # The dashboard is shown again (re-delivered to a restarted app, or re-sent after a
    # restart of the runtime side), and the user closes it.
    with trio.fail_after(WAIT):
        shell.views.clear()
        await shell.send({"type": "shell.ready"})
        await shell.wait_until(
            lambda s: any(v.get("kind") == "task.dashboard" for v in s.views.values())
        )
    instance = next(k for k, v in shell.views.items() if v.get("kind") == "task.dashboard")
    final = None
    with trio.fail_after(WAIT):
        while final is None:
            # Finished first: a task not done asks the user to confirm its close.
            for kind in ("task.finish", "task.close"):
                await shell.send(
                    {
                        "type": "ui.event",
                        "app_scope": "task-dashboard",
                        "instance_id": instance,
                        "event": {"kind": kind},
                    }
                )
            with trio.move_on_after(2):
                final = await agent.terminal("k-1")
    assert final["payload"]["result"] == {"status": "completed"}
    await agent.settle()
    finals = [
        m
        for m in agent.of_call("k-1")
        if m["type"] in ("lineup.v1.tool.result", "lineup.v1.tool.error")
    ]
    assert len(finals) == 1


async def test_session_data_starts_with_the_snapshot_and_refuses_a_stale_write(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir, probe=True)
    shell, agent, revision = s.shell, s.agent, s.revision
    await agent.client.call_tool(
        CONVERSATION, "probe.run", {"mode": "session"}, revision, call_id="s-1"
    )
    await agent.terminal("s-1")
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: any("session" in v for v in s.views.values()))
    session = next(v["session"] for v in shell.views.values() if "session" in v)
    assert session == {
        "first_frame": [None, 0],
        "written": 1,
        "stale": "stale_revision",
        "current": [{"n": 1}, 1],
    }


async def test_the_dashboards_task_is_restored_from_session_data_after_a_sigkill(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    runtime, shell, agent, revision = s.runtime, s.shell, s.agent, s.revision
    await s.open_dashboard("o-9", "t9", "Keep me")
    await agent.client.call_tool(
        CONVERSATION,
        "task-dashboard.update",
        {"task_id": "t9", "progress": 70},
        revision,
        call_id="u-9",
    )
    await agent.terminal("u-9")
    pid = runtime.supervisor.children["miniapp:task-dashboard"].pid
    assert pid is not None
    runtime.supervisor.kill("miniapp:task-dashboard")
    await wait_pid_gone(pid)
    shell.views.clear()
    with trio.fail_after(WAIT):
        await runtime.supervisor.wait_until(
            lambda: runtime.supervisor.children["miniapp:task-dashboard"].state == "running"
        )
        await shell.wait_until(
            lambda s: any(v.get("task", {}).get("progress") == 70 for v in s.views.values())
        )


async def test_a_miniapp_can_cancel_its_own_call_and_the_agent_sees_that_once(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir, probe=True)
    await s.agent.client.call_tool(
        CONVERSATION, "probe.run", {"mode": "cancel"}, s.revision, call_id="p-c"
    )
    error = await s.agent.terminal("p-c")
    assert (error["type"], error["payload"]["code"]) == ("lineup.v1.tool.error", "gave_up")
    await s.agent.settle()
    finals = [
        m
        for m in s.agent.of_call("p-c")
        if m["type"] in ("lineup.v1.tool.result", "lineup.v1.tool.error")
    ]
    assert len(finals) == 1


async def test_a_miniapp_breaking_its_acl_is_stopped_its_instance_fails_and_chat_comes_back(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir, probe=True)
    await s.agent.client.call_tool(
        CONVERSATION, "probe.run", {"mode": "misbehave"}, s.revision, call_id="p-bad"
    )
    error = await s.agent.terminal("p-bad")
    assert (error["type"], error["payload"]["code"]) == ("lineup.v1.tool.error", "app_closed")
    child = s.runtime.supervisor.children["miniapp:probe"]
    with trio.fail_after(WAIT):
        await s.runtime.supervisor.wait_until(lambda: child.state == "failed")
        await s.shell.wait_until(
            lambda sh: (
                foreground(sh) == "chat"
                and all(
                    i["app_scope"] != "probe"
                    for i in [f for f in sh.frames if f.get("type") == "shell.apps"][-1][
                        "instances"
                    ]
                )
            )
        )
    assert child.restarts == 0  # stopped for good, not restarted
    probe = await attach(nursery, s.runtime.supervisor, ActorKind.ROUTER, "auditor")
    from lineup.actors.store.messages import AuditQueryReply, AuditQueryRequest

    reply = await probe.request("store", AuditQueryRequest(limit=200), expect=AuditQueryReply)
    events = {(r.event, r.peer, r.code) for r in reply.records}
    assert ("bus.acl_denied", "miniapp:probe", "acl_denied") in events
    assert ("supervisor.peer_misbehaved", "miniapp:probe", "acl_denied") in events


async def test_a_miniapp_may_ask_to_open_another_app_and_the_runtime_decides(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir, probe=True)
    await s.agent.client.call_tool(
        CONVERSATION, "probe.run", {"mode": "navigate"}, s.revision, call_id="p-nav"
    )
    await s.agent.terminal("p-nav")
    with trio.fail_after(WAIT):
        await s.shell.wait_until(lambda sh: any("navigate" in v for v in sh.views.values()))
    opened, same, unknown = next(v["navigate"] for v in s.shell.views.values() if "navigate" in v)
    assert opened.startswith("task-dashboard:")
    assert same is True  # a retry of the same request opens nothing new
    assert unknown == "app_not_installed"
    with trio.fail_after(WAIT):
        await s.shell.wait_until(lambda sh: foreground(sh) == opened)
    # The records of seed 000 §6 (issue 29, item 6): the instance the app opened names the
    # probe's instance as its parent; the probe's, launched by the Agent's call, its
    # conversation; the chat alone has a mode.
    from lineup.actors.store.messages import InstanceListReply, InstanceListRequest

    reader = await attach(nursery, s.runtime.supervisor, ActorKind.ROUTER, "records")
    listed = await reader.request("store", InstanceListRequest(), expect=InstanceListReply)
    rows = {row.instance_id: row for row in listed.instances}
    (probe,) = [i for i, row in rows.items() if row.app_scope == "probe"]
    assert (rows[opened].parent_instance_id, rows[opened].mode) == (probe, None)
    assert (rows[probe].conversation_id, rows[probe].parent_instance_id) == (CONVERSATION, None)
    assert rows["chat"].mode == "im"


DEV_APP = """
from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppInfo, MiniApp, ToolCall, tool


class GreetInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(max_length=50)


class GreetOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    greeting: str = Field(max_length=100)


class Hello(MiniApp):
    app_info = AppInfo(app_scope="hello", version="0.0.1", kind="installed")

    @tool("hello.greet", handling="launch", input=GreetInput, output=GreetOutput)
    async def greet(self, call: ToolCall[GreetInput]) -> GreetOutput:
        return GreetOutput(greeting=f"hello {call.input.name}")
"""


async def test_a_dev_app_from_a_folder_runs_sandboxed_and_is_marked_as_dev(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    from lineup.sdk.cli import main as app_cli

    folder = data_dir / "apps" / "hello_dev"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(DEV_APP)
    assert app_cli(["manifest", str(folder), "--out", str(folder / "manifest.json")]) == 0
    runtime = await start_runtime(nursery, data_dir / "rt", demo_agent=False, dev_apps=(folder,))
    assert runtime.supervisor.info["dev_apps"] == "hello"
    shell, agent, revision = await shell_and_agent(nursery, runtime)
    await agent.client.call_tool(
        CONVERSATION, "hello.greet", {"name": "dev"}, revision, call_id="h-1"
    )
    result = await agent.terminal("h-1")
    assert result["payload"]["result"] == {"greeting": "hello dev"}
    with trio.fail_after(WAIT):
        await shell.wait_until(
            lambda sh: any(
                i["title"] == "hello (dev)"
                for f in sh.frames
                if f.get("type") == "shell.apps"
                for i in f["instances"]
            )
        )
    pid = runtime.supervisor.children["miniapp:hello"].pid
    status = Path(f"/proc/{pid}/status").read_text()
    assert "\nSeccomp:\t2\n" in status  # the dev app's code ran inside the sandbox
    assert "\nNoNewPrivs:\t1\n" in status
