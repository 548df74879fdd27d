"""The testkit: an author tests a MiniApp's tools and hooks against the in-memory runtime."""

from __future__ import annotations

import pytest

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.miniapps.chat import Chat
from lineup.sdk import protocol as p
from lineup.sdk import testkit
from lineup.sdk.testkit import FakeRuntime

from ._dashboard import Dashboard


def close(task_id: str) -> p.UiEvent:
    return p.UiEvent(
        instance_id=testkit.DEFAULT_INSTANCE, event={"kind": "task.close", "task_id": task_id}
    )


async def test_start_gives_the_app_a_context_on_the_fake_runtime() -> None:
    app = Dashboard()
    runtime = await testkit.start(app)
    assert (app.app.app_scope, app.app.instance_id) == ("task-dashboard", testkit.DEFAULT_INSTANCE)
    assert runtime.ui.last == {"kind": "task-dashboard", "tasks": []}


async def test_a_launch_tool_stays_running_until_the_user_closes_the_task() -> None:
    app = Dashboard()
    runtime = await testkit.start(app)
    record = await testkit.call_tool(
        app, "task-dashboard.open", {"task_id": "t1", "title": "Write"}
    )
    assert record.status == "running"
    assert record.progress == [{"stage": "shown"}]
    assert runtime.ui.last is not None
    assert runtime.ui.last["tasks"][0]["title"] == "Write"

    await app.on_ui_event(close("t1"))
    assert record.status == "completed"
    assert record.result == {"status": "cancelled"}
    assert runtime.calls[record.call_id] is record


async def test_an_operation_tool_answers_with_its_output() -> None:
    app = Dashboard()
    await testkit.start(app)
    await testkit.call_tool(app, "task-dashboard.open", {"task_id": "t1", "title": "Write"})
    record = await testkit.call_tool(
        app, "task-dashboard.update", {"task_id": "t1", "progress": 100, "status": "done"}
    )
    assert record.result == {"task_id": "t1", "title": "Write", "progress": 100, "status": "done"}


async def test_a_tool_the_app_fails_records_its_code() -> None:
    app = Dashboard()
    await testkit.start(app)
    record = await testkit.call_tool(
        app, "task-dashboard.update", {"task_id": "missing"}, call_id="c9"
    )
    assert (record.call_id, record.status, record.error_code) == ("c9", "failed", "task_not_found")


async def test_an_input_the_runtime_would_refuse_is_refused_here_too() -> None:
    app = Dashboard()
    await testkit.start(app)
    record = await testkit.call_tool(app, "task-dashboard.open", {"task_id": "", "title": "x"})
    assert record.error_code == "tool_input_invalid"


async def test_a_tool_can_be_called_without_starting_the_app_first() -> None:
    record = await testkit.call_tool(Dashboard(), "task-dashboard.update", {"task_id": "t1"})
    assert record.error_code == "task_not_found"


async def test_calling_an_undeclared_tool_is_refused() -> None:
    with pytest.raises(LineUpError) as refused:
        await testkit.call_tool(Dashboard(), "task-dashboard.delete", {})
    assert refused.value.code is ErrorCode.TOOL_NOT_ADVERTISED


async def test_a_call_id_is_used_once() -> None:
    app = Dashboard()
    await testkit.call_tool(app, "task-dashboard.update", {"task_id": "t1"}, call_id="c1")
    with pytest.raises(LineUpError) as refused:
        await testkit.call_tool(app, "task-dashboard.update", {"task_id": "t1"}, call_id="c1")
    assert refused.value.code is ErrorCode.INVALID_ARGUMENTS


# ------------------------------------------------------------------------------ the fake itself


async def test_the_fake_refuses_a_second_terminal_result() -> None:
    runtime = FakeRuntime()
    await runtime.complete("c1", {})
    for attempt in (
        runtime.complete("c1", {}),
        runtime.fail("c1", "x"),
        runtime.progress("c1", {}),
    ):
        with pytest.raises(LineUpError) as refused:
            await attempt
        assert refused.value.code is ErrorCode.CALL_ALREADY_FINAL
    assert runtime.calls["c1"].result == {}


