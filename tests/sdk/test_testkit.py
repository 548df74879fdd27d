"""The testkit: an author tests a MiniApp's tools and hooks against the in-memory runtime."""

from __future__ import annotations

from typing import Any

import pytest

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.facts.scopes import CHAT
from lineup.miniapps.chat import Chat
from lineup.sdk import AppContext, MiniApp, testkit
from lineup.sdk import protocol as p
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
    assert (record.status, record.result) == ("completed", {"status": "cancelled"})
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
    runtime = FakeRuntime(CHAT)  # the one app that may send the user's text
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


async def test_the_fake_inbox_keeps_each_instances_deliveries_to_that_instance() -> None:
    runtime = FakeRuntime()
    mine = runtime.inbox.put({"type": "lineup.v1.text"}, instance_id="board:1")
    theirs = runtime.inbox.put({"type": "lineup.v1.text"}, instance_id="board:2")
    app_level = runtime.inbox.put({"type": "lineup.v1.text"})
    inbox = runtime.context().inbox

    assert [d.delivery_id for d in await inbox.list(instance_id="board:1")] == [mine.delivery_id]
    assert [d.delivery_id for d in await inbox.list()] == [app_level.delivery_id]
    assert (await inbox.acknowledge(theirs.delivery_id, instance_id="board:1")).changed is False
    assert (await inbox.acknowledge(theirs.delivery_id, instance_id="board:2")).changed is True
    assert runtime.inbox.acknowledged == [theirs.delivery_id]


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


# ------------------------------------------------------------------------------ lifecycle


async def test_lifecycle_requests_are_recorded_in_order_and_answered_with_a_receipt() -> None:
    runtime = FakeRuntime()
    lifecycle = runtime.context().lifecycle
    instance = testkit.DEFAULT_INSTANCE
    assert (await lifecycle.request_background(instance)).id == instance
    assert (await lifecycle.request_foreground(instance)).changed is True
    assert (await lifecycle.request_close(instance)).id == instance
    assert runtime.lifecycle.requests == [
        (instance, "background"),
        (instance, "foreground"),
        (instance, "close"),
    ]


async def test_a_closed_instance_takes_no_more_views_or_lifecycle_requests() -> None:
    runtime = FakeRuntime()
    context = runtime.context()
    await context.lifecycle.request_close(testkit.DEFAULT_INSTANCE)
    assert runtime.instances == set()
    with pytest.raises(LineUpError) as refused:
        await context.ui.render(testkit.DEFAULT_INSTANCE, {})
    assert refused.value.code is ErrorCode.APP_INSTANCE_NOT_FOUND
    with pytest.raises(LineUpError) as refused:
        await context.lifecycle.request_foreground(testkit.DEFAULT_INSTANCE)
    assert refused.value.code is ErrorCode.APP_INSTANCE_NOT_FOUND
    assert runtime.lifecycle.requests == [(testkit.DEFAULT_INSTANCE, "close")]


async def test_a_lifecycle_request_for_an_instance_the_app_does_not_own_is_refused() -> None:
    runtime = FakeRuntime()
    with pytest.raises(LineUpError) as refused:
        await runtime.context().lifecycle.request_close("someone-else")
    assert refused.value.code is ErrorCode.APP_SCOPE_MISMATCH
    assert runtime.lifecycle.requests == []


async def test_an_injected_refusal_fails_a_lifecycle_request_which_then_did_not_happen() -> None:
    runtime = FakeRuntime()
    runtime.refuse(p.LifecycleRequest, ErrorCode.LIFECYCLE_DENIED)
    lifecycle = runtime.context().lifecycle
    with pytest.raises(LineUpError) as refused:
        await lifecycle.request_close(testkit.DEFAULT_INSTANCE)
    assert refused.value.code is ErrorCode.LIFECYCLE_DENIED
    assert (runtime.lifecycle.requests, runtime.instances) == ([], {testkit.DEFAULT_INSTANCE})
    await lifecycle.request_close(testkit.DEFAULT_INSTANCE)
    assert runtime.lifecycle.requests == [(testkit.DEFAULT_INSTANCE, "close")]


# ------------------------------------------------------------------------------ session data


class Notes(MiniApp):
    """Subscribes to its instance's session data and writes the events of its views to it."""

    def __init__(self) -> None:
        self.heard: list[tuple[dict[str, Any] | None, int]] = []
        self.heard_while_writing: list[tuple[dict[str, Any] | None, int]] = []

    async def start(self, app: AppContext) -> None:
        self.app = app
        await app.session_data.subscribe(app.instance_id, self.on_data)

    async def on_data(self, snapshot: p.SessionDataSnapshot) -> None:
        self.heard.append((snapshot.data, snapshot.revision))

    async def on_ui_event(self, event: p.UiEvent) -> None:
        await self.app.session_data.replace(event.instance_id, event.event, self.heard[-1][1])
        self.heard_while_writing = list(self.heard)


