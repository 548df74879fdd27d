"""Every endpoint of DESIGN §12 against a real devserver on 127.0.0.1."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest
import trio

from lineup.ops.devserver import MAX_ENVELOPE_BYTES, MAX_SYNC_BATCH, WireErrorCode
from lineup.tests.ops._devserver import (
    WAIT,
    Api,
    RunningServer,
    envelope,
    error_code,
    start_devserver,
)


async def test_healthz_answers_ok(api: Api) -> None:
    response = await api.call("GET", "/healthz")
    assert response.status_code == 200
    assert response.json() == {"ok": True}


# ----------------------------------------------------------------------------------- login


async def test_user_login_answers_a_token_and_the_users_conversation(api: Api) -> None:
    response = await api.call(
        "POST", "/v1/auth/login", json={"username": "alice", "password": "pw-a"}
    )
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"token", "user_id", "agent_id", "conversation_id"}
    assert (body["user_id"], body["agent_id"], body["conversation_id"]) == (
        "user-alice",
        "agent-1",
        "conv-a",
    )


@pytest.mark.parametrize(
    "credentials",
    [{"username": "alice", "password": "wrong"}, {"username": "nobody", "password": "pw-a"}],
)
async def test_user_login_with_bad_credentials_is_invalid_credentials(
    api: Api, credentials: dict[str, str]
) -> None:
    response = await api.call("POST", "/v1/auth/login", json=credentials)
    assert response.status_code == 401
    assert error_code(response) == WireErrorCode.INVALID_CREDENTIALS


@pytest.mark.parametrize("path", ["/v1/auth/login", "/v1/agent/login"])
@pytest.mark.parametrize("content", [b"not json", b"[]", b'{"username": 1}'])
async def test_a_malformed_login_body_is_invalid_request(
    api: Api, path: str, content: bytes
) -> None:
    response = await api.call("POST", path, content=content)
    assert response.status_code == 400
    assert error_code(response) == WireErrorCode.INVALID_REQUEST


async def test_agent_login_answers_a_token_and_the_agents_conversations(api: Api) -> None:
    response = await api.call(
        "POST", "/v1/agent/login", json={"agent_id": "agent-1", "secret": "secret-1"}
    )
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"token", "conversation_ids"}
    assert body["conversation_ids"] == ["conv-a", "conv-b"]


async def test_agent_login_with_a_wrong_secret_is_invalid_credentials(api: Api) -> None:
    response = await api.call(
        "POST", "/v1/agent/login", json={"agent_id": "agent-1", "secret": "secret-2"}
    )
    assert response.status_code == 401
    assert error_code(response) == WireErrorCode.INVALID_CREDENTIALS


# ------------------------------------------------------------------------------------ auth


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/sync"),
        ("POST", "/v1/messages"),
        ("GET", "/v1/agent/sync"),
        ("POST", "/v1/agent/messages"),
    ],
)
@pytest.mark.parametrize("authorization", [None, "Bearer", "Bearer not-a-token", "Basic abc"])
async def test_a_call_without_a_valid_bearer_token_is_unauthorized(
    api: Api, method: str, path: str, authorization: str | None
) -> None:
    headers = {"Idempotency-Key": "k"}
    if authorization is not None:
        headers["Authorization"] = authorization
    response = await api.call(method, path, headers=headers, json=envelope("conv-a"))
    assert response.status_code == 401
    assert error_code(response) == WireErrorCode.UNAUTHORIZED


async def test_a_user_token_does_not_open_the_agent_endpoints(api: Api) -> None:
    token = await api.user_token("alice")
    sync = await api.sync("/v1/agent/sync", token)
    post = await api.post("/v1/agent/messages", token, envelope("conv-a"), "k-1")
    assert (sync.status_code, error_code(sync)) == (401, WireErrorCode.UNAUTHORIZED)
    assert (post.status_code, error_code(post)) == (401, WireErrorCode.UNAUTHORIZED)


async def test_an_agent_token_does_not_open_the_user_endpoints(api: Api) -> None:
    token = await api.agent_token("agent-1")
    sync = await api.sync("/v1/sync", token)
    post = await api.post("/v1/messages", token, envelope("conv-a"), "k-1")
    assert (sync.status_code, error_code(sync)) == (401, WireErrorCode.UNAUTHORIZED)
    assert (post.status_code, error_code(post)) == (401, WireErrorCode.UNAUTHORIZED)


async def test_posts_and_syncs_are_answered_while_a_checkpoint_holds_its_thread(
    api: Api, server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reads and writes run on the event loop; the log's checkpoint (the slow step, with an
    fsync) on a worker thread: a post or a long poll's answer never waits for it."""
    started, release = threading.Event(), threading.Event()
    checkpoint = server.db.checkpoint

    def slow_checkpoint() -> tuple[int, int]:
        started.set()
        release.wait(WAIT)
        return checkpoint()

    monkeypatch.setattr(server.db, "checkpoint", slow_checkpoint)
    monkeypatch.setattr(type(server.db), "wants_checkpoint", property(lambda db: True))
    user = await api.user_token("alice")  # a write: the checkpoint is due
    agent = await api.agent_token("agent-1")
    try:
        with trio.fail_after(WAIT):
            await trio.to_thread.run_sync(started.wait, WAIT)
            assert started.is_set()
            posted = await api.post("/v1/messages", user, envelope("conv-a"), "k-1")
            synced = await api.sync("/v1/agent/sync", agent)
    finally:
        release.set()
    assert posted.status_code == synced.status_code == 200
    assert [m["payload"] for m in synced.json()["messages"]] == [{"markdown": "hello"}]