async def test_the_fake_checks_a_result_against_the_tools_output_schema() -> None:
    app = Dashboard()
    runtime = await testkit.start(app)
    record = await testkit.call_tool(app, "task-dashboard.open", {"task_id": "t1", "title": "x"})
    with pytest.raises(LineUpError) as refused:
        await runtime.complete(record.call_id, {"status": "sideways"})
    assert refused.value.code is ErrorCode.TOOL_OUTPUT_INVALID
    assert record.status == "running"


async def test_the_fake_refuses_a_view_for_another_instance_or_too_wide() -> None:
    ui = FakeRuntime().context().ui
    with pytest.raises(LineUpError) as refused:
        await ui.render("someone-else", {})
    assert refused.value.code is ErrorCode.APP_INSTANCE_NOT_FOUND
    with pytest.raises(LineUpError) as refused:
        await ui.render(testkit.DEFAULT_INSTANCE, {str(i): i for i in range(65)})
    assert refused.value.code is ErrorCode.INVALID_ARGUMENTS


async def test_an_injected_refusal_fails_the_next_request_of_its_type_only() -> None:
    runtime = FakeRuntime()
    runtime.refuse(p.ConversationSendTextRequest, ErrorCode.STORE_UNAVAILABLE)
    conversation = runtime.context().conversation
    with pytest.raises(LineUpError) as refused:
        await conversation.send_text("m1", "hello")
    assert refused.value.code is ErrorCode.STORE_UNAVAILABLE
    receipt = await conversation.send_text("m1", "hello")
    assert (receipt.id, receipt.changed) == ("m1", True)
    again = await conversation.send_text("m1", "hello")
    assert again.changed is False
    assert runtime.conversation.sent == ["m1"]


async def test_the_fake_inbox_lists_in_order_and_forgets_what_was_acknowledged() -> None:
    runtime = FakeRuntime()
    first = runtime.inbox.put({"type": "lineup.v1.text"})
    second = runtime.inbox.put({"type": "lineup.v1.text"})
    inbox = runtime.context().inbox
    assert [d.delivery_id for d in await inbox.list()] == [first.delivery_id, second.delivery_id]
    assert [d.delivery_id for d in await inbox.list(after_seq=first.seq)] == [second.delivery_id]
    assert (await inbox.acknowledge(first.delivery_id)).changed is True
    assert (await inbox.acknowledge(first.delivery_id)).changed is False
    assert [d.delivery_id for d in await inbox.list()] == [second.delivery_id]
    assert runtime.inbox.acknowledged == [first.delivery_id]


async def test_retrying_a_message_the_app_never_sent_is_refused() -> None:
    runtime = FakeRuntime()
    with pytest.raises(LineUpError) as refused:
        await runtime.context().conversation.retry("nobody")
    assert refused.value.code is ErrorCode.APP_INSTANCE_NOT_FOUND


# ------------------------------------------------------------------------------ a real app


async def test_the_chat_shows_and_acknowledges_what_waited_in_its_inbox() -> None:
    runtime = FakeRuntime("chat")
    delivery = runtime.inbox.put({"type": "lineup.v1.text", "payload": {"markdown": "hi"}})
    await testkit.start(Chat(), runtime=runtime)
    assert runtime.inbox.acknowledged == [delivery.delivery_id]
    assert runtime.ui.last is not None
    assert [i["markdown"] for i in runtime.ui.last["items"]] == ["hi"]


async def test_the_chat_marks_a_message_the_runtime_refused_as_failed() -> None:
    runtime = FakeRuntime("chat")
    app = Chat()
    await testkit.start(app, runtime=runtime)
    runtime.refuse(p.ConversationSendTextRequest, ErrorCode.STORE_UNAVAILABLE)
    await app.on_ui_event(
        p.UiEvent(instance_id=runtime.instance_id, event={"kind": "composer.submit", "text": "yo"})
    )
    assert runtime.ui.last is not None
    assert [i["state"] for i in runtime.ui.last["items"]] == ["failed"]
    assert runtime.conversation.sent == []
