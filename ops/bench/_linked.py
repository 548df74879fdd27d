"""The whole runtime for a bench: as `lineup run --no-demo-agent` starts it
(`start_embedded`), or with its link to the embedded AppServer through a byte relay (`_relay`),
so a bench can cut the link and restore it (`start_behind_a_link`)."""

from __future__ import annotations

from pathlib import Path

import trio

from lineup.supervisor import Intensity, Supervisor
from lineup.supervisor._runtime import (
    LANES,
    PRELOAD,
    RuntimeOptions,
    RuntimePlan,
    free_port,
    plan_runtime,
)

from ._relay import LinkRelay

__all__ = ["start_behind_a_link", "start_embedded"]


async def start_embedded(
    nursery: trio.Nursery, data_dir: Path, extra_apps: tuple[dict[str, str], ...] = ()
) -> RuntimePlan:
    """Start the runtime in `nursery` as `lineup run --no-demo-agent` does (the embedded
    AppServer, the bundled apps and `extra_apps`); its plan once every child is ready."""
    plan = plan_runtime(RuntimeOptions(data_dir=data_dir, demo_agent=False, extra_apps=extra_apps))
    supervisor = Supervisor(
        plan.specs,
        data_dir=data_dir,
        preload=PRELOAD,
        lanes=LANES,
        intensity=Intensity(max_restarts=50, period=10.0),
        link_wait=plan.link_wait,
    )
    supervisor.info.update(plan.info)
    await nursery.start(supervisor.run)
    return plan


async def start_behind_a_link(
    nursery: trio.Nursery, data_dir: Path
) -> tuple[RuntimePlan, LinkRelay]:
    """Start the runtime in `nursery` (no demo Agent), its transport reaching the AppServer
    through a `LinkRelay`: the plan, and the relay to cut."""
    appserver_port = free_port()
    proxy = LinkRelay(appserver_port)
    await nursery.start(proxy.serve)
    plan = plan_runtime(
        RuntimeOptions(
            data_dir=data_dir,
            demo_agent=False,
            appserver_port=appserver_port,
            appserver_via=proxy.url,
        )
    )
    supervisor = Supervisor(plan.specs, data_dir=data_dir, preload=PRELOAD, intensity=Intensity())
    await nursery.start(supervisor.run)
    return plan, proxy
