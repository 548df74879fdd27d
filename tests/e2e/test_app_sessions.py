"""App sub-sessions through the real runtime (seed 000 §7.3, §11): opened when an instance
starts, kept while it is behind, closed only when it ends or fails (after its calls' errors,
listing the Agent's questions still pending, which stay open), a new one for a new instance;
and `app_session_context` accepted only for a real sub-session of this Agent and
conversation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.actors.focus.messages import InstanceReply, UiIntentRequest
from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.router.messages import AppSessionContinueReply, AppSessionContinueRequest
from lineup.actors.store._db import DB_FILENAME
from lineup.tests.actors.store._harness import independent_rows
from lineup.tests.support.interactions import CONFIRM, POLL, WAIT, Scene, scene, scene_on
from lineup.tests.support.probe_app import Probe
from lineup.tests.support.runtime import AGENT_ID, CONVERSATION, start_runtime_with_app

OPENED = "lineup.v1.app_session.opened"
CLOSED = "lineup.v1.app_session.closed"


async def open_dashboard(s: Scene, call_id: str) -> dict[str, Any]:
    """`task-dashboard.open`; returns the `app_session.opened` of the instance it started, once
    the dashboard shows the task (it reported its progress)."""
    await s.agent.client.call_tool(
        CONVERSATION,
        "task-dashboard.open",
        {"task_id": call_id, "title": f"Task {call_id}"},
        s.revision,
        call_id=call_id,
    )
    instance = f"task-dashboard:{call_id}"
    await s.agent.pull("lineup.v1.tool.progress", lambda m: m["payload"]["call_id"] == call_id)
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
    # Its open call converged first (seed 000 §7.3): the Agent heard that before the close.
    error = await s.agent.terminal("open-1")
    assert (error["type"], error["payload"]["code"]) == ("lineup.v1.tool.error", "app_closed")
    assert s.agent.seen.index(error) < s.agent.seen.index(closed)
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


async def test_continue_starts_a_new_instance_whose_sub_session_references_the_ended_one(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    opened = await open_dashboard(s, "open-1")
    old = opened["payload"]["app_session_id"]
    instance = opened["payload"]["instance_id"]

    # An open sub-session cannot be "continued": it is still going on.
    with pytest.raises(LineUpError) as still_open:
        await s.ui.request(
            "router", AppSessionContinueRequest(app_session_id=old), expect=AppSessionContinueReply
        )
    assert still_open.value.code is ErrorCode.APP_SESSION_INVALID

    await s.ui.request(
        "focus", UiIntentRequest(intent="close", instance_id=instance), expect=InstanceReply
    )
    await until_session(s, old, "closed")

    # "Continue", twice (a double click): one new instance, one new sub-session naming the old.
    first, second = [
        await s.ui.request(
            "router", AppSessionContinueRequest(app_session_id=old), expect=AppSessionContinueReply
        )
        for _ in range(2)
    ]
    new = first.session
    assert second.session.app_session_id == new.app_session_id
    assert (new.state, new.app_scope, new.previous_app_session_id) == (
        "open",
        "task-dashboard",
        old,
    )
    assert new.instance_id != instance
    told = await s.agent.pull(
        OPENED, lambda m: m["payload"]["app_session_id"] == new.app_session_id
    )
    assert told["payload"]["previous_app_session_id"] == old
    assert await session_state(s, old) == "closed"  # the old one is not revived

    with pytest.raises(LineUpError) as unknown:
        await s.ui.request(
            "router",
            AppSessionContinueRequest(app_session_id="lu:app_session:nope"),
            expect=AppSessionContinueReply,
        )
    assert unknown.value.code is ErrorCode.APP_SESSION_INVALID


async def test_an_instance_that_fails_leaves_the_stack_and_closes_its_sub_session(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime_with_app(nursery, data_dir, Probe, title="Probe")
    s = await scene_on(nursery, runtime)
    await s.agent.client.call_tool(
        CONVERSATION, "probe.run", {"mode": "ok"}, s.revision, call_id="p-ok"
    )
    assert (await s.agent.terminal("p-ok"))["type"] == "lineup.v1.tool.result"
    opened = await s.agent.pull(OPENED, lambda m: m["payload"]["instance_id"] == "probe:p-ok")
    first = opened["payload"]["app_session_id"]
    asked = await s.ask("interaction.confirm", in_session(first), "c-sub")
    assert asked.app_session_id == first

    # Another launch of the same app breaks its ACL: the app is stopped for good, and each of
    # its instances fails — the one with the running call and the one with the question.
    await s.agent.client.call_tool(
        CONVERSATION, "probe.run", {"mode": "misbehave"}, s.revision, call_id="p-bad"
    )
    error = await s.agent.terminal("p-bad")
    assert (error["type"], error["payload"]["code"]) == ("lineup.v1.tool.error", "app_closed")

    def about(instance: str) -> Callable[[dict[str, Any]], bool]:
        return lambda m: m["payload"]["instance_id"] == instance

    closed = {
        instance: await s.agent.pull(CLOSED, about(instance))
        for instance in ("probe:p-ok", "probe:p-bad")
    }
    assert closed["probe:p-ok"]["payload"]["pending_interaction_call_ids"] == ["c-sub"]
    assert closed["probe:p-bad"]["payload"]["pending_interaction_call_ids"] == []
    assert s.agent.seen.index(error) < s.agent.seen.index(closed["probe:p-bad"])
    await until_session(s, first, "closed")

    db = s.runtime.supervisor.data_dir / DB_FILENAME
    states = independent_rows(
        db, "SELECT instance_id, state FROM instances WHERE app_scope = 'probe' ORDER BY 1"
    )
    assert states == [("probe:p-bad", "failed"), ("probe:p-ok", "failed")]
    stack = {row[0] for row in independent_rows(db, "SELECT instance_id FROM focus_stack")}
    assert not {"probe:p-ok", "probe:p-bad"} & stack
    still = await s.interaction("c-sub")
    assert still.state == "presented"  # the main IM keeps it
    await s.agent.settle()
    assert len([m for m in s.agent.seen if m["type"] == CLOSED]) == 2  # each told once