async def test_unknown_paths_and_methods_answer_json_error_codes(api: Api) -> None:
    missing = await api.call("GET", "/v1/nothing")
    wrong_method = await api.call("GET", "/v1/messages")
    assert (missing.status_code, error_code(missing)) == (404, WireErrorCode.NOT_FOUND)
    assert (wrong_method.status_code, error_code(wrong_method)) == (
        405,
        WireErrorCode.METHOD_NOT_ALLOWED,
    )


# -------------------------------------------------------------------------------- messages


async def test_a_user_message_reaches_the_agent_with_seq_and_the_server_stamped_sender(
    api: Api,
) -> None:
    user = await api.user_token("alice")
    agent = await api.agent_token("agent-1")
    posted = await api.post("/v1/messages", user, envelope("conv-a", id="m-1"), "out-1")
    assert posted.status_code == 200
    assert posted.json() == {"message_id": "m-1", "seq": 1}

    synced = await api.sync("/v1/agent/sync", agent)
    assert synced.status_code == 200
    [message] = synced.json()["messages"]
    assert message["id"] == "m-1"
    assert message["seq"] == 1
    assert message["sender"] == {"kind": "user", "id": "user-alice"}
    assert message["payload"] == {"markdown": "hello"}


async def test_a_user_cannot_claim_to_be_the_agent(api: Api) -> None:
    user = await api.user_token("alice")
    agent = await api.agent_token("agent-1")
    forged = envelope("conv-a", sender={"kind": "agent", "id": "agent-1"})
    assert (await api.post("/v1/messages", user, forged, "forged")).status_code == 200

    [message] = (await api.sync("/v1/agent/sync", agent)).json()["messages"]
    assert message["sender"] == {"kind": "user", "id": "user-alice"}
    # ...and it never shows up in the user's own (agent→client) stream.
    assert (await api.sync("/v1/sync", user)).json()["messages"] == []


async def test_an_agent_message_reaches_the_user_stamped_as_the_agent(api: Api) -> None:
    user = await api.user_token("alice")
    agent = await api.agent_token("agent-1")
    forged = envelope("conv-a", sender={"kind": "user", "id": "user-alice"})
    posted = await api.post("/v1/agent/messages", agent, forged, "a-1")
    assert posted.status_code == 200

    [message] = (await api.sync("/v1/sync", user)).json()["messages"]
    assert message["sender"] == {"kind": "agent", "id": "agent-1"}
    assert message["id"] == posted.json()["message_id"]


