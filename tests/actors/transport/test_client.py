"""The AppServer client: every answer a network can give is a value or one typed LinkFailure.

The network is a real loopback server that answers anything at all, byte for byte
(`tests/support/raw_http.py`)."""

from __future__ import annotations

import socket

import pytest
import trio

from lineup.actors.kernel import ErrorCode
from lineup.actors.transport._client import AppServerClient, LinkFailure, Refused, Sent
from lineup.tests.support.raw_http import Handler, Seen, answer, raw_server
from lineup.wire import Admitted, Refusal

LOGIN = {"token": "t", "user_id": "u", "agent_id": "a", "conversation_id": "c"}
HTML = b"<!doctype html><title>Welcome! Accept the terms to use the Wi-Fi</title>"
SHORT = 0.3  # a deadline for the tests that wait one out (real time, on loopback)
WAIT = 30.0  # what no answer here should come near


def answering(reply: bytes | None) -> Handler:
    async def handle(seen: Seen, stream: trio.abc.Stream) -> bytes | None:
        return reply

    return handle


def then_closing(reply: bytes) -> Handler:
    async def handle(seen: Seen, stream: trio.abc.Stream) -> bytes | None:
        await stream.send_all(reply)
        return None

    return handle


async def login_failure(handler: Handler, deadline: float = WAIT) -> ErrorCode:
    async with raw_server(handler) as server, AppServerClient(server.url, deadline=deadline) as c:
        with pytest.raises(LinkFailure) as caught, trio.fail_after(WAIT):
            await c.login("demo", "demo")
    return caught.value.code


async def test_a_sane_login_answer_is_read_and_the_connection_kept_for_the_next() -> None:
    async with (
        raw_server(answering(answer(200, LOGIN))) as server,
        AppServerClient(server.url) as c,
    ):
        got = await c.login("demo", "demo")
        await c.login("demo", "demo")
    assert (got.token, got.conversation_id) == ("t", "c")
    assert [(s.method, s.path, s.connection) for s in server.seen] == [
        ("POST", "/v1/auth/login", 1),
        ("POST", "/v1/auth/login", 1),
    ]


async def test_a_connection_the_appserver_closed_while_idle_is_not_sent_on() -> None:
    async def answer_once(seen: Seen, stream: trio.abc.Stream) -> bytes | None:
        await stream.send_all(answer(200, LOGIN))
        return None  # and close, without saying so in a header

    async with raw_server(answer_once) as server, AppServerClient(server.url) as c:
        await c.login("demo", "demo")
        await trio.testing.wait_all_tasks_blocked()  # the server has closed its end
        await c.login("demo", "demo")
    assert [s.connection for s in server.seen] == [1, 2]


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (answer(200, HTML, "text/html; charset=utf-8"), ErrorCode.APPSERVER_PROTOCOL_ERROR),
        (answer(200, HTML), ErrorCode.APPSERVER_PROTOCOL_ERROR),  # says JSON, is not
        (answer(200, {"token": "t"}), ErrorCode.APPSERVER_PROTOCOL_ERROR),  # the wrong shape
        (answer(200, [LOGIN]), ErrorCode.APPSERVER_PROTOCOL_ERROR),
        (answer(200, {**LOGIN, "token": 7}), ErrorCode.APPSERVER_PROTOCOL_ERROR),
        (answer(302, b"", "text/html"), ErrorCode.APPSERVER_PROTOCOL_ERROR),
        (answer(404, HTML, "text/html"), ErrorCode.APPSERVER_PROTOCOL_ERROR),
        (answer(401, {"error": "invalid_credentials"}), ErrorCode.APPSERVER_UNAUTHORIZED),
        (answer(502, HTML, "text/html"), ErrorCode.APPSERVER_UNAVAILABLE),
        (None, ErrorCode.APPSERVER_UNREACHABLE),  # closed without a word
    ],
)
async def test_each_malformed_login_answer_is_one_link_failure_with_its_reason(
    reply: bytes | None, code: ErrorCode
) -> None:
    assert await login_failure(answering(reply)) is code


@pytest.mark.parametrize(
    "reply",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n",  # not HTTP at all
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: x\r\n\r\n{}",
        answer(200, LOGIN)[:-5],  # cut mid-body
    ],
)
async def test_an_answer_that_is_not_http_or_is_cut_short_is_unreachable(reply: bytes) -> None:
    assert await login_failure(then_closing(reply)) is ErrorCode.APPSERVER_UNREACHABLE


async def test_a_redirect_is_never_followed() -> None:
    portal = answer(307, b"", "text/html", {"location": "http://portal.test/login"})
    async with raw_server(answering(portal)) as server, AppServerClient(server.url) as c:
        with pytest.raises(LinkFailure) as caught:
            await c.login("demo", "demo")
    assert caught.value.code is ErrorCode.APPSERVER_PROTOCOL_ERROR
    assert [s.path for s in server.seen] == ["/v1/auth/login"]


async def test_no_connection_is_unreachable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again before the client dials it
    async with AppServerClient(f"http://127.0.0.1:{port}") as c:
        with pytest.raises(LinkFailure) as caught:
            await c.login("demo", "demo")
    assert caught.value.code is ErrorCode.APPSERVER_UNREACHABLE


