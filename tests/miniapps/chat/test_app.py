"""The chat (`miniapps/chat/_app.py`) on the SDK's fake runtime: a burst of deliveries is shown
in one render and acknowledged in one request, deliveries whose acknowledgement was lost are
shown again, once, and the timeline travels as items: only what changed, in bounded requests."""

from __future__ import annotations

from typing import Any

import pytest

from lineup import wire
from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.miniapps.chat import Chat
from lineup.sdk import protocol as p
from lineup.sdk import testkit


def text(n: int) -> dict[str, Any]:
    return {"type": wire.TEXT, "payload": {"markdown": f"hello {n}"}}


def counting(runtime: testkit.FakeRuntime) -> list[str]:
    """The type of every request the app sends, in order."""
    sent: list[str] = []
    call = runtime.call

    async def counted(peer: str, request: Message, expect: type[Any]) -> Any:
        sent.append(request.TYPE)
        return await call(peer, request, expect)

    runtime.call = counted  # type: ignore[method-assign]
    return sent


def shown(runtime: testkit.FakeRuntime) -> list[str]:
    view = runtime.ui.last
    assert view is not None
    return [item["id"].split(":", 1)[1] for item in view["items"]]  # without "agent:"/"user:"


async def test_a_burst_is_shown_in_one_render_and_acknowledged_in_one_request() -> None:
    chat = Chat()
    runtime = await testkit.start(chat, app_scope="chat", instance_id="chat")
    sent = counting(runtime)
    burst = tuple(runtime.inbox.put(text(n), f"d{n}") for n in range(50))

    await chat.on_deliveries(burst)

    # The view did not change (the composer): only the new messages are put, in one request.
    assert sent == [p.ViewItemsPutRequest.TYPE, p.InboxAckManyRequest.TYPE]
    assert shown(runtime) == [f"d{n}" for n in range(50)]
    assert runtime.inbox.acknowledged == [f"d{n}" for n in range(50)]
    assert runtime.inbox.pending == {}


async def test_a_message_shows_in_the_conversations_order_pushed_or_listed() -> None:
    # The user's "mine" is the conversation's first message; the Agent's answer its second,
    # and the first delivery of the chat's inbox: ordered by the inbox it came before "mine".
    chat = Chat()
    runtime = await testkit.start(chat, app_scope="chat", instance_id="chat")
    await chat.on_ui_event(
        p.UiEvent(instance_id="chat", event={"kind": "composer.submit", "text": "mine"})
    )
    [mine] = runtime.conversation.sent
    answer = runtime.inbox.put(text(1), "answer")
    assert answer.seq <= runtime.conversation.items[mine].seq < (answer.message_seq or 0)

    await chat.on_deliveries((answer,))
    assert shown(runtime) == [mine, "answer"]

    # A restart that read the history just before the answer arrived, and lists the inbox
    # just after: the answer comes from the inbox alone, and shows in the same place.
    restarted = Chat()
    runtime.inbox.pending[answer.delivery_id] = answer
    runtime.conversation.items.pop(answer.delivery_id)
    await testkit.start(restarted, runtime=runtime)
    assert shown(runtime) == [mine, "answer"]


async def test_an_agent_message_is_shown_at_the_time_the_runtime_recorded_it() -> None:
    # Cards sit in the timeline at their own recording: a message stamped when the chat got to
    # it (a busy process, late) showed after the card of a question the Agent asked after it.
    chat = Chat()
    runtime = await testkit.start(chat, app_scope="chat", instance_id="chat")
    recorded = 1_700_000_000.25
    late = runtime.inbox.put(text(1), "late", at=recorded)

    await chat.on_deliveries((late,))

    def shown_at() -> list[tuple[str, float]]:
        view = runtime.ui.last
        assert view is not None
        return [(item["id"], item["at"]) for item in view["items"]]

    assert shown_at() == [("agent:late", recorded)]
    # After a restart it comes from the history, at the same time.
    runtime.inbox.pending.clear()
    await testkit.start(Chat(), runtime=runtime)
    assert shown_at() == [("agent:late", recorded)]


async def test_a_burst_whose_acknowledgement_was_lost_is_shown_again_once_after_a_restart() -> None:
    chat = Chat()
    runtime = await testkit.start(chat, app_scope="chat", instance_id="chat")
    burst = tuple(runtime.inbox.put(text(n), f"d{n}") for n in range(3))
    runtime.refuse(p.InboxAckManyRequest, ErrorCode.ACTOR_RESTARTED)
    with pytest.raises(LineUpError) as refused:  # the router went away before it acked
        await chat.on_deliveries(burst)
    assert refused.value.code is ErrorCode.ACTOR_RESTARTED
    assert shown(runtime) == ["d0", "d1", "d2"]
    assert sorted(runtime.inbox.pending) == ["d0", "d1", "d2"]

    restarted = Chat()
    await testkit.start(restarted, runtime=runtime, app_scope="chat", instance_id="chat")
    await restarted.on_deliveries(burst)  # told again as well: at least once

    assert shown(runtime) == ["d0", "d1", "d2"]  # each once
    assert runtime.inbox.pending == {}


