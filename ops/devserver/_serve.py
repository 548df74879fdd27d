"""Run the devserver: open its database, then serve HTTP with hypercorn's trio worker."""

from __future__ import annotations

import logging
from functools import partial
from typing import Final

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve as hypercorn_serve

from ._app import DevServerState, build_app
from ._config import DevServerConfig
from ._db import DevDatabase

__all__ = ["GRACEFUL_TIMEOUT_S", "serve", "serve_state"]

log = logging.getLogger("lineup.devserver")

# After a shutdown request, requests in flight get this long to finish. Long polls end at once
# (their waiters are woken), so this only bounds a slow database call.
GRACEFUL_TIMEOUT_S: Final = 2.0


def _bind(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


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
    http = HypercornConfig()
    http.bind = [_bind(config.host, config.port)]
    http.accesslog = None  # an access log would record cursors and paths; ids suffice
    http.errorlog = logging.getLogger("lineup.devserver.http")
    http.graceful_timeout = GRACEFUL_TIMEOUT_S

    async def shutdown_trigger() -> None:
        assert shutdown is not None
        await shutdown.wait()
        state.waiters.close()

    async with trio.open_nursery() as nursery:
        binds: list[str] = await nursery.start(
            partial(
                hypercorn_serve,
                build_app(state),  # type: ignore[arg-type]  # hypercorn's ASGI type
                http,
                shutdown_trigger=None if shutdown is None else shutdown_trigger,
                mode="asgi",
            )
        )
        url = binds[0]
        log.info("devserver.listening url=%s", url)
        task_status.started(url)