async def test_a_frozen_appserver_is_a_timeout_within_the_deadline() -> None:
    async def freeze(seen: Seen, stream: trio.abc.Stream) -> bytes | None:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    started = trio.current_time()
    assert await login_failure(freeze, deadline=SHORT) is ErrorCode.APPSERVER_TIMEOUT
    assert SHORT <= trio.current_time() - started < WAIT


async def test_a_body_that_drips_is_a_timeout_not_a_wait_forever() -> None:
    async def drip(seen: Seen, stream: trio.abc.Stream) -> bytes | None:
        await stream.send_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
        await stream.send_all(b"transfer-encoding: chunked\r\n\r\n")
        while True:
            await stream.send_all(b"1\r\n \r\n")
            await trio.sleep(SHORT / 10)

    assert await login_failure(drip, deadline=SHORT) is ErrorCode.APPSERVER_TIMEOUT


async def test_a_body_over_the_limit_is_read_no_further_than_the_limit() -> None:
    flood_ended = trio.Event()

    async def flood(seen: Seen, stream: trio.abc.Stream) -> bytes | None:
        await stream.send_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n")
        chunk = b"[" * 65536
        try:
            while True:  # an endless body: it ends only when the client hangs up
                await stream.send_all(chunk)
        finally:
            flood_ended.set()

    async with raw_server(flood) as server, AppServerClient(server.url) as c:
        with pytest.raises(LinkFailure) as caught, trio.fail_after(WAIT):
            await c.sync("t", "", 0)
        with trio.fail_after(WAIT):
            await flood_ended.wait()  # the client closed the connection: the flood broke off
    assert caught.value.code is ErrorCode.APPSERVER_PROTOCOL_ERROR


async def test_a_compressed_answer_is_refused_unread() -> None:
    gzip = answer(200, b"\x1f\x8b", headers={"content-encoding": "gzip"})
    async with raw_server(answering(gzip)) as server, AppServerClient(server.url) as c:
        with pytest.raises(LinkFailure) as caught:
            await c.login("demo", "demo")
    assert caught.value.code is ErrorCode.APPSERVER_PROTOCOL_ERROR
    assert server.seen[0].headers["accept-encoding"] == "identity"


async def test_a_sync_page_with_a_poison_envelope_keeps_the_others_and_the_cursor() -> None:
    poison = '{"id": "p", "payload": ' + "[" * 50_000 + "]" * 50_000 + "}"
    body = ('{"messages": [{"id": "m1"}, ' + poison + '], "cursor": "9"}').encode()
    async with (
        raw_server(answering(answer(200, body))) as server,
        AppServerClient(server.url) as c,
    ):
        page = await c.sync("t", "4", 2500)
    assert (server.seen[0].path, server.seen[0].query) == ("/v1/sync", "cursor=4&timeout_ms=2500")
    assert page.cursor == "9"
    assert isinstance(page.items[0], Admitted)
    assert isinstance(page.items[1], Refusal)
    assert page.items[1].code is ErrorCode.ENVELOPE_TOO_DEEP


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (answer(401, {"error": "unauthorized"}), ErrorCode.APPSERVER_UNAUTHORIZED),
        (answer(200, HTML, "text/html"), ErrorCode.APPSERVER_PROTOCOL_ERROR),
        (answer(200, {"messages": "none"}), ErrorCode.APPSERVER_PROTOCOL_ERROR),
        (answer(400, {"error": "invalid_cursor"}), ErrorCode.APPSERVER_PROTOCOL_ERROR),
        (answer(503, {"error": "unavailable"}), ErrorCode.APPSERVER_UNAVAILABLE),
    ],
)
async def test_a_sync_answer_that_is_no_page_is_one_link_failure(
    reply: bytes, code: ErrorCode
) -> None:
    async with raw_server(answering(reply)) as server, AppServerClient(server.url) as c:
        with pytest.raises(LinkFailure) as caught:
            await c.sync("t", "", 0)
    assert caught.value.code is code


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        (answer(200, {"message_id": "m", "seq": 3}), Sent("m", 3)),
        (answer(400, {"error": "invalid_envelope"}), Refused("invalid_envelope")),
        (answer(413, HTML, "text/html"), Refused("http_413")),
    ],
)
async def test_a_send_is_sent_or_refused_for_good(reply: bytes, outcome: Sent | Refused) -> None:
    async with raw_server(answering(reply)) as server, AppServerClient(server.url) as c:
        assert await c.send("t", {"v": 1}, "k") == outcome


async def test_a_send_answered_with_a_portal_page_is_a_link_failure() -> None:
    async with (
        raw_server(answering(answer(200, HTML, "text/html"))) as server,
        AppServerClient(server.url) as c,
    ):
        with pytest.raises(LinkFailure) as caught:
            await c.send("t", {"v": 1}, "k")
    assert caught.value.code is ErrorCode.APPSERVER_PROTOCOL_ERROR


async def test_the_idempotency_key_token_and_body_travel_with_a_send() -> None:
    async with (
        raw_server(answering(answer(200, {"message_id": "m"}))) as server,
        AppServerClient(server.url) as c,
    ):
        assert await c.send("tok", {"v": 1}, "outbox-1") == Sent("m", None)
    sent = server.seen[0]
    assert (sent.method, sent.path, sent.body) == ("POST", "/v1/messages", b'{"v":1}')
    assert sent.headers["idempotency-key"] == "outbox-1"
    assert sent.headers["authorization"] == "Bearer tok"
    assert sent.headers["content-type"] == "application/json"
