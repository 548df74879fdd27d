"""The whole runtime with its link to the embedded AppServer through the drill's proxy, so a
bench can cut the link and restore it."""

from __future__ import annotations

from pathlib import Path

import trio

from lineup.ops.drill._proxy import LinkProxy
from lineup.supervisor import Intensity, Supervisor
from lineup.supervisor._runtime import PRELOAD, RuntimeOptions, RuntimePlan, free_port, plan_runtime

__all__ = ["start_behind_a_link"]


async def start_behind_a_link(
    nursery: trio.Nursery, data_dir: Path
) -> tuple[RuntimePlan, LinkProxy]:
    """Start the runtime in `nursery` (no demo Agent), its transport reaching the AppServer
    through a `LinkProxy`: the plan, and the proxy to cut."""
    appserver_port = free_port()
    proxy = LinkProxy(f"http://127.0.0.1:{appserver_port}", seed=0)
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
