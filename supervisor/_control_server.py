"""The control socket's server side: the supervisor listens on `<data dir>/control.sock`
(owner-only) and connects each client to its bus as a peer of kind `cli` (`_control`, the
client side and the protocol, says what such a peer may ask)."""

from __future__ import annotations

import itertools
import os
import socket
from pathlib import Path

import trio

from lineup.actors.kernel import ActorKind, Bus, Channel, Identity

from ._control import CONTROL_SOCKET

__all__ = ["serve_control"]


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
