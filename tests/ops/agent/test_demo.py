from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

from lineup.actors.kernel import ActorContext, ActorKind, Bus, Envelope, Identity, Message
from lineup.ops.agent import GREETING, DemoAgent, DemoAgentActor
from lineup.ops.agent.demo import echo
from lineup.tests.ops._devserver import WAIT, Api, RunningServer, envelope


async def _until(api: Api, token: str, count: int) -> list[dict[str, Any]]:
    """Long-poll the user's stream until it holds `count` messages (from the start)."""
    messages: list[dict[str, Any]] = []
    cursor = ""
    with trio.fail_after(WAIT):
        while len(messages) < count:
            answer = (await api.sync("/v1/sync", token, cursor=cursor, timeout_ms=2_000)).json()
            messages += answer["messages"]
            cursor = answer["cursor"]
    return messages


def _user_text(message_id: str, markdown: str) -> dict[str, Any]:
    return envelope("conv-a", id=message_id, payload={"markdown": markdown})


def test_the_greeting_has_bold_a_list_and_a_link() -> None:
    assert "**" in GREETING
    assert "\n- " in GREETING
    assert "](https://" in GREETING


def test_the_echo_quotes_every_line() -> None:
    assert echo("one\n\ntwo") == "You said:\n\n> one\n>\n> two"


async def test_it_greets_once_across_two_runs_and_answers_each_message_once(
    server: RunningServer, api: Api
) -> None:
    alice = await api.user_token("alice")
    bob = await api.user_token("bob")

    async with trio.open_nursery() as first_run:
        agent = DemoAgent(server.url, "agent-1", "secret-1", sync_timeout_ms=1_000)
        with trio.fail_after(WAIT):
            await first_run.start(agent.run)
        await api.post("/v1/messages", alice, _user_text("u-1", "first"), "u-1")
        await _until(api, alice, 2)  # the greeting and the answer to u-1
        first_run.cancel_scope.cancel()

    async with trio.open_nursery() as second_run:
        # A fresh agent: its cursor starts over, so it replays u-1 before it sees u-2.
        again = DemoAgent(server.url, "agent-1", "secret-1", sync_timeout_ms=1_000)
        with trio.fail_after(WAIT):
            await second_run.start(again.run)
        await api.post("/v1/messages", alice, _user_text("u-2", "second"), "u-2")
        await _until(api, alice, 3)
        second_run.cancel_scope.cancel()

    texts = [m["payload"]["markdown"] for m in await _until(api, alice, 3)]
    assert texts == [GREETING, echo("first"), echo("second")]
    assert server.db.count_messages("conv-a") == 5  # 2 from alice, 3 from the agent
    assert [m["payload"]["markdown"] for m in await _until(api, bob, 1)] == [GREETING]
    assert server.db.count_messages("conv-b") == 1


async def test_it_ignores_everything_but_user_text(server: RunningServer, api: Api) -> None:
    alice = await api.user_token("alice")
    async with trio.open_nursery() as run:
        agent = DemoAgent(server.url, "agent-1", "secret-1", sync_timeout_ms=1_000)
        with trio.fail_after(WAIT):
            await run.start(agent.run)
        inventory = envelope("conv-a", type="lineup.v1.client.inventory", payload={"revision": 1})
        await api.post("/v1/messages", alice, inventory, "inv")
        await api.post("/v1/messages", alice, _user_text("u-1", "hi"), "u-1")
        messages = await _until(api, alice, 2)
        run.cancel_scope.cancel()
    assert [m["payload"]["markdown"] for m in messages] == [GREETING, echo("hi")]


async def _nothing(env: Envelope) -> Message | None:
    return None


async def test_the_actor_runs_the_demo_agent_from_its_config(
    nursery: trio.Nursery, server: RunningServer, api: Api, tmp_path: Path
) -> None:
    identity = Identity(ActorKind.DEV, "demo_agent")
    config = {
        "demo_agent": {
            "appserver_url": server.url,
            "agent_id": "agent-1",
            "agent_secret": "secret-1",
        }
    }
    actor = DemoAgentActor(ActorContext(identity, 0, tmp_path, config, Bus(identity, _nothing)))
    assert actor.kind is ActorKind.DEV
    with trio.fail_after(WAIT):
        await nursery.start(actor.run)
    alice = await api.user_token("alice")
    assert [m["payload"]["markdown"] for m in await _until(api, alice, 1)] == [GREETING]


def test_the_demo_agent_loads_no_http_server() -> None:
    # The zygote that forks it loads no hypercorn or starlette (the devserver's lane does).
    code = (
        "import sys, lineup.ops.agent.demo\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'hypercorn', 'starlette'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


_TOOLS = [{"method": m} for m in ("interaction.choice", "interaction.confirm")]


async def test_it_tours_the_interactions_through_a_real_appserver_and_never_asks_twice(
    server: RunningServer, api: Api
) -> None:
    """The test plays the runtime: it posts the client's envelopes as the user's client does."""
    alice = await api.user_token("alice")
    inventory = envelope(
        "conv-a", type="lineup.v1.client.inventory", payload={"revision": "3", "tools": _TOOLS}
    )

    async def agent_run(steps: int) -> list[dict[str, Any]]:
        async with trio.open_nursery() as run:
            agent = DemoAgent(server.url, "agent-1", "secret-1", sync_timeout_ms=1_000)
            with trio.fail_after(WAIT):
                await run.start(agent.run)
            messages = await _until(api, alice, steps)
            run.cancel_scope.cancel()
        return messages

    await api.post("/v1/messages", alice, inventory, "inv")
    greeting, menu = await agent_run(2)
    assert greeting["payload"]["markdown"] == GREETING
    assert menu["type"] == "lineup.v1.tool.call"
    assert menu["payload"]["tool"] == "interaction.choice"
    assert menu["payload"]["inventory_revision"] == "3"
    menu_id = menu["payload"]["call_id"]
    answer = {"call_id": menu_id, "result": {"action_ids": ["confirm"]}}
    await api.post("/v1/messages", alice, envelope("conv-a", type=_RESULT, payload=answer), "r1")
    *_, confirm = await agent_run(3)
    assert confirm["payload"]["tool"] == "interaction.confirm"
    yes = {"call_id": confirm["payload"]["call_id"], "result": {"approved": True}}
    await api.post("/v1/messages", alice, envelope("conv-a", type=_RESULT, payload=yes), "r2")
    *_, said, again = await agent_run(5)
    assert said["payload"]["markdown"] == "You answered **yes**."
    assert again["payload"]["tool"] == "interaction.choice"
    assert again["payload"]["call_id"] not in (menu_id, confirm["payload"]["call_id"])
    expired = {"call_id": again["payload"]["call_id"], "code": "operation_expired"}
    await api.post("/v1/messages", alice, envelope("conv-a", type=_ERROR, payload=expired), "e1")
    *_, told = await agent_run(6)
    assert "expired" in told["payload"]["markdown"]
    # Three restarts replayed the whole history: the Agent's 6 moves are each stored once.
    assert server.db.count_messages("conv-a") == 6 + 4


_RESULT, _ERROR = "lineup.v1.tool.result", "lineup.v1.tool.error"


def test_the_greeting_bolds_only_its_welcome() -> None:
    # The Shell's first test finds the welcome as the greeting's one <strong>.
    assert GREETING.count("**") == 2
