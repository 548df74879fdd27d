"""`python -m lineup.tests.support.delivery_runtime DATA_DIR [FOCUS_JSON]`: the runtime as the
delivery tests start it (`bundles.start_delivery`: no demo Agent, FOCUS_JSON added to focus's
config), in a process of its own, so a test can SIGKILL all of it. Prints `ready
<appserver_url>` once the tree is ready; runs until it is killed."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import trio

from lineup.tests.support.bundles import start_delivery


async def main(data_dir: Path, focus: dict[str, Any]) -> None:  # JSON from the command line
    async with trio.open_nursery() as nursery:
        runtime = await start_delivery(nursery, data_dir, **focus)
        print("ready", runtime.appserver_url, flush=True)


if __name__ == "__main__":
    logging.basicConfig(level="WARNING", format="%(levelname)s supervisor %(name)s: %(message)s")
    trio.run(main, Path(sys.argv[1]), json.loads(sys.argv[2]) if len(sys.argv) > 2 else {})
