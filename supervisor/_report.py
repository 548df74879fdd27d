"""The sandbox's report: the first byte a sandboxed child sends on its control channel, before
the channel carries anything else, with the seccomp listener attached if it has one; so that the
supervisor, not the untrusted app, answers and audits every call the filter denies. And the
supervisor's one byte back once it has put the child in its pids cgroup (`CGROUP_JOINED`).
"""

from __future__ import annotations

import os
import socket
from typing import Final

import trio

__all__ = ["CGROUP_JOINED", "receive_report", "send_report"]

CGROUP_JOINED: Final = b"G"  # supervisor → child, after its report: it is in its pids cgroup
_REPORT_LISTENER: Final = b"L"  # the seccomp listener is attached
_REPORT_NONE: Final = b"N"  # no listener (seccomp off, or the kernel cannot notify)
_LISTENER_LINK: Final = "anon_inode:seccomp notify"  # what a received listener must be


def send_report(channel_fd: int, listener: int | None) -> None:
    """The child's side: one byte on the control channel, with `listener` attached if any.
    Only calls the filter allows (a denied one would wait for a listener nobody reads yet)."""
    with socket.socket(fileno=os.dup(channel_fd)) as channel:
        if listener is None:
            channel.sendall(_REPORT_NONE)
        else:
            socket.send_fds(channel, [_REPORT_LISTENER], [listener])


async def receive_report(channel: socket.socket) -> int | None:
    """The supervisor's side: read the report, the first byte a sandboxed child sends, before
    the channel is handed to the bus (which takes no descriptors from a child). Returns the
    seccomp listener (close-on-exec), or None: no listener, or the child died first."""
    channel.setblocking(False)
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(channel, 1, 1, socket.MSG_CMSG_CLOEXEC)
            break
        except BlockingIOError:
            await trio.lowlevel.wait_readable(channel)
        except OSError:
            return None
    listener = fds[0] if data == _REPORT_LISTENER and len(fds) == 1 else None
    for fd in fds:
        if fd != listener:
            os.close(fd)
    if listener is not None and os.readlink(f"/proc/self/fd/{listener}") != _LISTENER_LINK:
        os.close(listener)
        return None
    return listener