async def test_seq_increases_by_one_per_conversation_across_both_directions(api: Api) -> None:
    alice = await api.user_token("alice")
    bob = await api.user_token("bob")
    agent = await api.agent_token("agent-1")
    seqs = [
        (await api.post("/v1/messages", alice, envelope("conv-a"), "a1")).json()["seq"],
        (await api.post("/v1/agent/messages", agent, envelope("conv-a"), "g1")).json()["seq"],
        (await api.post("/v1/messages", bob, envelope("conv-b"), "b1")).json()["seq"],
        (await api.post("/v1/messages", alice, envelope("conv-a"), "a2")).json()["seq"],
    ]
    assert seqs == [1, 2, 1, 3]


async def test_a_post_without_an_idempotency_key_is_refused(api: Api) -> None:
    token = await api.user_token("alice")
    response = await api.post("/v1/messages", token, envelope("conv-a"), None)
    assert response.status_code == 400
    assert error_code(response) == WireErrorCode.IDEMPOTENCY_KEY_REQUIRED


@pytest.mark.parametrize(
    "content", [b"{", b"[]", b'{"v": 2, "type": "t", "conversation_id": "conv-a"}']
)
async def test_a_malformed_envelope_is_invalid_envelope(api: Api, content: bytes) -> None:
    token = await api.user_token("alice")
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": "k"}
    response = await api.call("POST", "/v1/messages", content=content, headers=headers)
    assert response.status_code == 400
    assert error_code(response) == WireErrorCode.INVALID_ENVELOPE


async def test_an_envelope_over_256_kib_is_too_large_and_not_stored(
    api: Api, server: RunningServer
) -> None:
    token = await api.agent_token("agent-1")
    big = envelope("conv-a", payload={"markdown": "x" * MAX_ENVELOPE_BYTES})
    response = await api.post("/v1/agent/messages", token, big, "big")
    assert response.status_code == 413
    assert error_code(response) == WireErrorCode.TOO_LARGE
    assert server.db.count_messages() == 0


async def test_an_envelope_of_just_under_256_kib_is_accepted(api: Api) -> None:
    token = await api.agent_token("agent-1")
    filler = MAX_ENVELOPE_BYTES - len(httpx.Request("POST", "/", json=envelope("conv-a")).content)
    near = envelope("conv-a", payload={"markdown": "x" * (filler - 64)})
    response = await api.post("/v1/agent/messages", token, near, "near")
    assert response.status_code == 200


# ---------------------------------------------------------------------------- idempotency


async def test_the_same_key_again_answers_the_same_and_stores_one_row(
    api: Api, server: RunningServer
) -> None:
    token = await api.user_token("alice")
    first = await api.post("/v1/messages", token, envelope("conv-a", id="m-1"), "same")
    again = await api.post("/v1/messages", token, envelope("conv-a", id="m-2"), "same")
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json() == {"message_id": "m-1", "seq": 1}
    assert server.db.count_messages() == 1


async def test_idempotency_keys_are_scoped_to_the_principal(
    api: Api, server: RunningServer
) -> None:
    alice = await api.user_token("alice")
    bob = await api.user_token("bob")
    agent = await api.agent_token("agent-1")
    await api.post("/v1/messages", alice, envelope("conv-a"), "shared")
    await api.post("/v1/messages", bob, envelope("conv-b"), "shared")
    await api.post("/v1/agent/messages", agent, envelope("conv-a"), "shared")
    assert server.db.count_messages() == 3


# --------------------------------------------------------------------------- conversations


async def test_a_user_cannot_post_into_another_users_conversation(
    api: Api, server: RunningServer
) -> None:
    alice = await api.user_token("alice")
    response = await api.post("/v1/messages", alice, envelope("conv-b"), "k")
    assert response.status_code == 403
    assert error_code(response) == WireErrorCode.FORBIDDEN_CONVERSATION
    assert server.db.count_messages() == 0


