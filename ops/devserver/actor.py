"""The devserver as a supervised actor, for trees that want a local AppServer beside them."""

from __future__ import annotations

import logging

import trio

from lineup.actors.kernel.actor import Actor, CannotStart
from lineup.actors.kernel.identity import ActorKind

from ._config import DevServerConfig
from ._serve import serve

__all__ = ["DevServerActor"]

log = logging.getLogger("lineup.devserver")


class DevServerActor(Actor):
    """Serves DESIGN §12 from `ctx.config["devserver"]` (see `DevServerConfig.from_mapping`;
    a relative `db_path` lives in the data dir, default `devserver.db`) until cancelled."""

    kind = ActorKind.DEV
    url: str | None = None  # the bound base URL, once listening

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        raw = self.ctx.config.get("devserver") or {}
        config = DevServerConfig.from_mapping(raw, base_dir=self.ctx.data_dir)
        async with trio.open_nursery() as nursery:
            try:
                self.url = await nursery.start(serve, config)
            except (OSError, ExceptionGroup) as exc:  # the bind, maybe within a nursery's group
                refused = _bind_error(exc)
                if refused is None or not self.ctx.config.get("port_pinned", True):
                    raise  # a port the runtime picked, taken meanwhile: a restart may do
                # The user's port, taken since `lineup run` checked it: the tree stops, in one
                # line.
                where = f"{config.host}:{config.port}"
                raise CannotStart(
                    f"the reference AppServer cannot listen on {where}: {refused.strerror}"
                ) from None
            task_status.started()


def _bind_error(exc: BaseException) -> OSError | None:
    """The OSError that `exc` is or holds (the bind tried), if any."""
    while isinstance(exc, BaseExceptionGroup):
        found = exc.subgroup(OSError)
        if found is None:
            return None
        exc = found.exceptions[0]
    return exc if isinstance(exc, OSError) else None
