"""The devserver's own HTTP/1.1 server (`_http`), byte for byte over a real socket."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import trio

from lineup.ops.devserver import WireErrorCode
from lineup.tests.ops._devserver import WAIT, RunningServer


async def _connect(server: RunningServer) -> trio.SocketStream:
    url = urlsplit(server.url)
    assert url.hostname is not None and url.port is not None
    return await trio.open_tcp_stream(url.hostname, url.port)


async def _answers(stream: trio.SocketStream, count: int) -> list[tuple[int, dict[str, object]]]:
    """Read `count` answers (each with a Content-Length) off the stream: (status, JSON)."""
    buffer = b""
    answers: list[tuple[int, dict[str, object]]] = []
    with trio.fail_after(WAIT):
        while len(answers) < count:
            head, sep, rest = buffer.partition(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            fields = dict(line.lower().partition(b":")[::2] for line in lines[1:])
            length = int(fields[b"content-length"]) if b"content-length" in fields else None
            if sep and length is not None and len(rest) >= length:
                answers.append((int(lines[0].split()[1]), json.loads(rest[:length])))
                buffer = rest[length:]
                continue
            data = await stream.receive_some(65536)
            assert data, "closed before the answer"
            buffer += data
    return answers


async def _closed(stream: trio.SocketStream) -> bool:
    with trio.fail_after(WAIT):
        return await stream.receive_some(65536) == b""


async def test_a_request_that_is_not_http_is_answered_400_and_the_connection_closed(
    server: RunningServer,
) -> None:
    async with await _connect(server) as stream:
        await stream.send_all(b"HELLO THERE\r\n\r\n")
        [(status, body)] = await _answers(stream, 1)
        assert (status, body) == (400, {"error": WireErrorCode.INVALID_REQUEST.value})
        assert await _closed(stream)


async def test_a_body_refused_before_it_was_read_leaves_the_connection_usable(
    server: RunningServer,
) -> None:
    """An unauthorized POST is answered before its body is read; the body is read past, so the
    next request on the same connection is answered, not taken for the body's bytes."""
    body = json.dumps({"padding": "x" * 100_000}).encode()
    refused = (
        b"POST /v1/messages HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    health = b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"
    async with await _connect(server) as stream:
        await stream.send_all(refused + health)
        answers = await _answers(stream, 2)
    assert answers == [(401, {"error": WireErrorCode.UNAUTHORIZED.value}), (200, {"ok": True})]


async def test_a_client_that_asks_to_close_gets_its_answer_then_the_close(
    server: RunningServer,
) -> None:
    async with await _connect(server) as stream:
        await stream.send_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        assert await _answers(stream, 1) == [(200, {"ok": True})]
        assert await _closed(stream)
