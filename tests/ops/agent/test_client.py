from __future__ import annotations

import re
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import TypedDict

import pytest
import trio

from lineup.ops.agent import UNREACHABLE, AgentClient, AppServerError
from lineup.ops.devserver import WireErrorCode
from lineup.tests.ops._devserver import WAIT, Api, RunningServer, envelope, start_devserver
from lineup.tests.support.raw_http import Seen, answer, raw_server


class Backoff(TypedDict):
    """AgentClient's backoff keywords."""

    backoff_s: float
    backoff_cap_s: float


FAST: Backoff = {"backoff_s": 0.001, "backoff_cap_s": 0.01}


@pytest.fixture
async def client(server: RunningServer) -> AsyncIterator[AgentClient]:
    async with AgentClient(server.url, **FAST) as agent:
        with trio.fail_after(WAIT):
            await agent.login("agent-1", "secret-1")
        yield agent


async def _user_messages(api: Api, username: str = "alice") -> list[dict[str, object]]:
    token = await api.user_token(username)
    messages = (await api.sync("/v1/sync", token)).json()["messages"]
    assert isinstance(messages, list)
    return messages


async def test_login_answers_the_agents_conversations(server: RunningServer) -> None:
    async with AgentClient(server.url) as agent:
        with trio.fail_after(WAIT):
            assert await agent.login("agent-1", "secret-1") == ["conv-a", "conv-b"]
    assert agent.conversation_ids == ("conv-a", "conv-b")


async def test_a_wrong_secret_is_invalid_credentials_without_retries(
    server: RunningServer,
) -> None:
    async with AgentClient(server.url, **FAST) as agent:
        with trio.fail_after(WAIT), pytest.raises(AppServerError) as caught:
            await agent.login("agent-1", "nope")
    assert (caught.value.code, caught.value.status) == (WireErrorCode.INVALID_CREDENTIALS, 401)


async def test_a_call_before_login_is_unauthorized(server: RunningServer) -> None:
    async with AgentClient(server.url) as agent:
        with pytest.raises(AppServerError) as caught:
            await agent.sync()
    assert caught.value.code == WireErrorCode.UNAUTHORIZED


async def test_say_sends_a_text_envelope_as_the_agent(client: AgentClient, api: Api) -> None:
    with trio.fail_after(WAIT):
        answer = await client.say("conv-a", "**hi**")
        [message] = await _user_messages(api)
    assert answer == {"message_id": message["id"], "seq": 1}
    assert message["type"] == "lineup.v1.text"
    assert message["v"] == 1
    assert message["payload"] == {"markdown": "**hi**"}
    assert message["sender"] == {"kind": "agent", "id": "agent-1"}
    stamp = message["timestamp"]
    assert isinstance(stamp, str)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp)
    datetime.fromisoformat(stamp.replace("Z", "+00:00"))


async def test_say_with_the_same_key_twice_stores_one_message(
    client: AgentClient, server: RunningServer
) -> None:
    with trio.fail_after(WAIT):
        first = await client.say("conv-a", "hello", idempotency_key="greeting:conv-a")
        again = await client.say("conv-a", "hello", idempotency_key="greeting:conv-a")
    assert first == again
    assert server.db.count_messages() == 1


async def test_call_tool_sends_the_call_payload_and_reports_the_call_id(
    client: AgentClient, api: Api
) -> None:
    with trio.fail_after(WAIT):
        generated = await client.call_tool("conv-a", "interaction.notice", {"text": "x"}, 3)
        chosen = await client.call_tool("conv-a", "notes.add", {}, "rev-9", call_id="call-7")
        first, second = await _user_messages(api)
    assert generated["call_id"]
    assert first["type"] == second["type"] == "lineup.v1.tool.call"
    assert first["payload"] == {
        "call_id": generated["call_id"],
        "tool": "interaction.notice",
        "inventory_revision": "3",
        "input": {"text": "x"},
    }
    assert chosen["call_id"] == "call-7"
    assert second["payload"] == {
        "call_id": "call-7",
        "tool": "notes.add",
        "inventory_revision": "rev-9",
        "input": {},
    }


async def test_dismiss_sends_the_interaction_dismiss(client: AgentClient, api: Api) -> None:
    with trio.fail_after(WAIT):
        await client.dismiss("conv-a", "ctl-1", "call-1")
        [message] = await _user_messages(api)
    assert message["type"] == "lineup.v1.interaction.dismiss"
    assert message["payload"] == {"control_id": "ctl-1", "call_id": "call-1"}