def note(text: str) -> p.UiEvent:
    return p.UiEvent(instance_id=testkit.DEFAULT_INSTANCE, event={"note": text})


async def test_session_data_is_empty_at_revision_zero_until_written() -> None:
    runtime = FakeRuntime()
    snapshot = await runtime.context().session_data.get(testkit.DEFAULT_INSTANCE)
    assert (snapshot.instance_id, snapshot.data, snapshot.revision) == (
        testkit.DEFAULT_INSTANCE,
        None,
        0,
    )
    assert runtime.session_data.get(testkit.DEFAULT_INSTANCE) == (None, 0)


async def test_a_replace_applies_only_at_the_current_revision_and_answers_the_new_one() -> None:
    runtime = FakeRuntime()
    data = runtime.context().session_data
    instance = testkit.DEFAULT_INSTANCE
    assert await data.replace(instance, {"n": 1}, 0) == 1
    assert await data.replace(instance, {"n": 2}, 1) == 2
    for stale in (0, 1, 3):
        with pytest.raises(LineUpError) as refused:
            await data.replace(instance, {"n": 99}, stale)
        assert refused.value.code is ErrorCode.STALE_REVISION
    snapshot = await data.get(instance)
    assert (snapshot.data, snapshot.revision) == ({"n": 2}, 2)


async def test_a_replace_answers_its_revision_as_the_receipts_seq() -> None:
    runtime = FakeRuntime()
    receipt = await runtime.call(
        "focus",
        p.SessionDataReplaceRequest(
            instance_id=testkit.DEFAULT_INSTANCE, data={"a": 1}, expected_revision=0
        ),
        p.CommandReceipt,
    )
    assert (receipt.id, receipt.seq, receipt.changed) == (testkit.DEFAULT_INSTANCE, 1, True)


async def test_a_retried_replace_that_was_applied_is_answered_as_a_repeat() -> None:
    runtime = FakeRuntime()
    write = p.SessionDataReplaceRequest(
        instance_id=testkit.DEFAULT_INSTANCE, data={"a": 1}, expected_revision=0
    )
    await runtime.call("focus", write, p.CommandReceipt)
    again = await runtime.call("focus", write, p.CommandReceipt)
    assert (again.seq, again.changed) == (1, False)
    assert runtime.session_data.get(testkit.DEFAULT_INSTANCE) == ({"a": 1}, 1)


async def test_session_data_the_store_would_refuse_is_refused_and_not_written() -> None:
    runtime = FakeRuntime()
    data = runtime.context().session_data
    deep: dict[str, Any] = {}
    for _ in range(32):
        deep = {"d": deep}
    for refused_value in (deep, {"big": "x" * (256 * 1024)}):
        with pytest.raises(LineUpError) as refused:
            await data.replace(testkit.DEFAULT_INSTANCE, refused_value, 0)
        assert refused.value.code is ErrorCode.INVALID_ARGUMENTS
    assert runtime.session_data.get(testkit.DEFAULT_INSTANCE) == (None, 0)
    assert await data.replace(testkit.DEFAULT_INSTANCE, deep["d"], 0) == 1  # 32 deep is fine


async def test_session_data_is_a_copy_never_the_apps_own_object() -> None:
    runtime = FakeRuntime()
    data = runtime.context().session_data
    value: dict[str, Any] = {"tags": ["a"]}
    await data.replace(testkit.DEFAULT_INSTANCE, value, 0)
    value["tags"].append("changed after the write")
    read = await data.get(testkit.DEFAULT_INSTANCE)
    assert read.data == {"tags": ["a"]}
    assert read.data is not None
    read.data["tags"].append("changed after the read")
    assert runtime.session_data.get(testkit.DEFAULT_INSTANCE) == ({"tags": ["a"]}, 1)


async def test_session_data_of_an_instance_the_app_does_not_own_is_refused() -> None:
    data = FakeRuntime().context().session_data
    for attempt in (
        data.get("someone-else"),
        data.replace("someone-else", {}, 0),
        data.subscribe("someone-else", Notes().on_data),
    ):
        with pytest.raises(LineUpError) as refused:
            await attempt
        assert refused.value.code is ErrorCode.APP_SCOPE_MISMATCH


