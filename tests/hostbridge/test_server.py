"""The Shell socket's server side: what one connection does with the frames it must send."""

from __future__ import annotations

import json
from typing import Any

import trio

from lineup.hostbridge._server import OUTBOX_PER_SHELL, ShellHub, _listen


class _Socket:
    """What `_listen` reads from: the frames a Shell sends, then silence."""

    def __init__(self, *texts: str) -> None:
        self._texts = list(texts)

    async def receive_text(self) -> str:
        if self._texts:
            return self._texts.pop(0)
        await trio.sleep_forever()
        raise AssertionError("unreachable")


async def test_a_greeting_longer_than_the_shell_queue_reaches_the_shell_whole() -> None:
    """A Shell reconnecting to hundreds of open instances gets one view frame each: more than
    the per-Shell queue holds. The drill found the greeting overflowing it and the socket dying
    (`WouldBlock`); it must wait for the pump instead."""
    frames = [
        {"type": "shell.view", "instance_id": f"i{n}", "view": {"n": n}}
        for n in range(OUTBOX_PER_SHELL * 2)
    ]

    async def greeting() -> list[dict[str, Any]]:
        return frames

    async def inbound(frame: dict[str, Any]) -> None:
        raise AssertionError("nothing but shell.ready was sent")

    send, receive = ShellHub().join()
    socket: Any = _Socket(json.dumps({"type": "shell.ready"}))
    got: list[dict[str, Any]] = []
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_listen, socket, send, greeting, inbound)
            async for text in receive:  # the pump's side
                got.append(json.loads(text))
                if len(got) == len(frames):
                    nursery.cancel_scope.cancel()
    assert got == frames