async def test_sync_delivers_client_messages_and_resumes_after_the_cursor(
    client: AgentClient, api: Api
) -> None:
    alice = await api.user_token("alice")
    await api.post("/v1/messages", alice, envelope("conv-a", id="u-1"), "1")
    with trio.fail_after(WAIT):
        messages, cursor = await client.sync("", 0)
        await api.post("/v1/messages", alice, envelope("conv-a", id="u-2"), "2")
        later, _ = await client.sync(cursor, 1_000)
    assert [m["id"] for m in messages] == ["u-1"]
    assert [m["id"] for m in later] == ["u-2"]


async def test_a_foreign_conversation_is_refused_with_its_code(client: AgentClient) -> None:
    with trio.fail_after(WAIT), pytest.raises(AppServerError) as caught:
        await client.say("conv-c", "hi")
    assert (caught.value.code, caught.value.status) == (WireErrorCode.FORBIDDEN_CONVERSATION, 403)


async def test_injected_503s_are_retried_and_store_each_message_once(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    server = await start_devserver(nursery, tmp_path / "f.db", fail_rate=0.5, seed=11)
    async with AgentClient(server.url, attempts=20, **FAST) as agent:
        with trio.fail_after(WAIT):
            await agent.login("agent-1", "secret-1")
            for index in range(10):
                await agent.say("conv-a", f"line {index}")
    assert server.db.count_messages() == 10


# ----------------------------------------------------------------- retries, on a fake network


class FlakyNetwork:
    """Fails the first `failures` requests (with `status`, or by closing the connection without
    an answer when None), then answers as an AppServer would."""

    def __init__(self, failures: int, status: int | None) -> None:
        self.failures = failures
        self.status = status
        self.requests: list[Seen] = []

    async def __call__(self, seen: Seen, stream: trio.abc.Stream) -> bytes | None:
        self.requests.append(seen)
        if len(self.requests) <= self.failures:
            return None if self.status is None else answer(self.status, {"error": "unavailable"})
        if seen.path == "/v1/agent/login":
            return answer(200, {"token": "t", "conversation_ids": ["conv-a"]})
        return answer(200, {"message_id": "m", "seq": 1})


@asynccontextmanager
async def logged_in(network: FlakyNetwork, attempts: int = 6) -> AsyncIterator[AgentClient]:
    async with (
        raw_server(network) as server,
        AgentClient(server.url, attempts=attempts, **FAST) as agent,
    ):
        await agent.login("agent-1", "secret-1")
        network.requests.clear()
        yield agent


@pytest.mark.parametrize("status", [None, 500, 503])
async def test_a_post_is_retried_with_the_same_idempotency_key_until_it_succeeds(
    status: int | None,
) -> None:
    network = FlakyNetwork(0, status)
    async with logged_in(network) as agent:
        network.failures = 3
        with trio.fail_after(WAIT):
            said = await agent.say("conv-a", "hi")
    assert said == {"message_id": "m", "seq": 1}
    keys = {request.headers["idempotency-key"] for request in network.requests}
    bodies = {request.body for request in network.requests}
    assert len(network.requests) == 4
    assert len(keys) == len(bodies) == 1


async def test_retries_are_bounded_and_report_the_last_failure() -> None:
    refused = FlakyNetwork(0, None)
    unavailable = FlakyNetwork(0, 503)
    codes = []
    for network in (refused, unavailable):
        async with logged_in(network, attempts=3) as agent:
            network.failures = 100
            with trio.fail_after(WAIT), pytest.raises(AppServerError) as caught:
                await agent.say("conv-a", "hi")
        codes.append((caught.value.code, caught.value.status))
    assert codes == [(UNREACHABLE, None), (WireErrorCode.UNAVAILABLE, 503)]
    assert len(refused.requests) == len(unavailable.requests) == 3


async def test_a_4xx_is_never_retried() -> None:
    network = FlakyNetwork(0, 409)
    async with logged_in(network) as agent:
        network.failures = 1
        with trio.fail_after(WAIT), pytest.raises(AppServerError) as caught:
            await agent.say("conv-a", "hi")
    assert caught.value.status == 409
    assert len(network.requests) == 1


async def test_an_appserver_that_is_not_there_is_unreachable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again before the client dials it
    async with AgentClient(f"http://127.0.0.1:{port}", attempts=2, **FAST) as agent:
        with trio.fail_after(WAIT), pytest.raises(AppServerError) as caught:
            await agent.login("agent-1", "secret-1")
    assert caught.value.code == UNREACHABLE