async def test_session_data_of_a_closed_instance_is_not_found_as_in_the_runtime() -> None:
    """An ended instance has no session data to read or write (tests/e2e/test_session_data.py
    and the behaviour suite show the runtime refusing it); the test still sees what was kept."""
    runtime = FakeRuntime()
    context = runtime.context()
    await context.session_data.replace(testkit.DEFAULT_INSTANCE, {"kept": True}, 0)
    await context.lifecycle.request_close(testkit.DEFAULT_INSTANCE)
    data = context.session_data
    for attempt in (
        data.get(testkit.DEFAULT_INSTANCE),
        data.replace(testkit.DEFAULT_INSTANCE, {}, 1),
        data.subscribe(testkit.DEFAULT_INSTANCE, Notes().on_data),
    ):
        with pytest.raises(LineUpError) as refused:
            await attempt
        assert refused.value.code is ErrorCode.APP_INSTANCE_NOT_FOUND
    assert runtime.session_data.get(testkit.DEFAULT_INSTANCE) == ({"kept": True}, 1)


async def test_injected_refusals_fail_session_data_requests() -> None:
    runtime = FakeRuntime()
    runtime.refuse(p.SessionDataReplaceRequest, ErrorCode.STORE_UNAVAILABLE)
    runtime.refuse(p.SessionDataGetRequest, ErrorCode.STORE_UNAVAILABLE)
    data = runtime.context().session_data
    for attempt in (data.replace(testkit.DEFAULT_INSTANCE, {}, 0), data.get("x")):
        with pytest.raises(LineUpError) as refused:
            await attempt
        assert refused.value.code is ErrorCode.STORE_UNAVAILABLE
    assert runtime.session_data.get(testkit.DEFAULT_INSTANCE) == (None, 0)
    assert await data.replace(testkit.DEFAULT_INSTANCE, {}, 0) == 1


async def test_subscribe_answers_the_snapshot_then_each_later_write_in_revision_order() -> None:
    runtime = FakeRuntime()
    runtime.session_data.put(testkit.DEFAULT_INSTANCE, {"n": 1})
    app = Notes()
    await testkit.start(app, runtime=runtime)
    assert app.heard == [({"n": 1}, 1)]
    assert runtime.session_data.put(testkit.DEFAULT_INSTANCE, {"n": 2}) == 2
    assert runtime.session_data.put(testkit.DEFAULT_INSTANCE, {"n": 3}) == 3
    assert app.heard == [({"n": 1}, 1)]  # told between hooks, not in the middle of one
    await runtime.settle()
    assert app.heard == [({"n": 1}, 1), ({"n": 2}, 2), ({"n": 3}, 3)]
    assert runtime.session_data.pending == []


async def test_the_apps_own_write_reaches_its_handler_after_the_hook_returns() -> None:
    runtime = FakeRuntime()
    app = Notes()
    await testkit.start(app, runtime=runtime)
    await app.on_ui_event(note("first"))
    assert app.heard_while_writing == [(None, 0)]
    await runtime.settle()
    assert app.heard == [(None, 0), ({"note": "first"}, 1)]


async def test_a_restarted_app_hears_the_updates_and_the_replaced_one_does_not() -> None:
    runtime = FakeRuntime()
    old = Notes()
    await testkit.start(old, runtime=runtime)
    runtime.session_data.put(testkit.DEFAULT_INSTANCE, {"n": 1})
    new = Notes()
    await testkit.start(new, runtime=runtime)
    assert new.heard == [({"n": 1}, 1)]  # the snapshot already holds it: no repeat after
    runtime.session_data.put(testkit.DEFAULT_INSTANCE, {"n": 2})
    await runtime.settle()
    assert new.heard == [({"n": 1}, 1), ({"n": 2}, 2)]
    assert old.heard == [(None, 0)]


async def test_no_update_is_queued_for_an_instance_nobody_subscribed_to() -> None:
    runtime = FakeRuntime()
    await runtime.context().session_data.replace(testkit.DEFAULT_INSTANCE, {"n": 1}, 0)
    assert runtime.session_data.pending == []


async def test_a_tool_that_cancels_its_call_is_recorded_cancelled_with_its_reason() -> None:
    from pydantic import BaseModel, ConfigDict

    from lineup.sdk import AppInfo, MiniApp, ToolCall, tool
    from lineup.sdk.testkit import call_tool, start

    class In(BaseModel):
        model_config = ConfigDict(extra="forbid")

    class Out(BaseModel):
        model_config = ConfigDict(extra="forbid")

    class Quitter(MiniApp):
        app_info = AppInfo(app_scope="quitter", version="1.0.0", kind="bundled-reference")

        @tool("quitter.try", handling="direct", input=In, output=Out)
        async def attempt(self, call: ToolCall[In]) -> Out | None:
            await call.cancel("not_today")
            return None

    app = Quitter()
    await start(app)
    record = await call_tool(app, "quitter.try", {})
    assert record.status == "cancelled"
    assert record.cancelled_reason == "not_today"
