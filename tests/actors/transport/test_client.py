"""The AppServer client: every answer a network can give is a value or one typed LinkFailure."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import httpx
import pytest
import trio

from lineup.actors.kernel import ErrorCode
from lineup.actors.transport._client import (
    REQUEST_DEADLINE,
    AppServerClient,
    LinkFailure,
    Refused,
    Sent,
)
from lineup.wire import MAX_PAGE_BYTES, Admitted, Refusal

Handler = Callable[[httpx.Request], Coroutine[Any, Any, httpx.Response]]
LOGIN = {"token": "t", "user_id": "u", "agent_id": "a", "conversation_id": "c"}
HTML = b"<!doctype html><title>Welcome! Accept the terms to use the Wi-Fi</title>"


def client(handler: Handler) -> AppServerClient:
    return AppServerClient("http://appserver.test", transport=httpx.MockTransport(handler))


def answer(status: int, body: object, content_type: str = "application/json") -> Handler:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()

    async def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=raw, headers={"content-type": content_type})

    return handle


async def login_failure(handler: Handler) -> ErrorCode:
    async with client(handler) as c:
        with pytest.raises(LinkFailure) as caught:
            await c.login("demo", "demo")
    return caught.value.code


async def test_a_sane_login_answer_is_read() -> None:
    async with client(answer(200, LOGIN)) as c:
        got = await c.login("demo", "demo")
    assert (got.token, got.conversation_id) == ("t", "c")


@pytest.mark.parametrize(
    ("handler", "code"),
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
    ],
)
async def test_each_malformed_login_answer_is_one_link_failure_with_its_reason(
    handler: Handler, code: ErrorCode
) -> None:
    assert await login_failure(handler) is code


async def test_a_redirect_is_never_followed() -> None:
    seen: list[str] = []

    async def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(307, headers={"location": "http://portal.test/login"})

    assert await login_failure(handle) is ErrorCode.APPSERVER_PROTOCOL_ERROR
    assert seen == ["/v1/auth/login"]


async def test_no_connection_is_unreachable() -> None:
    async def handle(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    assert await login_failure(handle) is ErrorCode.APPSERVER_UNREACHABLE


async def test_a_frozen_appserver_is_a_timeout_within_the_deadline(autojump_clock: object) -> None:
    async def handle(request: httpx.Request) -> httpx.Response:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    started = trio.current_time()
    assert await login_failure(handle) is ErrorCode.APPSERVER_TIMEOUT
    assert trio.current_time() - started == pytest.approx(REQUEST_DEADLINE)


async def test_a_body_that_drips_is_a_timeout_not_a_wait_forever(autojump_clock: object) -> None:
    async def drip() -> AsyncIterator[bytes]:
        while True:
            yield b" "
            await trio.sleep(0.5)

    async def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=drip(), headers={"content-type": "application/json"})

    assert await login_failure(handle) is ErrorCode.APPSERVER_TIMEOUT


class Flood(httpx.AsyncByteStream):
    """An endless body, as a server that never stops sending; it ends only when closed."""

    def __init__(self) -> None:
        self.sent = 0
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunk = b"[" * 65536
        while not self.closed:
            self.sent += len(chunk)
            yield chunk

    async def aclose(self) -> None:
        self.closed = True


async def test_a_body_over_the_limit_is_read_no_further_than_the_limit() -> None:
    flood = Flood()

    async def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=flood, headers={"content-type": "application/json"})

    async with client(handle) as c:
        with pytest.raises(LinkFailure) as caught:
            await c.sync("t", "", 0)
    assert caught.value.code is ErrorCode.APPSERVER_PROTOCOL_ERROR
    assert flood.closed
    assert flood.sent <= MAX_PAGE_BYTES + 2 * 65536


async def test_a_compressed_answer_is_refused_unread() -> None:
    async def handle(request: httpx.Request) -> httpx.Response:
        assert request.headers["accept-encoding"] == "identity"
        headers = {"content-type": "application/json", "content-encoding": "gzip"}
        return httpx.Response(200, content=b"\x1f\x8b", headers=headers)

    assert await login_failure(handle) is ErrorCode.APPSERVER_PROTOCOL_ERROR


async def test_a_sync_page_with_a_poison_envelope_keeps_the_others_and_the_cursor() -> None:
    poison = '{"id": "p", "payload": ' + "[" * 50_000 + "]" * 50_000 + "}"
    body = ('{"messages": [{"id": "m1"}, ' + poison + '], "cursor": "9"}').encode()
    async with client(answer(200, body)) as c:
        page = await c.sync("t", "", 0)
    assert page.cursor == "9"
    assert isinstance(page.items[0], Admitted)
    assert isinstance(page.items[1], Refusal)
    assert page.items[1].code is ErrorCode.ENVELOPE_TOO_DEEP


@pytest.mark.parametrize(
    ("handler", "code"),
    [
        (answer(401, {"error": "unauthorized"}), ErrorCode.APPSERVER_UNAUTHORIZED),
        (answer(200, HTML, "text/html"), ErrorCode.APPSERVER_PROTOCOL_ERROR),
        (answer(200, {"messages": "none"}), ErrorCode.APPSERVER_PROTOCOL_ERROR),
        (answer(400, {"error": "invalid_cursor"}), ErrorCode.APPSERVER_PROTOCOL_ERROR),
        (answer(503, {"error": "unavailable"}), ErrorCode.APPSERVER_UNAVAILABLE),
    ],
)
async def test_a_sync_answer_that_is_no_page_is_one_link_failure(
    handler: Handler, code: ErrorCode
) -> None:
    async with client(handler) as c:
        with pytest.raises(LinkFailure) as caught:
            await c.sync("t", "", 0)
    assert caught.value.code is code


async def test_a_send_is_sent_refused_for_good_or_a_link_failure() -> None:
    async with client(answer(200, {"message_id": "m", "seq": 3})) as c:
        assert await c.send("t", {"v": 1}, "k") == Sent("m", 3)
    async with client(answer(400, {"error": "invalid_envelope"})) as c:
        assert await c.send("t", {"v": 1}, "k") == Refused("invalid_envelope")
    async with client(answer(413, HTML, "text/html")) as c:
        assert await c.send("t", {"v": 1}, "k") == Refused("http_413")
    async with client(answer(200, HTML, "text/html")) as c:
        with pytest.raises(LinkFailure) as caught:
            await c.send("t", {"v": 1}, "k")
    assert caught.value.code is ErrorCode.APPSERVER_PROTOCOL_ERROR


async def test_the_idempotency_key_and_token_travel_with_a_send() -> None:
    async def handle(request: httpx.Request) -> httpx.Response:
        assert request.headers["idempotency-key"] == "outbox-1"
        assert request.headers["authorization"] == "Bearer tok"
        return httpx.Response(200, json={"message_id": "m"})

    async with client(handle) as c:
        assert await c.send("tok", {"v": 1}, "outbox-1") == Sent("m", None)
