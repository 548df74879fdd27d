"""The hostbridge and standard interactions (contract §4): what it asks the router and when,
what a Shell is sent, where its answers and drafts go, and its heartbeat. The router is a fake
(`FakeBus`); the WebSocket server is the real one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio
from trio_websocket import WebSocketConnection

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.router.messages import (
    AppSessionContinueReply,
    AppSessionContinueRequest,
    InteractionAnswerReply,
    InteractionAnswerRequest,
    InteractionsListReply,
)
from lineup.hostbridge._interactions import MAX_DRAFT_BYTES, MAX_DRAFTS, InteractionMirror
from lineup.hostbridge.messages import (
    AppSessionsUpdatedEvent,
    AppSessionView,
    InteractionsUpdatedEvent,
    InteractionView,
)
from lineup.hostbridge.shell_protocol import HEARTBEAT_S
from lineup.tests.support.shell import open_shell_socket, shell_at

from .test_actor import TOKEN, WAIT, FakeBus, from_peer, start_hostbridge

CONFIRM = {"kind": "confirm", "title": "Close?", "prompt": "Close the task?"}
INPUT = {
    "kind": "input",
    "title": "Name",
    "prompt": "Your name?",
    "fields": [{"id": "name", "label": "Name", "type": "text", "required": True}],
}


def view(interaction_id: str, state: str = "presented", **changes: Any) -> InteractionView:
    fields: dict[str, Any] = {
        "interaction_id": interaction_id,
        "kind": "input",
        "state": state,
        "request": INPUT,
        "source": "agent_tool",
        "owner_scope": "agent",
        "call_id": f"call-{interaction_id}",
        "created_at": 1_760_000_000.0,
        "expires_at": 1_760_000_900.0,
    }
    return InteractionView(**{**fields, **changes})


SESSION = AppSessionView(
    app_session_id="lu:app_session:task-dashboard:c1",
    app_scope="task-dashboard",
    instance_id="task-dashboard:c1",
    state="open",
    opened_at=1_760_000_000.0,
)


async def shell(port: int) -> Any:
    return open_shell_socket(shell_at(port, TOKEN))


async def frame_of(ws: WebSocketConnection, frame_type: str) -> dict[str, Any]:
    """The next frame of `frame_type`, skipping the others."""
    with trio.fail_after(WAIT):
        while True:
            frame: dict[str, Any] = json.loads(await ws.get_message())
            if frame["type"] == frame_type:
                return frame


# ---------------------------------------------------------------------- the mirror, alone


def test_a_draft_is_dropped_once_its_interaction_is_final_and_refused_after() -> None:
    mirror = InteractionMirror()
    mirror.upsert([view("i1")])
    assert mirror.draft("i1", {"name": "Ad"})
    assert mirror.drafts() == {"i1": {"name": "Ad"}}
    mirror.upsert([view("i1", "completed", result={"values": {"name": "Ada"}})])
    assert mirror.drafts() == {}
    assert not mirror.draft("i1", {"name": "again"})
    assert mirror.drafts() == {}


def test_drafts_are_bounded_in_size_and_in_number_the_least_recent_going_first() -> None:
    mirror = InteractionMirror()
    assert not mirror.draft("big", {"name": "x" * MAX_DRAFT_BYTES})
    for n in range(MAX_DRAFTS + 3):
        assert mirror.draft(f"i{n}", {"name": str(n)})
    drafts = mirror.drafts()
    assert len(drafts) == MAX_DRAFTS
    assert "i0" not in drafts and "i2" not in drafts and f"i{MAX_DRAFTS + 2}" in drafts


def test_only_an_input_has_a_draft() -> None:
    mirror = InteractionMirror()
    mirror.upsert([view("c1", kind="confirm", request=CONFIRM)])
    assert not mirror.draft("c1", {"x": "y"})


# ---------------------------------------------------------------------- the actor


async def test_a_router_that_is_not_up_yet_is_asked_again_and_the_shell_then_gets_the_list(
    tmp_path: Path,
) -> None:
    bus = FakeBus()
    bus.list_refusals = 2  # refused twice (not up yet), then it answers
    bus.listed = InteractionsListReply(interactions=(view("i1"),), sessions=(SESSION,))
    async with trio.open_nursery() as nursery:
        _actor, bus, port = await start_hostbridge(nursery, tmp_path, bus)
        await bus.until(lambda: bus.lists >= 3)
        async with await shell(port) as ws:
            await ws.send_message(json.dumps({"type": "shell.ready"}))
            listed = await frame_of(ws, "shell.interactions")
            sessions = await frame_of(ws, "shell.app_sessions")
        nursery.cancel_scope.cancel()
    assert [i["interaction_id"] for i in listed["interactions"]] == ["i1"]
    assert listed["interactions"][0] == view("i1").model_dump(mode="json")
    assert sessions["sessions"] == [SESSION.model_dump(mode="json")]


async def test_updates_reach_every_shell_and_a_greeting_holds_them(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        actor, _bus, port = await start_hostbridge(nursery, tmp_path)
        async with await shell(port) as ws:
            await ws.send_message(json.dumps({"type": "shell.ready"}))
            await frame_of(ws, "shell.apps")
            actor.on_interactions(
                *from_peer("router", InteractionsUpdatedEvent(interactions=(view("i1"),)))
            )
            pushed = await frame_of(ws, "shell.interactions")
            actor.on_app_sessions(
                *from_peer("router", AppSessionsUpdatedEvent(sessions=(SESSION,)))
            )
            pushed_sessions = await frame_of(ws, "shell.app_sessions")
        async with await shell(port) as again:
            await again.send_message(json.dumps({"type": "shell.ready"}))
            greeted = await frame_of(again, "shell.interactions")
            greeted_sessions = await frame_of(again, "shell.app_sessions")
        nursery.cancel_scope.cancel()
    assert pushed["interactions"] == greeted["interactions"] == [view("i1").model_dump(mode="json")]
    assert pushed_sessions["sessions"] == greeted_sessions["sessions"]


async def test_an_answer_goes_to_the_router_with_only_the_id_and_the_answer_and_is_audited(
    tmp_path: Path,
) -> None:
    bus = FakeBus()
    answered = view("i1", "submitted", result={"values": {"name": "Ada"}})
    bus.answer = lambda request: InteractionAnswerReply(interaction=answered, changed=True)
    async with trio.open_nursery() as nursery:
        _actor, bus, port = await start_hostbridge(nursery, tmp_path, bus)
        async with await shell(port) as ws:
            await ws.send_message(json.dumps({"type": "shell.ready"}))
            await frame_of(ws, "shell.apps")
            answer = {"values": {"name": "Ada"}}
            frame = {"type": "interaction.answer", "interaction_id": "i1", "answer": answer}
            await ws.send_message(json.dumps(frame))
            update = await frame_of(ws, "shell.interactions")
        nursery.cancel_scope.cancel()
    sent = [r for r in bus.requests if isinstance(r, InteractionAnswerRequest)]
    assert sent == [InteractionAnswerRequest(interaction_id="i1", answer=answer)]
    assert update["interactions"] == [answered.model_dump(mode="json")]
    rows = [a for a in bus.audits if a.event == "ui.interaction.answer"]
    assert [(a.peer, a.message_type, a.subject_id, a.code) for a in rows] == [
        ("user", "interaction.answer", "i1", None)
    ]


async def test_continue_goes_to_the_router_and_every_shell_gets_the_new_sub_session(
    tmp_path: Path,
) -> None:
    bus = FakeBus()
    new = SESSION.model_copy(
        update={
            "app_session_id": "lu:app_session:task-dashboard:c2",
            "instance_id": "task-dashboard:c2",
            "previous_app_session_id": SESSION.app_session_id,
        }
    )
    bus.resume = lambda request: AppSessionContinueReply(session=new)
    async with trio.open_nursery() as nursery:
        _actor, bus, port = await start_hostbridge(nursery, tmp_path, bus)
        async with await shell(port) as ws:
            await ws.send_message(json.dumps({"type": "shell.ready"}))
            await frame_of(ws, "shell.apps")
            frame = {"type": "app_session.continue", "app_session_id": SESSION.app_session_id}
            await ws.send_message(json.dumps(frame))
            update = await frame_of(ws, "shell.app_sessions")
        nursery.cancel_scope.cancel()
    sent = [r for r in bus.requests if isinstance(r, AppSessionContinueRequest)]
    assert sent == [AppSessionContinueRequest(app_session_id=SESSION.app_session_id)]
    assert update["sessions"] == [new.model_dump(mode="json")]
    rows = [a for a in bus.audits if a.event == "ui.app_session.continue"]
    assert [(a.peer, a.subject_id) for a in rows] == [("user", SESSION.app_session_id)]


async def test_a_refused_continue_is_a_notice_with_its_code_and_audited(tmp_path: Path) -> None:
    bus = FakeBus()

    def refuse(request: AppSessionContinueRequest) -> AppSessionContinueReply:
        raise LineUpError(ErrorCode.APP_SESSION_INVALID, "still open")

    bus.resume = refuse
    async with trio.open_nursery() as nursery:
        _actor, bus, port = await start_hostbridge(nursery, tmp_path, bus)
        async with await shell(port) as ws:
            await ws.send_message(json.dumps({"type": "shell.ready"}))
            await frame_of(ws, "shell.apps")
            frame = {"type": "app_session.continue", "app_session_id": SESSION.app_session_id}
            await ws.send_message(json.dumps(frame))
            notice = await frame_of(ws, "shell.notice")
        nursery.cancel_scope.cancel()
    assert notice["level"] == "error" and notice["code"] == ErrorCode.APP_SESSION_INVALID.value
    refused = [a for a in bus.audits if a.event == "hostbridge.app_session_continue_refused"]
    assert [(a.peer, a.code) for a in refused] == [("user", ErrorCode.APP_SESSION_INVALID.value)]


async def test_a_refused_answer_comes_back_as_a_notice_with_its_code_and_the_card_as_it_was(
    tmp_path: Path,
) -> None:
    bus = FakeBus()
    bus.listed = InteractionsListReply(interactions=(view("i1"),), sessions=())

    def refuse(request: InteractionAnswerRequest) -> InteractionAnswerReply:
        raise LineUpError(ErrorCode.ANSWER_INVALID, "missing a required field")

    bus.answer = refuse
    async with trio.open_nursery() as nursery:
        _actor, bus, port = await start_hostbridge(nursery, tmp_path, bus)
        await bus.until(lambda: bus.lists >= 1)
        async with await shell(port) as ws:
            await ws.send_message(json.dumps({"type": "shell.ready"}))
            await frame_of(ws, "shell.interactions")
            frame = {"type": "interaction.answer", "interaction_id": "i1", "answer": {"values": {}}}
            await ws.send_message(json.dumps(frame))
            notice = await frame_of(ws, "shell.notice")
            again = await frame_of(ws, "shell.interactions")
        nursery.cancel_scope.cancel()
    assert notice["level"] == "error" and notice["code"] == ErrorCode.ANSWER_INVALID.value
    assert again["interactions"] == [view("i1").model_dump(mode="json")]
    refused = [a for a in bus.audits if a.event == "hostbridge.interaction_answer_refused"]
    assert [(a.peer, a.code, a.message_type) for a in refused] == [
        ("user", ErrorCode.ANSWER_INVALID.value, "interaction.answer")
    ]


async def test_a_draft_reaches_the_next_shell_to_connect_and_is_gone_once_answered(
    tmp_path: Path,
) -> None:
    bus = FakeBus()
    bus.listed = InteractionsListReply(interactions=(view("i1"),), sessions=())
    async with trio.open_nursery() as nursery:
        actor, bus, port = await start_hostbridge(nursery, tmp_path, bus)
        await bus.until(lambda: bus.lists >= 1)
        async with await shell(port) as ws:
            await ws.send_message(json.dumps({"type": "shell.ready"}))
            await frame_of(ws, "shell.interactions")
            draft = {"type": "interaction.draft", "interaction_id": "i1", "values": {"name": "Ad"}}
            await ws.send_message(json.dumps(draft))
            # A frame after it is handled once the draft is: the socket reads in order.
            await ws.send_message(json.dumps({"type": "shell.ready"}))
            await frame_of(ws, "shell.drafts")
        async with await shell(port) as reloaded:
            await reloaded.send_message(json.dumps({"type": "shell.ready"}))
            kept = await frame_of(reloaded, "shell.drafts")
            done = view("i1", "completed", result={"values": {"name": "Ada"}})
            actor.on_interactions(
                *from_peer("router", InteractionsUpdatedEvent(interactions=(done,)))
            )
            await frame_of(reloaded, "shell.interactions")
        async with await shell(port) as later:
            await later.send_message(json.dumps({"type": "shell.ready"}))
            greeting = await frame_of(later, "shell.interactions")
            # No drafts frame any more, in the greeting or after it.
            with trio.move_on_after(HEARTBEAT_S * 1.5):
                while True:
                    assert json.loads(await later.get_message())["type"] != "shell.drafts"
        nursery.cancel_scope.cancel()
    assert kept["drafts"] == {"i1": {"name": "Ad"}}
    assert greeting["interactions"][0]["state"] == "completed"
    assert not [a for a in bus.audits if "draft" in (a.message_type or "") + a.event]


async def test_every_shell_gets_a_heartbeat_every_interval_without_asking(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        _actor, _bus, port = await start_hostbridge(nursery, tmp_path)
        async with await shell(port) as ws:
            start = trio.current_time()
            beats = [await frame_of(ws, "shell.heartbeat") for _ in range(2)]
            took = trio.current_time() - start
        nursery.cancel_scope.cancel()
    assert beats == [{"type": "shell.heartbeat"}] * 2
    assert HEARTBEAT_S * 2 - 0.5 <= took < HEARTBEAT_S * 2 + 3.0  # about every interval


def test_a_final_interaction_is_never_reopened_by_an_older_view_of_it() -> None:
    mirror = InteractionMirror()
    mirror.upsert([view("i1", "expired", terminal_code="interaction_expired")])
    assert mirror.upsert([view("i1", "presented")]) == []
    held = mirror.get("i1")
    assert held is not None and held.state == "expired"


def test_a_view_is_never_replaced_by_one_from_earlier_in_its_machine() -> None:
    # A Shell connecting lists again; the router's list, built before the question was
    # presented, can arrive after the push that said so. The card must stay `presented`.
    mirror = InteractionMirror()
    mirror.upsert([view("i1", "presented")])
    assert mirror.upsert([view("i1", "pending")]) == []
    mirror.upsert([view("i1", "submitted", result={"values": {"name": "Ada"}})])
    assert mirror.upsert([view("i1", "presented")]) == []
    held = mirror.get("i1")
    assert held is not None and held.state == "submitted"
    assert [v.state for v in mirror.upsert([view("i1", "completed")])] == ["completed"]


def test_a_closed_sub_session_is_never_reopened_by_an_older_view_of_it() -> None:
    mirror = InteractionMirror()
    closed = SESSION.model_copy(update={"state": "closed", "closed_at": 1_760_000_100.0})
    mirror.upsert_sessions([closed])
    assert mirror.upsert_sessions([SESSION]) == []
    assert mirror.upsert_sessions([closed]) == [closed]