async def test_an_agent_cannot_post_into_a_conversation_it_does_not_serve(api: Api) -> None:
    agent = await api.agent_token("agent-2")
    response = await api.post("/v1/agent/messages", agent, envelope("conv-a"), "k")
    assert response.status_code == 403
    assert error_code(response) == WireErrorCode.FORBIDDEN_CONVERSATION


async def test_each_party_syncs_only_its_own_conversations(api: Api) -> None:
    alice = await api.user_token("alice")
    bob = await api.user_token("bob")
    carol = await api.user_token("carol")
    agent_1 = await api.agent_token("agent-1")
    agent_2 = await api.agent_token("agent-2")
    await api.post("/v1/agent/messages", agent_1, envelope("conv-a", id="to-alice"), "1")
    await api.post("/v1/messages", bob, envelope("conv-b", id="from-bob"), "2")
    await api.post("/v1/messages", carol, envelope("conv-c", id="from-carol"), "3")

    async def ids(path: str, token: str) -> list[str]:
        return [m["id"] for m in (await api.sync(path, token)).json()["messages"]]

    assert await ids("/v1/sync", alice) == ["to-alice"]
    assert await ids("/v1/sync", bob) == []
    assert await ids("/v1/agent/sync", agent_1) == ["from-bob"]
    assert await ids("/v1/agent/sync", agent_2) == ["from-carol"]


# ------------------------------------------------------------------------------------ sync


async def test_sync_pages_by_at_most_100_and_the_cursor_resumes_after_the_page(
    api: Api,
) -> None:
    user = await api.user_token("alice")
    agent = await api.agent_token("agent-1")
    total = MAX_SYNC_BATCH + 5
    for index in range(total):
        await api.post("/v1/agent/messages", agent, envelope("conv-a", id=f"m-{index}"), str(index))

    first = (await api.sync("/v1/sync", user)).json()
    second = (await api.sync("/v1/sync", user, cursor=first["cursor"])).json()
    third = (await api.sync("/v1/sync", user, cursor=second["cursor"])).json()
    assert len(first["messages"]) == MAX_SYNC_BATCH
    assert [m["id"] for m in first["messages"] + second["messages"]] == [
        f"m-{index}" for index in range(total)
    ]
    assert third == {"messages": [], "cursor": second["cursor"]}


