"""App sub-sessions through the real runtime (seed 000 §7.3, §11): opened when an instance
starts, kept while it is behind, closed only when it ends (listing the Agent's questions still
pending, which stay open), a new one for a new instance; and `app_session_context` accepted
only for a real sub-session of this Agent and conversation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from lineup.actors.focus.messages import InstanceReply, UiIntentRequest
from lineup.actors.kernel import ErrorCode
from lineup.tests.e2e.test_interactions import CONFIRM, POLL, WAIT, Scene, scene
from lineup.tests.support.runtime import AGENT_ID, CONVERSATION

OPENED = "lineup.v1.app_session.opened"
CLOSED = "lineup.v1.app_session.closed"


async def open_dashboard(s: Scene, call_id: str) -> dict[str, Any]:
    """`task-dashboard.open`; returns the `app_session.opened` of the instance it started."""
    await s.agent.client.call_tool(
        CONVERSATION,
        "task-dashboard.open",
        {"task_id": call_id, "title": f"Task {call_id}"},
        s.revision,
        call_id=call_id,
    )
    instance = f"task-dashboard:{call_id}"
    return await s.agent.pull(OPENED, lambda m: m["payload"]["instance_id"] == instance)


async def session_state(s: Scene, app_session_id: str) -> str | None:
    sessions = (await s.listed()).sessions
    return next((x.state for x in sessions if x.app_session_id == app_session_id), None)


async def until_session(s: Scene, app_session_id: str, state: str) -> None:
    with trio.fail_after(WAIT):
        while True:
            if await session_state(s, app_session_id) == state:
                return
            await trio.sleep(POLL)


def in_session(app_session_id: str, **more: Any) -> dict[str, Any]:
    return {**CONFIRM, **more, "app_session_context": {"app_session_id": app_session_id}}


async def test_a_sub_session_lives_from_the_start_to_the_close_of_its_instance(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    opened = await open_dashboard(s, "open-1")
    instance = "task-dashboard:open-1"
    session_id = opened["payload"]["app_session_id"]
    assert opened["payload"] == {
        "agent_id": AGENT_ID,
        "conversation_id": CONVERSATION,
        "app_session_id": f"lu:app_session:{instance}",
        "app_scope": "task-dashboard",
        "instance_id": instance,
    }
    await until_session(s, session_id, "open")

    asked = await s.ask("interaction.confirm", in_session(session_id), "c-sub")
    assert (asked.app_session_id, asked.instance_id) == (session_id, instance)

    # Behind the chat, and with a tool of it finished, the sub-session stays open.
    await s.ui.request(
        "focus", UiIntentRequest(intent="focus", instance_id="chat"), expect=InstanceReply
    )
    await s.agent.client.call_tool(
        CONVERSATION,
        "task-dashboard.update",
        {"task_id": "open-1", "progress": 60},
        s.revision,
        call_id="upd-1",
    )
    assert (await s.agent.terminal("upd-1"))["type"] == "lineup.v1.tool.result"
    assert await session_state(s, session_id) == "open"

    # Closing the instance closes it, naming the question still pending, which stays open.
    await s.ui.request(
        "focus", UiIntentRequest(intent="close", instance_id=instance), expect=InstanceReply
    )
    closed = await s.agent.pull(CLOSED, lambda m: m["payload"]["app_session_id"] == session_id)
    assert closed["payload"]["pending_interaction_call_ids"] == ["c-sub"]
    assert closed["payload"]["instance_id"] == instance
    await until_session(s, session_id, "closed")
    still = await s.interaction("c-sub")
    assert still.state == "presented"  # not cancelled: the main IM keeps it
    answered = await s.answer(asked.interaction_id, {"approved": True})
    assert answered.changed
    assert (await s.agent.terminal("c-sub"))["payload"]["result"] == {"approved": True}

    # A closed sub-session may be named as history: it revives nothing.
    history = await s.ask("interaction.confirm", in_session(session_id), "c-history")
    assert history.app_session_id == session_id
    assert await session_state(s, session_id) == "closed"

    # A new instance is a new sub-session.
    again = await open_dashboard(s, "open-2")
    assert again["payload"]["app_session_id"] == "lu:app_session:task-dashboard:open-2"
    await s.agent.settle()
    for kind in (OPENED, CLOSED):
        of_first = [
            m
            for m in s.agent.seen
            if m["type"] == kind and m["payload"]["app_session_id"] == session_id
        ]
        assert len(of_first) == 1, kind  # each told once


async def test_an_app_session_context_that_is_not_this_agents_sub_session_is_refused(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    await open_dashboard(s, "open-1")
    refused = {
        "c-none": in_session("lu:app_session:task-dashboard:nope"),
        "c-forged": in_session("lu:app_session:chat"),
    }
    malformed = {"c-bad": {**CONFIRM, "app_session_context": {"app_session_id": 7}}}
    for call_id, arguments in {**refused, **malformed}.items():
        await s.agent.client.call_tool(
            CONVERSATION, "interaction.confirm", arguments, s.revision, call_id=call_id
        )
    for call_id in refused:
        error = await s.agent.terminal(call_id)
        assert error["payload"]["code"] == ErrorCode.APP_SESSION_INVALID.value, call_id
    error = await s.agent.terminal("c-bad")
    assert error["payload"]["code"] == ErrorCode.TOOL_INPUT_INVALID.value
    listed = {v.call_id for v in (await s.listed()).interactions}
    assert not listed & {*refused, *malformed}  # no interaction was created

    # Without a context, the question is the main IM's, whatever app is in front.
    main = await s.ask("interaction.confirm", CONFIRM, "c-main")
    assert (main.app_session_id, main.instance_id) == (None, None)
