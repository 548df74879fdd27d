"""`app.agent_messages` (seed 004 §5.4) over the SDK's in-memory runtime: the five delivery
rules as an app sees them, and the SDK's own step of the filter chain (the subscribe filter).
The same through real processes: tests/e2e/test_agent_messages.py."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.sdk import AppContext, AppInfo, MiniApp, testkit
from lineup.sdk import protocol as p
from lineup.sdk._protocol.agent_messages import cursor_of, seq_of_cursor

TEXT = "lineup.v1.text"
PATCH = "lineup.app.state.patch"


def envelope(kind: str = TEXT, conversation: str = "conv-test", text: str = "hi") -> dict[str, Any]:
    return {
        "type": kind,
        "scope": {"app_scope": "test-app", "conversation_id": conversation},
        "payload": {"markdown": text},
    }


class Seen:
    def __init__(self, fail: int = 0) -> None:
        self.messages: list[p.AgentMessage] = []
        self.fail = fail

    async def __call__(self, message: p.AgentMessage) -> None:
        if self.fail:
            self.fail -= 1
            raise ValueError("the app's bug")
        self.messages.append(message)

    @property
    def ids(self) -> list[str]:
        return [m.message_id for m in self.messages]


async def test_a_display_message_is_handed_once_and_acknowledged_by_the_sdk() -> None:
    rt = testkit.FakeRuntime()
    app = rt.context()
    seen = Seen()
    await app.agent_messages.subscribe(seen)
    text = rt.inbox.put(envelope(), "m-1")

    await app.agent_messages.dispatch((text,))
    await app.agent_messages.dispatch((text,))  # told again: idempotent by message_id

    assert seen.ids == ["m-1"]
    message = seen.messages[0]
    assert (message.type, message.conversation_id, message.requires_ack) == (
        TEXT,
        "conv-test",
        False,
    )
    assert message.payload == {"markdown": "hi"}
    assert rt.inbox.acknowledged == ["m-1"]


async def test_a_patch_stays_in_the_inbox_until_the_app_acknowledges_it() -> None:
    rt = testkit.FakeRuntime()
    app = rt.context()
    seen = Seen()
    await app.agent_messages.subscribe(seen)
    patch = rt.inbox.put(envelope(PATCH), "m-patch", instance_id=rt.instance_id)

    await app.agent_messages.dispatch((patch,))

    assert seen.ids == ["m-patch"] and seen.messages[0].requires_ack
    assert rt.inbox.acknowledged == []
    assert await app.agent_messages.acknowledge("m-patch") is True
    assert await app.agent_messages.acknowledge("m-patch") is False  # idempotent
    assert rt.inbox.acknowledged == ["m-patch"]


async def test_the_subscribe_filter_picks_types_and_conversation() -> None:
    rt = testkit.FakeRuntime()
    app = rt.context()
    texts, patches, elsewhere = Seen(), Seen(), Seen()
    await app.agent_messages.subscribe(texts, types=[TEXT])
    await app.agent_messages.subscribe(patches, types=[PATCH], conversation_id="conv-test")
    await app.agent_messages.subscribe(elsewhere, conversation_id="conv-other")
    text, patch = rt.inbox.put(envelope(), "m-t"), rt.inbox.put(envelope(PATCH), "m-p")

    await app.agent_messages.dispatch((text, patch))

    assert (texts.ids, patches.ids, elsewhere.ids) == (["m-t"], ["m-p"], [])


async def test_a_type_no_app_is_handed_is_refused_at_subscribe() -> None:
    app = testkit.FakeRuntime().context()
    with pytest.raises(LineUpError) as refused:
        await app.agent_messages.subscribe(Seen(), types=["lineup.v1.client.inventory"])
    assert refused.value.code is ErrorCode.INVALID_ARGUMENTS


async def test_include_pending_hands_what_waited_first_and_list_pages_by_cursor() -> None:
    rt = testkit.FakeRuntime()
    app = rt.context()
    rt.inbox.put(envelope(text="a"), "m-a")
    rt.inbox.put(envelope(PATCH), "m-b", instance_id=rt.instance_id)
    rt.inbox.put(envelope(text="c"), "m-c")

    first = await app.agent_messages.list(limit=2)
    rest = await app.agent_messages.list(after=first.cursor, limit=2)
    assert [m.message_id for m in first.messages] == ["m-a", "m-b"]  # both inboxes, in order
    assert [m.message_id for m in rest.messages] == ["m-c"]
    assert (await app.agent_messages.list(after=rest.cursor)).messages == ()
    assert (await app.agent_messages.list(conversation_id="conv-other")).messages == ()
    assert rt.inbox.acknowledged == []  # listing acknowledges nothing

    seen = Seen()
    await app.agent_messages.subscribe(seen, include_pending=True)
    assert seen.ids == ["m-a", "m-b", "m-c"]
    assert rt.inbox.acknowledged == ["m-a", "m-c"]  # the patch waits for the app


async def test_a_cursor_list_did_not_make_is_invalid_arguments() -> None:
    app = testkit.FakeRuntime().context()
    for bad in ("12", "c1.", "c1.x", "c1.-1"):
        with pytest.raises(LineUpError) as refused:
            await app.agent_messages.list(after=bad)
        assert refused.value.code is ErrorCode.INVALID_ARGUMENTS


async def test_a_failing_handler_leaves_the_message_waiting_and_is_handed_it_again() -> None:
    rt = testkit.FakeRuntime()
    app = rt.context()
    seen = Seen(fail=1)
    await app.agent_messages.subscribe(seen)
    text = rt.inbox.put(envelope(), "m-1")

    with pytest.raises(LineUpError) as refused:
        await app.agent_messages.dispatch((text,))
    assert refused.value.code is ErrorCode.HANDLER_FAILED
    assert rt.inbox.acknowledged == [] and seen.ids == []

    await app.agent_messages.dispatch((text,))
    assert seen.ids == ["m-1"] and rt.inbox.acknowledged == ["m-1"]


async def test_unsubscribe_ends_the_subscription_and_nothing_is_acknowledged() -> None:
    rt = testkit.FakeRuntime()
    app = rt.context()
    seen = Seen()
    unsubscribe = await app.agent_messages.subscribe(seen)
    unsubscribe()
    unsubscribe()  # twice is harmless

    await app.agent_messages.dispatch((rt.inbox.put(envelope(), "m-1"),))

    assert seen.ids == [] and rt.inbox.acknowledged == []


class Hears(MiniApp):
    app_info = AppInfo(app_scope="hears", version="1.0.0", kind="bundled-reference")

    async def start(self, app: AppContext) -> None:
        self.seen = Seen()
        self.delivered: list[str] = []
        await app.agent_messages.subscribe(self.seen, types=[TEXT])

    async def on_delivery(self, delivery: p.Delivery) -> None:
        self.delivered.append(delivery.delivery_id)


async def test_the_testkit_tells_on_delivery_and_the_subscriptions_as_the_process_does() -> None:
    app = Hears()
    rt = await testkit.start(app)
    text = rt.inbox.put(envelope(), "m-1")

    await rt.deliver(text)
    await rt.deliver(text)

    assert app.delivered == ["m-1", "m-1"]  # `on_delivery` is at least once, as before
    assert app.seen.ids == ["m-1"]  # a subscription, once
    assert rt.inbox.acknowledged == ["m-1"]


@given(st.integers(min_value=0, max_value=10**18 - 1))
def test_a_cursor_stands_for_its_inbox_position(seq: int) -> None:
    assert seq_of_cursor(cursor_of(seq)) == seq


@given(st.one_of(st.text(max_size=40), st.text(max_size=25).map(lambda t: "c1." + t)))
def test_any_other_string_is_refused_or_is_the_cursor_of_its_position(raw: str) -> None:
    digits = raw.removeprefix("c1.")
    if digits != raw and digits.isascii() and digits.isdigit() and len(digits) <= 18:
        assert cursor_of(seq_of_cursor(raw)) == f"c1.{int(digits)}"
        return
    with pytest.raises(LineUpError) as refused:
        seq_of_cursor(raw)
    assert refused.value.code is ErrorCode.INVALID_ARGUMENTS
