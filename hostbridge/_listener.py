"""Serve the Shell's ASGI app with hypercorn, one connection at a time in its own blast radius.

`hypercorn.trio.serve` runs every connection's handler in one nursery, and a handler that
raises takes that nursery, and so the server and the hostbridge, down with it. Hypercorn and h11
do raise on bytes a client chose: a WebSocket upgrade pipelined with a close frame or a second
`GET` in the same write makes hypercorn answer 400 on an h11 connection already switched,
and h11's `LocalProtocolError` escapes (issue 11, finding 3). So the listening loop is ours:
the same `TCPServer` hypercorn uses per connection, each wrapped so that whatever it raises
ends that connection only, and is logged by class, never by content.

No lifespan protocol: the Shell's app has no startup or shutdown hooks.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import hypercorn.config
import trio
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import ConnectionState
from hypercorn.utils import wrap_app

__all__ = ["serve"]

log = logging.getLogger("lineup.hostbridge")

CLOSE_TIMEOUT: Final = 1.0  # seconds to close a connection that failed


async def serve(
    app: Any,
    config: hypercorn.config.Config,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on `config.bind` (plain TCP) and serve `app` until cancelled. A connection whose
    handling raises is closed and logged; it never stops the others or the listener."""
    wrapped = wrap_app(app, config.wsgi_max_body_size, "asgi")
    context = WorkerContext(None)
    sockets = config.create_sockets()
    listeners = []
    for sock in sockets.insecure_sockets:
        sock.listen(config.backlog)
        listeners.append(trio.SocketListener(trio.socket.from_stdlib_socket(sock)))

    async def connection(stream: trio.SocketStream) -> None:
        try:
            await TCPServer(wrapped, config, context, ConnectionState({}), stream)  # type: ignore[arg-type]
        except* Exception as group:  # trio.Cancelled is not an Exception: it propagates
            leaf: BaseException = group
            while isinstance(leaf, BaseExceptionGroup):
                leaf = leaf.exceptions[0]
            log.warning("hostbridge.connection_failed error=%s", type(leaf).__name__)
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
