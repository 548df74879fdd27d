"""The Shell socket's server side: what one connection does with the frames it reads and the
frames it must send."""

from __future__ import annotations

import json
from typing import Any

import trio

from lineup.hostbridge._server import OUTBOX_PER_SHELL, ShellHub, _listen
from lineup.hostbridge.shell_protocol import (
    ShellOutbound,
    ShellView,
    TaskClose,
    UiEventFrame,
    UiIntentFrame,
)


class _Socket:
    """What `_listen` reads from: the frames a Shell sends, then silence."""

    def __init__(self, *texts: str) -> None:
        self._texts = list(texts)
        self.closed_with: int | None = None

    async def receive_text(self) -> str:
        if self._texts:
            return self._texts.pop(0)
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async def close(self, code: int) -> None:
        self.closed_with = code


async def _no_greeting() -> list[ShellOutbound]:
    raise AssertionError("no shell.ready was sent")


def _never_refused(message_type: str | None) -> None:
    raise AssertionError(f"a frame of type {message_type!r} was refused")


async def test_a_greeting_longer_than_the_shell_queue_reaches_the_shell_whole() -> None:
    """A Shell reconnecting to hundreds of open instances gets one view frame each: more than
    the per-Shell queue holds. The drill found the greeting overflowing it and the socket dying
    (`WouldBlock`); it must wait for the pump instead."""
    frames: list[ShellOutbound] = [
        ShellView(app_scope="chat", instance_id=f"i{n}", view={"n": n})
        for n in range(OUTBOX_PER_SHELL * 2)
    ]

    async def greeting() -> list[ShellOutbound]:
        return frames

    async def inbound(frame: UiEventFrame | UiIntentFrame) -> None:
        raise AssertionError("nothing but shell.ready was sent")

    send, receive = ShellHub().join()
    socket: Any = _Socket(json.dumps({"type": "shell.ready"}))
    got: list[dict[str, Any]] = []
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_listen, socket, send, greeting, inbound, _never_refused)
            async for text in receive:  # the pump's side
                got.append(json.loads(text))
                if len(got) == len(frames):
                    nursery.cancel_scope.cancel()
    assert got == [frame.model_dump() for frame in frames]


async def test_frames_outside_the_protocol_are_refused_by_type_and_the_next_one_is_handled() -> (
    None
):
    """Each refused frame is reported once, by its type when it has a tag-like one, never
    handed on; the connection stays open and the valid frame after them arrives typed."""
    close = {"type": "ui.event", "instance_id": "task-1", "event": {"kind": "task.close"}}
    socket: Any = _Socket(
        "{not json",
        json.dumps({**close, "event": {"kind": "task.close", "extra": 1}}),
        json.dumps({"type": "ui.intent", "intent": "kill", "instance_id": "task-1"}),
        json.dumps({"type": "shell.explode"}),
        json.dumps(close),
    )
    refused: list[str | None] = []
    handled: list[UiEventFrame | UiIntentFrame] = []
    done = trio.Event()

    async def inbound(frame: UiEventFrame | UiIntentFrame) -> None:
        handled.append(frame)
        done.set()

    send, _receive = ShellHub().join()
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_listen, socket, send, _no_greeting, inbound, refused.append)
            await done.wait()
            nursery.cancel_scope.cancel()
    assert refused == [None, "ui.event", "ui.intent", "shell.explode"]
    assert handled == [UiEventFrame(instance_id="task-1", event=TaskClose())]
    assert socket.closed_with is None


async def test_a_frame_over_the_size_limit_closes_the_socket_unread() -> None:
    socket: Any = _Socket(json.dumps({"type": "shell.ready", "pad": "x" * 70_000}))
    send, _receive = ShellHub().join()

    async def inbound(frame: UiEventFrame | UiIntentFrame) -> None:
        raise AssertionError("an oversized frame was handed on")

    with trio.fail_after(5):
        await _listen(socket, send, _no_greeting, inbound, _never_refused)
    assert socket.closed_with == 1009


def test_a_broadcast_is_encoded_once_for_every_shell() -> None:
    hub = ShellHub()
    queues = [hub.join()[1] for _ in range(3)]
    hub.broadcast(ShellView(app_scope="chat", instance_id="chat", view={"kind": "chat.timeline"}))
    texts = [queue.receive_nowait() for queue in queues]
    assert texts[0] is texts[1] is texts[2]
    assert json.loads(texts[0])["type"] == "shell.view"
