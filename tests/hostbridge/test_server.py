"""The Shell socket's server side: what one connection does with the frames it reads and the
frames it must send."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.hostbridge._server import (
    INTERACTION_FRAMES_BURST,
    OUTBOX_PER_SHELL,
    ShellAccess,
    ShellHub,
    _listen,
)
from lineup.hostbridge._web import WEB, WebFiles, web_file
from lineup.hostbridge.shell_protocol import (
    ShellAction,
    ShellOutbound,
    ShellView,
    TaskClose,
    UiEventFrame,
)

from .test_actor import start_hostbridge


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

    async def inbound(frame: ShellAction) -> None:
        raise AssertionError("nothing but shell.ready was sent")

    send, receive = ShellHub().join()
    socket = _Socket(json.dumps({"type": "shell.ready"}))
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
    socket = _Socket(
        "{not json",
        json.dumps({**close, "event": {"kind": "task.close", "extra": 1}}),
        json.dumps({"type": "ui.intent", "intent": "kill", "instance_id": "task-1"}),
        json.dumps({"type": "shell.explode"}),
        json.dumps(close),
    )
    refused: list[str | None] = []
    handled: list[ShellAction] = []
    done = trio.Event()

    async def inbound(frame: ShellAction) -> None:
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
    socket = _Socket(json.dumps({"type": "shell.ready", "pad": "x" * 70_000}))
    send, _receive = ShellHub().join()

    async def inbound(frame: ShellAction) -> None:
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


# ---------------------------------------------------------------------- web/ as a directory


@pytest.mark.parametrize(
    "path",
    [
        "../pyproject.toml",
        "js/../../_server.py",
        "js/../index.html",
        "..",
        ".hidden.js",
        "js/.x.js",
        "js\\main.js",
        "js//main.js",
        "/etc/passwd",
        "%2e%2e/_server.py",
        "_server.py",
        "index.htm",
        "js/main.js.map",
        "js",
        "js/nothing-here.js",
        "x" * 300 + ".js",
        "",
    ],
)
def test_only_plain_paths_to_known_files_of_web_are_served(path: str) -> None:
    assert web_file(path) is None


def test_each_served_file_has_the_one_content_type_of_its_extension() -> None:
    web = WEB.resolve()
    assert web_file("index.html") == (web / "index.html", "text/html; charset=utf-8")
    assert web_file("js/main.js") == (web / "js" / "main.js", "text/javascript; charset=utf-8")
    assert web_file("js/core/state.js") is not None
    assert web_file("shell.css") == (web / "shell.css", "text/css; charset=utf-8")
    assert web_file("favicon.svg") == (web / "favicon.svg", "image/svg+xml")


def test_the_shells_files_are_held_as_read_and_read_again_once_changed(tmp_path: Path) -> None:
    (tmp_path / "js").mkdir()
    script = tmp_path / "js" / "main.js"
    script.write_bytes(b"one")
    files = WebFiles(tmp_path)
    js = "text/javascript; charset=utf-8"
    assert files.get("js/main.js") == (b"one", js)

    # Held: the same size and time on disk is the same file, not read again.
    before = script.stat()
    script.write_bytes(b"two")
    os.utime(script, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert files.get("js/main.js") == (b"one", js)

    # Changed (its time, or its size): read again, as an edit during development is.
    os.utime(script, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    assert files.get("js/main.js") == (b"two", js)
    script.write_bytes(b"three")
    assert files.get("js/main.js") == (b"three", js)

    script.unlink()
    assert files.get("js/main.js") is None
    assert files.get("../main.js") is None and files.get("js/main.py") is None


async def _get(port: int, path: str, host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    host = host or f"127.0.0.1:{port}"
    request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    answer = b""

    def whole() -> bool:  # read up to the body's length (the server may keep the socket open)
        head, sep, body = answer.partition(b"\r\n\r\n")
        for line in head.decode().split("\r\n")[1:] if sep else []:
            name, _, value = line.partition(": ")
            if name.lower() == "content-length":
                return len(body) >= int(value)
        return False

    with trio.fail_after(10):
        async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
            await stream.send_all(request.encode())
            while not whole():
                chunk = await stream.receive_some(65536)
                if not chunk:
                    break
                answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


async def test_every_response_carries_the_one_csp_and_nosniff_and_the_page_has_no_csp_of_its_own(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        _actor, _bus, port = await start_hostbridge(nursery, tmp_path)
        answers = {p: await _get(port, p) for p in ["/", "/js/main.js", "/favicon.svg", "/x.py"]}
        traversal = await _get(port, "/js/%2e%2e/%2e%2e/_server.py")
        foreign = await _get(port, "/js/main.js", host="evil.example")
        nursery.cancel_scope.cancel()
    csp = ShellAccess(port=port, token="t").csp()
    for path, (status, headers, _body) in answers.items():
        assert status == (404 if path == "/x.py" else 200), path
        assert headers["content-security-policy"] == csp
        assert headers["x-content-type-options"] == "nosniff"
    assert answers["/"][1]["content-type"].startswith("text/html")
    assert answers["/js/main.js"][1]["content-type"].startswith("text/javascript")
    assert answers["/favicon.svg"][1]["content-type"] == "image/svg+xml"
    assert answers["/js/main.js"][2] == (WEB / "js" / "main.js").read_bytes()
    page = answers["/"][2].decode().lower()
    assert "content-security-policy" not in page
    assert '<script type="module" src="js/main.js">' in page and 'rel="icon"' in page
    assert traversal[0] == 404 and foreign[0] == 403


async def test_interaction_frames_past_their_rate_are_refused_and_the_others_still_pass() -> None:
    draft = {"type": "interaction.draft", "interaction_id": "i", "values": {"a": "x"}}
    texts = [json.dumps(draft)] * (INTERACTION_FRAMES_BURST * 3)
    close = {"type": "ui.event", "instance_id": "t", "event": {"kind": "task.close"}}
    texts.append(json.dumps(close))
    passed: list[str] = []
    refused: list[str | None] = []
    done = trio.Event()

    async def inbound(frame: ShellAction) -> None:
        passed.append(frame.type)
        if frame.type == "ui.event":
            done.set()

    send, _receive = ShellHub().join()
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                _listen, _Socket(*texts), send, _no_greeting, inbound, refused.append
            )
            await done.wait()
            nursery.cancel_scope.cancel()
    drafts = passed.count("interaction.draft")
    # The burst, and what the rate refilled meanwhile (the frames take milliseconds).
    assert INTERACTION_FRAMES_BURST <= drafts <= INTERACTION_FRAMES_BURST + 2
    assert refused == ["interaction.draft"] * (len(texts) - 1 - drafts)
    assert passed[-1] == "ui.event"  # a frame of another kind is not held back
