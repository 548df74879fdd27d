"""Ports on 127.0.0.1 the runtime hands its listeners: any free one (`free_port`), or one
named again (`reserve_port`: the port the Shell listened on in the data dir's last run).

A port probed and closed is free only until someone else takes it: another program's
`bind(0)`, or any outgoing connection's local port. So the probe stays open, bound but not
listening, with SO_REUSEADDR: on Linux the kernel then never picks that port for anyone's
`bind(0)` or `connect()`, while a listener with SO_REUSEADDR may still bind it. The newest
RESERVED_PORTS probes are kept (the rest closed, their listeners long since up), all closed at
exit.
"""

from __future__ import annotations

import atexit
import socket
from collections import deque
from typing import Final

__all__ = ["free_port", "reserve_port"]

RESERVED_PORTS: Final = 64
_reserved: deque[socket.socket] = deque()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on, and that stays free for whoever this
    process hands it to (a child that listens on it with SO_REUSEADDR, as hypercorn and trio
    do)."""
    port = _probe(0)
    assert port is not None  # the kernel always has a port for bind(0), or it raised
    return port


def reserve_port(port: int) -> bool:
    """Keep `port` for a listener of this process's, as `free_port` does; False if something
    listens on it (or it cannot be bound)."""
    try:
        return _probe(port) == port
    except OSError:
        return False


def _probe(port: int) -> int | None:
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))
    except BaseException:
        probe.close()
        raise
    bound: int = probe.getsockname()[1]
    _reserved.append(probe)
    while len(_reserved) > RESERVED_PORTS:
        _reserved.popleft().close()
    return bound


@atexit.register
def _release_ports() -> None:
    while _reserved:
        _reserved.popleft().close()
