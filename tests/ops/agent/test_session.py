"""The console's script semantics over a fake client: what a wait may match, and how a
refused or unanswered call fails the script, naming its step. Time is trio's mock clock."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing

from lineup.ops.agent._session import Inbox, Script, Session, StepFailed

Message = dict[str, Any]
TEXT = "lineup.v1.text"
INVENTORY = "lineup.v1.client.inventory"
TIMEOUT = 10.0


def text(markdown: str) -> Message:
    return {"type": TEXT, "payload": {"markdown": markdown}}


def inventory(revision: str) -> Message:
    return {"type": INVENTORY, "payload": {"revision": revision, "tools": []}}


def receipt(call_id: str) -> Message:
    return {"type": "lineup.v1.tool.receipt", "payload": {"call_id": call_id, "status": "accepted"}}


def result(call_id: str) -> Message:
    return {"type": "lineup.v1.tool.result", "payload": {"call_id": call_id, "result": {}}}


def refusal(call_id: str, pointer: str | None = "/title") -> Message:
    payload = {"call_id": call_id, "code": "tool_input_invalid", "pointer": pointer}
    return {"type": "lineup.v1.tool.error", "payload": payload}


class FakeAgent:
    """The client side, answering each call with `answer(call_id)` once the call is sent."""

    def __init__(
        self, inbox: Inbox, nursery: trio.Nursery, answer: Callable[[str], list[Message]]
    ) -> None:
        self.inbox, self.nursery, self.answer = inbox, nursery, answer
        self.moves: list[tuple[str, Any]] = []

    async def say(
        self, conversation_id: str, markdown: str, *, app_session_context: str | None = None
    ) -> dict[str, Any]:
        said = markdown if app_session_context is None else (markdown, app_session_context)
        self.moves.append(("say", said))
        return {"seq": len(self.moves)}

    async def call_tool(
        self,
        conversation_id: str,
        tool: str,
        input: dict[str, Any],
        inventory_revision: str | int,
        call_id: str | None = None,
        *,
        app_session_context: str | None = None,
    ) -> dict[str, Any]:
        call_id = call_id or f"call-{len(self.moves) + 1}"
        self.moves.append(("call", (tool, call_id, inventory_revision)))
        self.nursery.start_soon(self._reply, self.answer(call_id))
        return {"seq": len(self.moves), "call_id": call_id}

    async def dismiss(self, conversation_id: str, control_id: str, call_id: str) -> dict[str, Any]:
        self.moves.append(("dismiss", (control_id, call_id)))
        return {"seq": len(self.moves)}

    async def _reply(self, messages: list[Message]) -> None:
        for message in messages:
            await trio.sleep(0.1)  # the client answers a little later (mock clock)
            self.inbox.add(message)


def accepts(call_id: str) -> list[Message]:
    return [receipt(call_id), result(call_id)]


async def run(
    nursery: trio.Nursery,
    steps: list[Any],
    answer: Callable[[str], list[Message]] = accepts,
    inbox: Inbox | None = None,
) -> FakeAgent:
    inbox = inbox or Inbox()
    if inbox.latest_revision() is None:
        inbox.add(inventory("7"))
    agent = FakeAgent(inbox, nursery, answer)
    lines = [step if isinstance(step, str) else json.dumps(step) for step in steps]
    await Script(Session(agent, "conv-1", inbox, TIMEOUT)).run(lines)
    return agent


async def failure(nursery: trio.Nursery, steps: list[Any], **kwargs: Any) -> str:
    with pytest.raises(StepFailed) as caught:
        await run(nursery, steps, **kwargs)
    return str(caught.value)


async def test_a_wait_does_not_match_a_message_from_before_its_step(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    inbox = Inbox()
    inbox.add(text("history"))
    inbox.history = 1
    inbox.add(text("arrived before the script started"))
    steps = [{"say": "hi"}, {"wait": {"type": "text", "timeout": 2}}]
    message = await failure(nursery, steps, inbox=inbox)
    assert message == (
        'script line 2: {"wait": {"type": "text", "timeout": 2}}: '
        "timed out after 2 s waiting for text"
    )


async def test_a_wait_matches_what_arrives_after_the_last_move_each_message_once(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    inbox = Inbox()
    inbox.add(text("old"))

    async def user() -> None:
        await trio.sleep(1)
        inbox.add(text("one"))
        inbox.add(text("two"))

    nursery.start_soon(user)
    steps = [
        {"say": "hi"},
        {"wait": {"type": "text"}},
        {"expect_text": "one"},
        {"wait": {"type": "lineup.v1.text"}},
        {"expect_text": "two"},
    ]
    await run(nursery, steps, inbox=inbox)
    assert "old" not in json.dumps(inbox.last_matched)


async def test_a_wait_for_a_result_fails_at_once_when_the_call_is_refused_naming_the_step(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    steps = [
        {"call": {"tool": "t.open", "input": {}}},
        "# the result, please",
        {"wait": {"type": "tool.result"}},
    ]
    started = trio.current_time()
    message = await failure(nursery, steps, answer=lambda c: [refusal(c, "/fields/0/max")])
    assert message == (
        'script line 3: {"wait": {"type": "tool.result"}}: '
        "refused tool_input_invalid at /fields/0/max where tool.result was expected"
    )
    assert trio.current_time() - started < TIMEOUT  # at once, not at the timeout


async def test_a_refused_call_no_wait_asked_about_fails_the_script_naming_the_call(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    steps = [{"call": {"tool": "t.open", "input": {}}}, {"say": "done"}]
    message = await failure(nursery, steps, answer=lambda c: [refusal(c, "")])
    assert message == (
        'script line 1: {"call": {"tool": "t.open", "input": {}}}: refused tool_input_invalid at ""'
    )


async def test_a_refusal_the_script_waits_for_is_no_failure(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    steps = [{"call": {"tool": "t.open", "input": {}}}, {"wait": {"type": "tool.error"}}]
    await run(nursery, steps, answer=lambda c: [refusal(c)])
    message = await failure(nursery, steps)  # ... but a result where a refusal was expected is
    assert message.startswith('script line 2: {"wait": {"type": "tool.error"}}: the call got')


async def test_a_call_nobody_answers_fails_the_script_at_its_end_naming_the_call(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    steps = [{"call": {"tool": "t.open", "input": {}, "call_id": "c-9"}}]
    message = await failure(nursery, steps, answer=lambda c: [])
    assert message == (
        'script line 1: {"call": {"tool": "t.open", "input": {}, "call_id": "c-9"}}: '
        "no answer to c-9 within 10 s"
    )


async def test_a_timed_out_wait_for_a_result_names_the_step_and_the_call(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    steps = [
        {"call": {"tool": "t.open", "input": {}, "call_id": "c-1"}},
        {"wait": {"type": "tool.result", "timeout": 3}},
    ]
    message = await failure(nursery, steps, answer=lambda c: [receipt(c)])
    assert message == (
        'script line 2: {"wait": {"type": "tool.result", "timeout": 3}}: '
        "timed out after 3 s waiting for tool.result of c-1"
    )


async def test_a_calls_messages_are_matched_by_call_even_when_they_came_before_the_wait(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    steps = [
        {"call": {"tool": "t.open", "input": {}, "call_id": "c-1"}},
        {"call": {"tool": "t.open", "input": {}, "call_id": "c-2"}},
        {"wait": {"type": "tool.result"}},  # c-2's, the last call
        {"wait": {"type": "tool.receipt", "call_id": "c-1"}},
        {"wait": {"type": "tool.result", "call_id": "c-1"}},
    ]
    agent = await run(nursery, steps)
    assert [move for move, _ in agent.moves] == ["call", "call"]


async def test_a_call_waits_for_the_first_inventory_and_uses_its_revision(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    inbox = Inbox()
    agent = FakeAgent(inbox, nursery, accepts)
    session = Session(agent, "conv-1", inbox, TIMEOUT)

    async def client_connects() -> None:
        await trio.sleep(1)
        inbox.add(inventory("12"))

    nursery.start_soon(client_connects)
    assert await session.call("t.open", {}, None, "c-1") == "c-1"
    assert agent.moves == [("call", ("t.open", "c-1", "12"))]
    with pytest.raises(StepFailed, match="no inventory from the client within 10 s"):
        await Session(agent, "conv-1", Inbox(), TIMEOUT).call("t.open", {}, None)


@pytest.mark.parametrize(
    "step",
    [
        {"wait": {"type": "tool.result"}},  # of no call
        {"wait": {"type": "tool.resul"}},
        {"wait": {"type": "text", "timeout": True}},
        {"wait": {"type": "text", "call_id": 3}},
    ],
)
async def test_a_malformed_wait_fails_naming_the_step(nursery: trio.Nursery, step: Any) -> None:
    message = await failure(nursery, [step])
    assert message.startswith(f"script line 1: {json.dumps(step)}: ")


async def test_a_say_may_name_the_app_sub_session_it_is_a_short_result_of(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    steps = [
        {"say": "plain"},
        {"say": {"markdown": "60 %", "app_session_context": "lu:app_session:task-dashboard:x"}},
    ]
    agent = await run(nursery, steps)
    assert agent.moves == [("say", "plain"), ("say", ("60 %", "lu:app_session:task-dashboard:x"))]


@pytest.mark.parametrize(
    "step",
    [
        {"say": {"markdown": 3}},
        {"say": {"markdown": ""}},
        {"say": {"markdown": "x", "app_session_context": 7}},
    ],
)
async def test_a_malformed_say_fails_naming_the_step(nursery: trio.Nursery, step: Any) -> None:
    message = await failure(nursery, [step])
    assert message.startswith(f"script line 1: {json.dumps(step)}: ")
