"""The SDK's navigation, state view, actions and diagnostics (seed 004 §6.1, §6.2) against the
testkit's fake runtime: what each call sends and how a refusal comes back (by its code). The
runtime's own decisions are proven through real processes in tests/e2e/test_navigation.py."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from lineup.sdk import AppContext, ErrorCode, LineUpError, MiniApp, testkit
from lineup.sdk import protocol as p
from lineup.sdk._state import AppStateChange

ME = testkit.DEFAULT_INSTANCE
BOARD = p.AppSummary(
    app_scope="whiteboard",
    title="Whiteboard",
    kind="installed",
    entrypoints=(p.EntrypointSummary(id="board", kind="surface", default_eligible=True),),
)


class Walker(MiniApp):
    async def start(self, app: AppContext) -> None:
        self.app = app


async def walker() -> tuple[AppContext, testkit.FakeRuntime]:
    app = Walker()
    runtime = await testkit.start(app, app_scope="walker")
    runtime.navigation.available.append(BOARD)
    return app.app, runtime


async def code_of(call: Any) -> str:
    with pytest.raises(LineUpError) as refused:
        await call
    return refused.value.code.value


async def test_a_launch_names_the_asking_instance_and_a_retry_finds_the_same_handle() -> None:
    app, _runtime = await walker()
    handle = await app.apps.launch("whiteboard", "r1", display_mode="background")
    assert (handle.instance_id, handle.entrypoint, handle.parent_instance_id, handle.state) == (
        "whiteboard:nav-walker-r1", "board", ME, "background"
    )  # fmt: skip
    assert await app.apps.launch("whiteboard", "r1", display_mode="background") == handle
    assert await code_of(app.apps.launch("whiteboard", "r2", entrypoint="nope")) == (
        ErrorCode.ENTRYPOINT_NOT_FOUND.value
    )
    assert await code_of(app.apps.launch("nothing", "r3")) == ErrorCode.APP_NOT_INSTALLED.value
    assert [a.app_scope for a in await app.apps.list_available()] == ["chat", "whiteboard"]


async def test_focus_and_close_reach_only_the_apps_own_or_launched_instances() -> None:
    app, runtime = await walker()
    board = await app.apps.launch("whiteboard", "r1")
    assert (await app.apps.focus(board.instance_id)).id == board.instance_id
    assert await code_of(app.apps.focus("task-dashboard:x")) == "app_scope_mismatch"
    assert await code_of(app.apps.close("chat")) == "lifecycle_denied"
    assert (await app.apps.close(board.instance_id)).id == board.instance_id
    assert runtime.navigation.closed == [board.instance_id]
    assert (await app.apps.open_default_app()).instance_id == "chat"


async def test_the_state_view_is_the_apps_and_a_subscriber_hears_what_changed() -> None:
    app, _runtime = await walker()
    heard: list[tuple[p.AppStateView, AppStateChange]] = []

    async def listen(view: p.AppStateView, change: AppStateChange) -> None:
        heard.append((view, change))

    stop = await app.state.subscribe(listen)
    board = await app.apps.launch("whiteboard", "r1", display_mode="background")
    view = await app.state.snapshot()
    assert [i.instance_id for i in view.launched] == [board.instance_id]
    await app.state._changed(view)  # as the host hands over `miniapp.state.changed`
    assert [change.changed for _, change in heard] == [(ME,), (board.instance_id,)]
    await app.state._changed(view)  # the same view again is not news
    stop()
    await app.state._changed(view.model_copy(update={"launched": ()}))
    assert len(heard) == 2


async def test_an_action_is_one_of_the_closed_union_and_never_an_envelope() -> None:
    app, runtime = await walker()
    receipt = await app.actions.dispatch({"kind": "lifecycle.background", "instance_id": ME})
    assert receipt.id == ME and runtime.lifecycle.requests == [(ME, "background")]
    launched = await app.actions.dispatch(
        p.AppsLaunchAction(app_scope="whiteboard", request_id="a1")
    )
    assert launched.id == "whiteboard:nav-walker-a1"
    for bad in (
        {"kind": "agent.envelope", "payload": {}},
        {"kind": "lineup.v1.tool.result", "call_id": "c", "result": {}},
        {"kind": "apps.launch"},  # a known kind, malformed
    ):
        assert await code_of(app.actions.dispatch(bad)) == "invalid_arguments"
    speak = {"kind": "conversation.send_text", "message_id": "m1", "markdown": "hi"}
    assert await code_of(app.actions.dispatch(speak)) == "permission_denied"  # the chat's alone


async def test_diagnostics_are_bounded_in_size_and_count() -> None:
    app, runtime = await walker()
    await app.diagnostics.report("failing", code="render_failed", message="x" * 500)
    assert runtime.navigation.reports == [(ME, "failing", "render_failed")]
    with pytest.raises(ValidationError):
        await app.diagnostics.report("failing", code="free text!")
    with pytest.raises(ValidationError):
        await app.diagnostics.report("failing", code="x", message="x" * 501)
    for _ in range(p.MAX_REPORTS - 1):
        await app.diagnostics.report("ok")
    assert await code_of(app.diagnostics.report("ok")) == "quota_exceeded"


async def test_the_chat_dispatches_the_users_text_as_its_send_text_request() -> None:
    chat = Walker()
    runtime = await testkit.start(chat, app_scope="chat")
    action = {"kind": "conversation.send_text", "message_id": "m1", "markdown": "hi"}
    assert (await chat.app.actions.dispatch(action)).id == "m1"
    assert runtime.conversation.sent == ["m1"]


KINDS = sorted(
    {*p.SURFACE_ACTION_KINDS, *p.CONVERSATION_ACTION_KINDS, "agent.envelope", "tool.result", "x"}
)


@given(
    st.dictionaries(
        st.sampled_from(["kind", "instance_id", "app_scope", "request_id", "payload", "markdown"]),
        st.one_of(st.sampled_from(KINDS), st.text(max_size=5), st.integers(), st.none()),
        max_size=5,
    )
)
def test_any_input_is_one_action_of_the_closed_union_or_refused(raw: dict[str, Any]) -> None:
    try:
        action = p.APP_ACTION.validate_python(raw)
    except ValidationError:
        return  # the SDK raises `invalid_arguments` for it, before anything is sent
    assert action.kind in p.SURFACE_ACTION_KINDS | p.CONVERSATION_ACTION_KINDS
    assert raw.get("kind") == action.kind
