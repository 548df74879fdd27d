"""`python -m lineup.tests.support.delivery_runtime DATA_DIR [FOCUS_JSON]`: the runtime as the
delivery tests start it (`delivery_specs`: no demo Agent, FOCUS_JSON added to focus's config),
in a process of its own, so a test can SIGKILL all of it. Prints `ready <appserver_url>` once
the tree is ready; runs until it is killed.

The process starts as `lineup run` does: its zygotes are forked from it once it has imported
what both need (`lineup._early`), and it imports the supervisor alone, none of the test support
(pytest, the Shell and Agent clients): the tests that start it start two or three trees each."""

from __future__ import annotations

if __name__ == "__main__":
    from lineup._early import launch_zygote

    launch_zygote()

import json
import logging
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import trio

from lineup.supervisor import ChildSpec, Intensity, Supervisor
from lineup.supervisor._runtime import LANES, PRELOAD, RuntimeOptions, RuntimePlan, plan_runtime

# A test's tree has room for the restarts its test causes.
TEST_INTENSITY: Final = Intensity(max_restarts=50, period=10.0)


def delivery_specs(
    data_dir: Path, *, catalog: Path | None = None, **focus: Any
) -> tuple[RuntimePlan, list[ChildSpec]]:
    """The runtime without the demo Agent, offering the local `catalog` folder if given;
    `focus` is added to focus's config (`dev`, crash and pause points, `catalog_trusted`)."""
    plan = plan_runtime(RuntimeOptions(data_dir=data_dir, demo_agent=False, catalog=catalog))
    specs = [
        replace(spec, config={**spec.config, **focus}) if spec.name == "focus" else spec
        for spec in plan.specs
    ]
    return plan, specs


async def main(data_dir: Path, focus: dict[str, Any]) -> None:  # JSON from the command line
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    plan, specs = delivery_specs(data_dir, **focus)
    supervisor = Supervisor(
        specs,
        data_dir=data_dir,
        intensity=TEST_INTENSITY,
        link_wait=plan.link_wait,
        preload=PRELOAD,
        lanes=LANES,
    )
    supervisor.info.update(plan.info)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        print("ready", plan.appserver_url, flush=True)


if __name__ == "__main__":
    logging.basicConfig(level="WARNING", format="%(levelname)s supervisor %(name)s: %(message)s")
    trio.run(main, Path(sys.argv[1]), json.loads(sys.argv[2]) if len(sys.argv) > 2 else {})