async def test_a_restart_shows_every_waiting_delivery_however_many_pages_they_take() -> None:
    runtime = testkit.FakeRuntime("chat", "chat")
    for n in range(600):
        runtime.inbox.put(text(n), f"d{n:03}")
    sent = counting(runtime)

    await testkit.start(Chat(), runtime=runtime)

    assert runtime.inbox.pending == {}
    assert sent.count(p.InboxListRequest.TYPE) == 3  # 500, 100, then none left
    assert sent.count(p.InboxAckManyRequest.TYPE) == 2  # 500 ids a request at most
    assert sent.count(p.ViewUpdateRequest.TYPE) == 1
    assert shown(runtime)[-1] == "d599"
    assert len(shown(runtime)) == 200  # the newest SHOWN


def big(n: int) -> dict[str, Any]:
    """An Agent message of about 250 KB (within the wire's 256 KiB envelope)."""
    return {"type": wire.TEXT, "payload": {"markdown": f"{n}:" + "x" * 250_000}}


def put_sizes(runtime: testkit.FakeRuntime) -> list[int]:
    """The size of every item put request the app sends, in order."""
    sizes: list[int] = []
    call = runtime.call

    async def measured(peer: str, request: Message, expect: type[Any]) -> Any:
        if isinstance(request, p.ViewItemsPutRequest | p.ViewUpdateRequest):
            sizes.append(len(request.model_dump_json().encode()))
        return await call(peer, request, expect)

    runtime.call = measured  # type: ignore[method-assign]
    return sizes


async def test_large_messages_travel_one_per_request_and_no_request_grows_with_the_timeline() -> (
    None
):
    chat = Chat()
    runtime = await testkit.start(chat, app_scope="chat", instance_id="chat")
    sizes = put_sizes(runtime)
    for n in range(6):
        await chat.on_deliveries((runtime.inbox.put(big(n), f"big{n}"),))
    await chat.on_deliveries((runtime.inbox.put(text(9), "short"),))

    assert shown(runtime) == [*(f"big{n}" for n in range(6)), "short"]
    view = runtime.ui.last
    assert view is not None and all(len(i["markdown"]) > 250_000 for i in view["items"][:6])
    # Each request carried the one new message: the sixth large one cost what the first did.
    assert len(sizes) == 7 and max(sizes) < p.MAX_VIEW_ITEMS_PUT_BYTES
    assert abs(sizes[5] - sizes[0]) < 100 and sizes[6] < 1024


async def test_a_restart_puts_everything_again_in_bounded_requests_history_included() -> None:
    runtime = testkit.FakeRuntime("chat", "chat")
    for n in range(5):
        runtime.conversation.add(f"{n}:" + "y" * 250_000, message_id=f"h{n}")
    sizes = put_sizes(runtime)
    await testkit.start(Chat(), runtime=runtime)

    assert shown(runtime) == [f"h{n}" for n in range(5)]
    assert len(sizes) >= 5 and max(sizes) < p.MAX_VIEW_ITEMS_PUT_BYTES


async def test_a_state_change_puts_only_the_message_that_changed() -> None:
    chat = Chat()
    runtime = await testkit.start(chat, app_scope="chat", instance_id="chat")
    await chat.on_deliveries(tuple(runtime.inbox.put(text(n), f"d{n}") for n in range(3)))
    await chat.on_ui_event(
        p.UiEvent(instance_id="chat", event={"kind": "composer.submit", "text": "mine"})
    )
    [mine] = [i for i in runtime.ui.ordered("chat") if i.fields["author"] == "user"]
    puts = runtime.ui.puts
    sent = counting(runtime)

    message_id = mine.id.removeprefix("user:")  # the chat's own id for it, as the runtime says
    await chat.on_conversation_updated(
        p.ConversationUpdatedEvent(message_id=message_id, state="sent")
    )

    assert sent == [p.ViewItemsPutRequest.TYPE] and runtime.ui.puts == puts + 1
    assert runtime.ui.items["chat"][mine.id].fields["state"] == "sent"