async def test_an_agent_cursor_spans_all_its_conversations(api: Api) -> None:
    alice = await api.user_token("alice")
    bob = await api.user_token("bob")
    agent = await api.agent_token("agent-1")
    await api.post("/v1/messages", alice, envelope("conv-a", id="a-1"), "1")
    first = (await api.sync("/v1/agent/sync", agent)).json()
    await api.post("/v1/messages", bob, envelope("conv-b", id="b-1"), "2")
    await api.post("/v1/messages", alice, envelope("conv-a", id="a-2"), "3")
    second = (await api.sync("/v1/agent/sync", agent, cursor=first["cursor"])).json()
    assert [m["id"] for m in first["messages"]] == ["a-1"]
    assert [m["id"] for m in second["messages"]] == ["b-1", "a-2"]


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"cursor": "abc"}, WireErrorCode.INVALID_CURSOR),
        ({"timeout_ms": "-1"}, WireErrorCode.INVALID_TIMEOUT),
    ],
)
async def test_malformed_sync_parameters_are_refused(
    api: Api, params: dict[str, str], code: WireErrorCode
) -> None:
    token = await api.user_token("alice")
    response = await api.call(
        "GET", "/v1/sync", params=params, headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 400
    assert error_code(response) == code


async def test_a_long_poll_returns_as_soon_as_a_message_arrives(
    api: Api, server: RunningServer
) -> None:
    user = await api.user_token("alice")
    agent = await api.agent_token("agent-1")
    answers: list[httpx.Response] = []

    async def long_poll() -> None:
        answers.append(await api.sync("/v1/sync", user, timeout_ms=30_000))

    with trio.fail_after(WAIT):  # far below the poll's own 30 s
        async with trio.open_nursery() as nursery:
            nursery.start_soon(long_poll)
            await server.state.waiters.wait_sleeping(1)
            await api.post("/v1/agent/messages", agent, envelope("conv-a", id="wake"), "w")
    [answer] = answers
    assert [m["id"] for m in answer.json()["messages"]] == ["wake"]
    assert answer.json()["cursor"] != ""


async def test_a_long_poll_is_not_woken_by_another_conversation(
    api: Api, server: RunningServer
) -> None:
    alice = await api.user_token("alice")
    agent = await api.agent_token("agent-1")
    answers: list[httpx.Response] = []

    async def long_poll() -> None:
        answers.append(await api.sync("/v1/sync", alice, timeout_ms=300))

    with trio.fail_after(WAIT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(long_poll)
            await server.state.waiters.wait_sleeping(1)
            await api.post("/v1/agent/messages", agent, envelope("conv-b"), "elsewhere")
    assert answers[0].json() == {"messages": [], "cursor": ""}


async def test_a_long_poll_with_nothing_to_deliver_times_out_with_the_same_cursor(
    api: Api,
) -> None:
    user = await api.user_token("alice")
    agent = await api.agent_token("agent-1")
    await api.post("/v1/agent/messages", agent, envelope("conv-a"), "one")
    cursor = (await api.sync("/v1/sync", user)).json()["cursor"]

    started = trio.current_time()
    with trio.fail_after(WAIT):
        answer = await api.sync("/v1/sync", user, cursor=cursor, timeout_ms=200)
    assert trio.current_time() - started >= 0.2
    assert answer.json() == {"messages": [], "cursor": cursor}


# ------------------------------------------------------------------------- fault injection


async def test_the_fail_rate_answers_503_and_stores_nothing_for_the_failed_calls(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    server = await start_devserver(nursery, tmp_path / "f.db", fail_rate=0.5, seed=7)
    async with httpx.AsyncClient(base_url=server.url) as http:
        api = Api(http)
        login: httpx.Response | None = None
        for _ in range(50):  # login is a POST too: it fails at the same rate
            login = await api.call(
                "POST", "/v1/auth/login", json={"username": "alice", "password": "pw-a"}
            )
            if login.status_code == 200:
                break
        assert login is not None
        assert login.status_code == 200
        token = login.json()["token"]
        statuses: list[int] = []
        for index in range(40):
            response = await api.post("/v1/messages", token, envelope("conv-a"), f"k-{index}")
            statuses.append(response.status_code)
            if response.status_code == 503:
                assert error_code(response) == WireErrorCode.UNAVAILABLE
    assert set(statuses) == {200, 503}
    assert server.db.count_messages() == statuses.count(200)


async def test_a_failed_post_can_be_retried_with_the_same_key(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    server = await start_devserver(nursery, tmp_path / "f.db", fail_rate=0.5, seed=3)
    async with httpx.AsyncClient(base_url=server.url) as http:
        api = Api(http)
        token = ""
        for _ in range(50):
            login = await api.call(
                "POST", "/v1/agent/login", json={"agent_id": "agent-1", "secret": "secret-1"}
            )
            if login.status_code == 200:
                token = login.json()["token"]
                break
        answers = []
        for _ in range(50):
            response = await api.post("/v1/agent/messages", token, envelope("conv-a"), "once")
            if response.status_code == 200:
                answers.append(response.json())
            if len(answers) == 3:
                break
    assert len(answers) == 3
    assert answers[0] == answers[1] == answers[2]
    assert server.db.count_messages() == 1


async def test_the_delay_adds_latency_to_every_call(nursery: trio.Nursery, tmp_path: Path) -> None:
    server = await start_devserver(nursery, tmp_path / "d.db", delay_ms=150)
    async with httpx.AsyncClient(base_url=server.url) as http:
        started = trio.current_time()
        with trio.fail_after(WAIT):
            response = await http.post(
                "/v1/auth/login", json={"username": "alice", "password": "pw-a"}
            )
    assert response.status_code == 200
    assert trio.current_time() - started >= 0.15
