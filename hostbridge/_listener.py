"""Serve the Shell's ASGI app with hypercorn, one connection at a time in its own blast radius.

`hypercorn.trio.serve` runs every connection's handler in one nursery, and a handler that
raises takes that nursery, and so the server and the hostbridge, down with it. Hypercorn and h11
do raise on bytes a client chose: a WebSocket upgrade pipelined with a close frame or a second
`GET` in the same write makes hypercorn answer 400 on an h11 connection already switched,
and h11's `LocalProtocolError` escapes (issue 11, finding 3). So the listening loop is ours:
the same `TCPServer` hypercorn uses per connection, each wrapped so that whatever it raises
ends that connection only, and is logged by class, never by content.

Logged at a bounded rate, and without tracebacks (`RefusalLog`): a client that repeats such
bytes in a loop would otherwise write two lines and a traceback per connection. That covers
hypercorn's own "Error in ASGI Framework" (the app raising on a connection h11 has given up),
which goes through this module's logger class rather than `logging.exception`.

No lifespan protocol: the Shell's app has no startup or shutdown hooks.
"""

from __future__ import annotations

import logging
import socket
import sys
from typing import Any, Final

import hypercorn.config
import hypercorn.logging
import trio
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import ConnectionState
from hypercorn.utils import wrap_app

from lineup.actors.kernel.actor import CannotStart

from ._refusals import RefusalLog

__all__ = ["serve"]

log = logging.getLogger("lineup.hostbridge")

CLOSE_TIMEOUT: Final = 1.0  # seconds to close a connection that failed


async def serve(
    app: Any,
    config: hypercorn.config.Config,
    *,
    pinned: bool = True,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on `config.bind` (plain TCP) and serve `app` until cancelled. If the address
    cannot be bound: CannotStart when the port is the user's (`pinned`: the tree stops, saying
    why), else the OSError (a port the runtime picked, taken meanwhile: a restart may find it
    free again). A connection whose
    handling raises is closed and logged (by class, at a bounded rate); it never stops the
    others or the listener. Sets `config.logger_class`: hypercorn's errors are logged alike."""
    quiet = RefusalLog(log)

    class QuietLogger(hypercorn.logging.Logger):
        async def exception(self, message: str, *args: Any, **kwargs: Any) -> None:
            error = sys.exc_info()[1]
            quiet.refused("hostbridge.asgi_failed", error=type(error).__name__)

    config.logger_class = QuietLogger
    wrapped = wrap_app(app, config.wsgi_max_body_size, "asgi")
    context = WorkerContext(None)
    try:
        bound = [_bound(address) for address in config.bind]
    except OSError as exc:
        if not pinned:
            raise
        # The user's port, taken since `lineup run` checked it: the tree stops, in one line.
        where = ", ".join(config.bind)
        raise CannotStart(f"the Shell cannot listen on {where}: {exc.strerror}") from None
    listeners = []
    for sock in bound:
        sock.listen(config.backlog)
        listeners.append(trio.SocketListener(trio.socket.from_stdlib_socket(sock)))

    async def connection(stream: trio.SocketStream) -> None:
        try:
            await TCPServer(wrapped, config, context, ConnectionState({}), stream)  # type: ignore[arg-type]
        except* Exception as group:  # trio.Cancelled is not an Exception: it propagates
            leaf: BaseException = group
            while isinstance(leaf, BaseExceptionGroup):
                leaf = leaf.exceptions[0]
            quiet.refused("hostbridge.connection_failed", error=type(leaf).__name__)
        finally:
            with trio.move_on_after(CLOSE_TIMEOUT, shield=True):
                await stream.aclose()

    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, connection, listeners)
            task_status.started()
    finally:
        with trio.CancelScope(shield=True):
            await context.terminated.set()


def _bound(address: str) -> socket.socket:
    """A TCP socket bound to `address` (`host:port`, IPv4), as hypercorn binds one
    (SO_REUSEADDR), but closed when the bind fails instead of left to the garbage collector."""
    host, _, port = address.rpartition(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, int(port)))
    except BaseException:
        sock.close()
        raise
    return sock