async def test_a_refresh_puts_every_message_again_for_a_focus_that_lost_them() -> None:
    chat = Chat()
    runtime = await testkit.start(chat, app_scope="chat", instance_id="chat")
    await chat.on_deliveries(tuple(runtime.inbox.put(text(n), f"d{n}") for n in range(3)))
    for delivery_id in ("d0", "d1", "d2"):  # acknowledged: now they are history
        runtime.conversation.add(f"hello {delivery_id[1]}", message_id=delivery_id)
    runtime.ui.items.clear()  # focus restarted
    renders = len(runtime.ui.renders)

    await chat.on_view_refresh()

    assert shown(runtime) == ["d0", "d1", "d2"]
    assert len(runtime.ui.renders) == renders + 1  # the view too


async def test_an_agent_message_whose_id_is_the_users_message_id_shows_beside_it() -> None:
    # The Agent chose the id the chat gave a user's message (`user-<client id>`): two messages.
    chat = Chat()
    runtime = await testkit.start(chat, app_scope="chat", instance_id="chat")
    submit = {"kind": "composer.submit", "text": "mine", "client_id": "chosen-0001"}
    await chat.on_ui_event(p.UiEvent(instance_id="chat", event=submit))
    await chat.on_deliveries((runtime.inbox.put(text(1), "user-chosen-0001"),))

    items = runtime.ui.ordered("chat")
    assert sorted(i.fields["author"] for i in items) == ["agent", "user"]
    assert len({i.id for i in items}) == 2


async def test_an_agent_message_id_as_long_as_the_wire_allows_is_shown() -> None:
    chat = Chat()
    runtime = await testkit.start(chat, app_scope="chat", instance_id="chat")
    long_ids = ["x" * 200, "y" * 200]
    await chat.on_deliveries(tuple(runtime.inbox.put(text(n), i) for n, i in enumerate(long_ids)))

    items = runtime.ui.ordered("chat")
    assert len(items) == 2 and len({i.id for i in items}) == 2
    assert all(len(i.id) <= 200 for i in items)


async def test_a_sub_sessions_short_result_carries_its_app_session_id_and_others_none() -> None:
    # The runtime took the text for an open sub-session and stored the context with it: the
    # chat hands the id on to the Shell (which shows it in the group), delivered or history.
    session = "lu:app_session:task-dashboard:open-1"
    runtime = testkit.FakeRuntime("chat", "chat")
    runtime.conversation.add("earlier result", message_id="h1", app_session_id=session)
    runtime.conversation.add("earlier plain", message_id="h2")
    chat = Chat()
    await testkit.start(chat, runtime=runtime)
    result = {
        **text(1),
        "payload": {"markdown": "60 %", "app_session_context": {"app_session_id": session}},
    }
    await chat.on_deliveries((runtime.inbox.put(result, "d1"), runtime.inbox.put(text(2), "d2")))

    fields = {i.id: i.fields for i in runtime.ui.ordered("chat")}
    assert {k: f.get("app_session_id") for k, f in fields.items()} == {
        "agent:h1": session,
        "agent:h2": None,
        "agent:d1": session,
        "agent:d2": None,
    }
    # A text of no sub-session travels as before: no key for it.
    assert "app_session_id" not in fields["agent:d2"]
    assert fields["agent:d1"]["markdown"] == "60 %"


async def test_the_users_mode_switch_is_asked_of_the_runtime_and_shown_once_it_is_recorded() -> (
    None
):
    chat = Chat()
    runtime = await testkit.start(chat, app_scope="chat", instance_id="chat")
    view = runtime.ui.last
    assert view is not None and (view["mode"], view["modes"]) == ("im", ["im", "audio", "video"])
    sent = counting(runtime)

    switch = {"kind": "mode.switch", "mode": "audio"}
    await chat.on_ui_event(p.UiEvent(instance_id="chat", event=switch))
    assert sent == [p.ModeSwitchRequest.TYPE]
    assert runtime.modes["chat"] == "audio"
    assert runtime.ui.last is not None and runtime.ui.last["mode"] == "im"  # not told yet
    await runtime.settle()
    assert chat.app.mode == "audio"
    assert runtime.ui.last is not None and runtime.ui.last["mode"] == "audio"

    # A mode the chat does not have, or the one it is in, asks nothing.
    for mode in ("hologram", "audio", None):
        await chat.on_ui_event(p.UiEvent(instance_id="chat", event={**switch, "mode": mode}))
    assert sent.count(p.ModeSwitchRequest.TYPE) == 1


async def test_an_app_without_modes_is_refused_a_switch() -> None:
    runtime = testkit.FakeRuntime("notes", "notes:1")
    with pytest.raises(LineUpError) as refused:
        await runtime.context().switch_mode("audio")
    assert refused.value.code is ErrorCode.INVALID_ARGUMENTS
    assert runtime.context().mode == "app"
