"""A MiniApp's own standard interactions (`sdk.ui.request`) and its context, through the
testkit's fake runtime: what an app author's tests see."""

from __future__ import annotations

import pytest
import trio

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.sdk import AppContext, MiniApp, testkit
from lineup.sdk import protocol as p
from lineup.sdk.interactions import ConfirmRequest

CONFIRM = ConfirmRequest(kind="confirm", title="Sure?", prompt="Go on?")


class Recorder(MiniApp):
    async def start(self, app: AppContext) -> None:
        self.app = app
        self.told: list[p.InteractionRecord] = []

    async def on_interaction_updated(self, record: p.InteractionRecord) -> None:
        self.told.append(record)


async def test_a_question_is_owned_by_the_instance_and_its_answer_told_to_the_app() -> None:
    app = Recorder()
    runtime = await testkit.start(app, app_scope="recorder")
    asked = await app.app.ui.request(CONFIRM, request_id="q1")
    assert (asked.kind, asked.state, asked.instance_id) == (
        "confirm",
        "presented",
        testkit.DEFAULT_INSTANCE,
    )
    again = await app.app.ui.request(CONFIRM, request_id="q1")  # a retry asks nothing new
    assert again.interaction_id == asked.interaction_id
    assert runtime.interactions.asked == [asked.interaction_id]

    with pytest.raises(LineUpError) as invalid:
        runtime.interactions.answer(asked.interaction_id, {"approved": "yes"})
    assert invalid.value.code is ErrorCode.ANSWER_INVALID
    runtime.interactions.answer(asked.interaction_id, {"approved": True})
    runtime.interactions.answer(asked.interaction_id, {"approved": False})  # the first wins
    await runtime.settle()
    assert [(r.state, r.result) for r in app.told] == [("submitted", {"approved": True})]
    waited = await app.app.ui.wait(asked.interaction_id, timeout=1)
    assert waited.result == {"approved": True}


async def test_wait_returns_once_the_answer_is_told_even_from_inside_a_hook() -> None:
    app = Recorder()
    runtime = await testkit.start(app, app_scope="recorder")
    asked = await app.app.ui.request(CONFIRM)
    got: list[p.InteractionRecord] = []

    async def waiter() -> None:
        got.append(await app.app.ui.wait(asked.interaction_id, timeout=5))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()
        assert got == []  # no answer yet: it waits
        runtime.interactions.end(asked.interaction_id, "expired", "operation_expired")
        await runtime.settle()
    assert [(r.state, r.terminal_code) for r in got] == [("expired", "operation_expired")]


async def test_a_bad_request_an_unknown_instance_and_a_decided_parent_are_refused() -> None:
    app = Recorder()
    runtime = await testkit.start(app, app_scope="recorder")
    with pytest.raises(LineUpError) as bad:
        await app.app.ui.request({"kind": "input", "title": "t", "prompt": "p", "fields": []})
    assert bad.value.code is ErrorCode.TOOL_INPUT_INVALID
    with pytest.raises(LineUpError) as short:
        await app.app.ui.request(CONFIRM, expires_in_ms=59_999)
    assert short.value.code is ErrorCode.TOOL_INPUT_INVALID
    with pytest.raises(LineUpError) as elsewhere:
        await app.app.ui.request(CONFIRM, instance_id="not-mine")
    assert elsewhere.value.code is ErrorCode.APP_INSTANCE_NOT_FOUND
    with pytest.raises(LineUpError) as unknown:
        await app.app.ui.get("nobody")
    assert unknown.value.code is ErrorCode.INTERACTION_NOT_FOUND
    assert runtime.interactions.asked == []


async def test_the_context_is_the_runtimes_and_the_chat_is_in_im_mode() -> None:
    app = Recorder()
    await testkit.start(app, app_scope="recorder")
    context = app.app
    assert (context.app_scope, context.instance_id, context.mode) == (
        "recorder",
        testkit.DEFAULT_INSTANCE,
        "app",
    )
    reply = await context.refresh()
    assert (context.conversation_id, context.instance_state) == (reply.conversation_id, reply.state)
    assert context.conversation_id is not None
    chat = Recorder()
    await testkit.start(chat, app_scope="chat")
    assert chat.app.mode == "im"
