"""The runtime's HTTP/1.1 client (`lineup.wire.client`) against servers that do what real ones
may: here, answer a request before reading its body, then close."""

from __future__ import annotations

from functools import partial

import trio

from lineup.wire import client as http

WAIT = 30.0
BODY = "y" * 8_000_000  # far more than the socket buffers: the send is still going on


async def too_large(stream: trio.abc.Stream) -> None:
    """Refuse by the head alone, as an AppServer does by its Content-Length, and close with
    the body unread (the kernel then resets the connection)."""
    await stream.receive_some(65536)
    refusal = b'{"error":"too_large"}'
    head = f"HTTP/1.1 413 Too Large\r\ncontent-length: {len(refusal)}\r\nconnection: close\r\n\r\n"
    await stream.send_all(head.encode() + refusal)
    await trio.aclose_forcefully(stream)


async def test_an_answer_sent_before_the_body_was_read_is_the_answer_not_a_broken_pipe() -> None:
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, too_large, 0, host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        async with http.HttpClient(f"http://127.0.0.1:{port}") as client:
            for _ in range(3):  # each on a new connection: a cut one is never used again
                with trio.fail_after(WAIT):
                    got = await client.request("POST", "/v1/x", json={"x": BODY}, max_bytes=1024)
                assert (got.status, got.body) == (413, b'{"error":"too_large"}')
        nursery.cancel_scope.cancel()
