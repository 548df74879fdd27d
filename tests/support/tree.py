"""Start a real supervised tree inside a test's nursery, and join it as a peer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import trio

from lineup.actors.kernel import ActorKind, ActorRestarted, Bus, Identity, Message
from lineup.supervisor import ChildSpec, Supervisor

M = TypeVar("M", bound=Message)
RETRY_WINDOW = 10.0  # how long a caller keeps retrying a restarting peer before failing


async def start_tree(
    nursery: trio.Nursery, specs: list[ChildSpec], data_dir: Path, **kw: Any
) -> Supervisor:
    supervisor = Supervisor(specs, data_dir=data_dir, **kw)
    await nursery.start(supervisor.run)
    return supervisor


async def attach(
    nursery: trio.Nursery,
    supervisor: Supervisor,
    kind: ActorKind = ActorKind.TRANSPORT,
    name: str = "probe",
) -> Bus:
    bus: Bus = await nursery.start(supervisor.attach, Identity(kind, name))
    return bus


async def until_answered(call: Callable[[], Awaitable[M]]) -> M:
    """Retry `call` while its peer restarts, as every real caller does after actor_restarted."""
    with trio.fail_after(RETRY_WINDOW):
        while True:
            try:
                return await call()
            except ActorRestarted:
                continue
