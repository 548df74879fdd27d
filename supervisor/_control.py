"""The control socket: `<data dir>/control.sock`, owner-only, for the `lineup` CLI.

A connection on it is a peer of kind `cli`: the ACL lets it ask the supervisor for status and
health, nothing else. The client side is synchronous and tiny, so `lineup status` starts fast.
"""

from __future__ import annotations

import itertools
import os
import socket
from pathlib import Path
from typing import Final, TypeVar

import trio

from lineup.actors.kernel import (
    REGISTRY,
    ActorKind,
    Bus,
    Channel,
    ErrorCode,
    FrameDecoder,
    Identity,
    LineUpError,
    Message,
    encode_frame,
    parse_frame,
)

__all__ = ["CONTROL_SOCKET", "control_request", "serve_control"]

CONTROL_SOCKET: Final = "control.sock"
CLIENT_TIMEOUT: Final = 5.0
M = TypeVar("M", bound=Message)


async def serve_control(
    bus: Bus, data_dir: Path, *, task_status: trio.TaskStatus[Path] = trio.TASK_STATUS_IGNORED
) -> None:
    path = data_dir / CONTROL_SOCKET
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)  # created 0600: no window where another user could connect
    try:
        listener.bind(str(path))
    finally:
        os.umask(old_umask)
    listener.listen(16)
    listener.setblocking(False)
    numbers = itertools.count(1)
    try:
        task_status.started(path)
        while True:
            await trio.lowlevel.wait_readable(listener)
            try:
                conn, _ = listener.accept()
            except BlockingIOError:
                continue
            bus.connect(Identity(ActorKind.CLI, f"cli:{next(numbers)}"), 0, Channel(conn))
    finally:
        listener.close()
        path.unlink(missing_ok=True)


def control_request(data_dir: Path, body: Message, expect: type[M]) -> M:
    """One request to a running supervisor. Raises LineUpError(actor_unavailable) if none."""
    path = data_dir / CONTROL_SOCKET
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CLIENT_TIMEOUT)
    try:
        try:
            sock.connect(str(path))
        except OSError as exc:
            raise LineUpError(ErrorCode.ACTOR_UNAVAILABLE, f"no supervisor at {path}") from exc
        sock.sendall(
            encode_frame("q", 1, body.model_dump_json(), deadline_ms=CLIENT_TIMEOUT * 1000)
        )
        decoder = FrameDecoder()
        while True:
            data = sock.recv(65536)
            if not data:
                raise LineUpError(ErrorCode.ACTOR_UNAVAILABLE, "the supervisor closed")
            for payload in decoder.feed(data):
                frame = parse_frame(payload)
                if frame.reply_to != 1:
                    continue
                if frame.kind == "x":
                    raise LineUpError(ErrorCode(str(frame.body.get("code"))), "refused")
                cls = REGISTRY.get(str(frame.body.get("type")))
                reply = cls.model_validate(frame.body) if cls else None
                if not isinstance(reply, expect):
                    raise LineUpError(ErrorCode.FRAME_MALFORMED, "unexpected reply")
                return reply
    finally:
        sock.close()
