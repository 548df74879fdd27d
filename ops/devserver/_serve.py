"""Run the devserver: open its database, then serve HTTP (`_http`: h11 on trio)."""

from __future__ import annotations

import logging
from typing import Final

import trio

from ._app import INTERNAL_ERROR, DevServerState, build_app
from ._config import DevServerConfig
from ._db import DevDatabase
from ._http import serve_http

__all__ = ["GRACEFUL_TIMEOUT_S", "serve", "serve_state"]

log = logging.getLogger("lineup.devserver")

# After a shutdown request, requests in flight get this long to finish. Long polls end at once
# (their waiters are woken), so this only bounds a slow database call.
GRACEFUL_TIMEOUT_S: Final = 2.0


async def serve(
    config: DevServerConfig,
    *,
    shutdown: trio.Event | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve DESIGN §12 until cancelled or until `shutdown` is set (a graceful stop).

    Reports the bound base URL (`http://HOST:PORT`, the real port when `config.port` is 0)
    through `task_status` once it accepts connections. Raises `StoreError` if the database
    cannot be opened and `OSError` if the address cannot be bound.
    """
    db = await trio.to_thread.run_sync(DevDatabase.open, config.db_path)
    try:
        state = DevServerState(config, db)
        await serve_state(state, shutdown=shutdown, task_status=task_status)
    finally:
        db.close()


async def serve_state(
    state: DevServerState,
    *,
    shutdown: trio.Event | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """`serve` over a state the caller built (and whose database it closes afterwards)."""
    config = state.config
    stop = trio.Event()

    async def stopping() -> None:
        assert shutdown is not None
        await shutdown.wait()
        state.waiters.close()  # long polls end now, with what they have
        stop.set()

    async with trio.open_nursery() as nursery:

        async def serving(task_status: trio.TaskStatus[str]) -> None:
            await serve_http(
                build_app(state),
                config.host,
                config.port,
                error=INTERNAL_ERROR,
                graceful_timeout=GRACEFUL_TIMEOUT_S,
                shutdown=None if shutdown is None else stop,
                task_status=task_status,
            )
            nursery.cancel_scope.cancel()  # stopped gracefully: the checkpoints stop too

        nursery.start_soon(state.checkpoints)
        if shutdown is not None:
            nursery.start_soon(stopping)
        url: str = await nursery.start(serving)
        log.info("devserver.listening url=%s", url)
        task_status.started(url)
