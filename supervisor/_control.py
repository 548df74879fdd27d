"""The control socket: `<data dir>/control.sock`, owner-only, for the `lineup` CLI.

A connection on it is a peer of kind `cli`: the ACL lets it ask the supervisor for status and
health, and for an introduction to focus, nothing else. A registry command (`lineup app
install`…) is asked of focus directly, over the channel the introduction opens
(`focus_request`), as one actor asks another: the supervisor carries no registry request. The
client side is synchronous and tiny, so `lineup status` starts fast.

`<data dir>/runtime-state.json` says how the last run ended (`stopped`), for a `lineup status`
that finds no supervisor to ask; a run removes it when it starts.

The server side, which needs trio and the bus, is `_control_server`'s: a `lineup` command that
asks a running tree imports this module alone.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any, Final, TypeVar

from lineup.actors.kernel import (
    REGISTRY,
    ErrorCode,
    FrameDecoder,
    LineUpError,
    Message,
    encode_frame,
    parse_frame,
)

__all__ = [
    "CONTROL_SOCKET",
    "STATE_FILE",
    "NotRunning",
    "clear_state_file",
    "control_request",
    "focus_request",
    "read_state_file",
    "write_state_file",
]

CONTROL_SOCKET: Final = "control.sock"
STATE_FILE: Final = "runtime-state.json"
CLIENT_TIMEOUT: Final = 5.0
MAX_STATE_FILE: Final = 4096
_MAX_FDS: Final = 4  # what one read takes of the descriptors sent with it (one is expected)
M = TypeVar("M", bound=Message)


class NotRunning(LineUpError):
    """No supervisor listens on the data dir's control socket (`actor_unavailable`)."""


def control_request(
    data_dir: Path, body: Message, expect: type[M], *, timeout: float = CLIENT_TIMEOUT
) -> M:
    """One request to a running supervisor, answered within `timeout` seconds. Raises
    NotRunning (a LineUpError, actor_unavailable) if none runs, the refusal's code if it
    refused, and LineUpError(deadline_exceeded) if it did not answer in time."""
    deadline = time.monotonic() + timeout
    with _connect(data_dir, timeout) as sock:
        reply, _ = _ask(sock, body, expect, deadline)
        return reply


def focus_request(data_dir: Path, body: Message, expect: type[M], *, timeout: float) -> M:
    """One request to focus, within `timeout` seconds: the supervisor introduces this process
    to focus (a socket of a channel between the two, by SCM_RIGHTS, as it introduces two
    actors), and the request goes to focus over it. Raises as `control_request` does, and with
    focus's refusal's code."""
    # Imported here: `lineup status` loads this module and needs none of it.
    from lineup.actors.kernel.control import IntroduceReply, IntroduceRequest

    deadline = time.monotonic() + timeout
    with _connect(data_dir, timeout) as sock:
        _, fds = _ask(sock, IntroduceRequest(peer="focus"), IntroduceReply, deadline)
    channels = [socket.socket(fileno=fd) for fd in fds]
    try:
        if not channels:
            raise LineUpError(ErrorCode.ACTOR_UNAVAILABLE, "no channel to focus")
        reply, _ = _ask(channels[0], body, expect, deadline)
        return reply
    finally:
        for channel in channels:
            channel.close()


def _connect(data_dir: Path, timeout: float) -> socket.socket:
    path = data_dir / CONTROL_SOCKET
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
    except OSError as exc:
        sock.close()
        raise NotRunning(ErrorCode.ACTOR_UNAVAILABLE, f"no supervisor at {path}") from exc
    return sock


def _ask(
    sock: socket.socket, body: Message, expect: type[M], deadline: float
) -> tuple[M, list[int]]:
    """Send `body` as request 1 on `sock` and read until its answer, by `deadline` (monotonic).
    Returns the reply and the descriptors that came with the frames before it."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise LineUpError(ErrorCode.DEADLINE_EXCEEDED, "no time left")
    sock.settimeout(left)
    sock.sendall(encode_frame("q", 1, body.model_dump_json(), deadline_ms=left * 1000))
    decoder = FrameDecoder()
    fds: list[int] = []
    try:
        while True:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            try:
                data, received, _flags, _addr = socket.recv_fds(sock, 65536, _MAX_FDS)
            except TimeoutError as exc:
                raise LineUpError(ErrorCode.DEADLINE_EXCEEDED, "no answer in time") from exc
            fds += received
            if not data:
                raise LineUpError(ErrorCode.ACTOR_UNAVAILABLE, "the runtime closed")
            for payload in decoder.feed(data):
                frame = parse_frame(payload)
                if frame.reply_to != 1:
                    continue  # a `channel.opened` (its socket is in `fds`)
                if frame.kind == "x":
                    raise LineUpError(ErrorCode(str(frame.body.get("code"))), "refused")
                cls = REGISTRY.get(str(frame.body.get("type")))
                reply = cls.model_validate(frame.body) if cls else None
                if not isinstance(reply, expect):
                    raise LineUpError(ErrorCode.FRAME_MALFORMED, "unexpected reply")
                done, fds = fds, []
                return reply, done
    finally:
        for fd in fds:  # not handed back: an error on the way
            os.close(fd)


def write_state_file(data_dir: Path, state: str, **facts: Any) -> None:
    """Write `<data dir>/runtime-state.json` atomically (a temporary file, fsynced, renamed,
    the folder fsynced): a reader sees the old document or the new one, never a part."""
    document = {"state": state, "at": round(time.time(), 3), **facts}
    path = data_dir / STATE_FILE
    tmp = data_dir / f".{STATE_FILE}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, json.dumps(document).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    folder = os.open(data_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def clear_state_file(data_dir: Path) -> None:
    """A run begins: what the last one said of its end is no longer true."""
    (data_dir / STATE_FILE).unlink(missing_ok=True)


def read_state_file(data_dir: Path) -> dict[str, Any] | None:
    """The last run's word on its end, or None (no file, or not one this runtime wrote)."""
    try:
        with open(data_dir / STATE_FILE, "rb") as file:
            raw = file.read(MAX_STATE_FILE + 1)
        document = json.loads(raw) if len(raw) <= MAX_STATE_FILE else None
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or not isinstance(document.get("state"), str):
        return None
    return document
