"""The chat (`miniapps/chat/_app.py`) on the SDK's fake runtime: a burst of deliveries is shown
in one render and acknowledged in one request, and deliveries whose acknowledgement was lost
are shown again, once."""

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
    return [item["id"] for item in view["items"]]


async def test_a_burst_is_shown_in_one_render_and_acknowledged_in_one_request() -> None:
    chat = Chat()
    runtime = await testkit.start(chat, app_scope="chat", instance_id="chat")
    sent = counting(runtime)
    burst = tuple(runtime.inbox.put(text(n), f"d{n}") for n in range(50))

    await chat.on_deliveries(burst)

    assert sent == [p.ViewUpdateRequest.TYPE, p.InboxAckManyRequest.TYPE]
    assert shown(runtime) == [f"d{n}" for n in range(50)]
    assert runtime.inbox.acknowledged == [f"d{n}" for n in range(50)]
    assert runtime.inbox.pending == {}


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
