"""A bench-only switch: an actor process profiles itself between two signals.

`python -m lineup.ops.bench --profile` sets `PROFILE_ENV` (a directory) before the tree starts.
The zygote reads it when it imports the kernel, before it forks anything, so a sandboxed child
(whose environment is scrubbed) has it too. Each child then profiles its CPU time (`cProfile`)
from SIGUSR1 to SIGUSR2 and writes the stats to `<name>-<pid>.prof` in that directory or, where its
sandbox forbids that, in its own temporary directory (a MiniApp's private data dir). Without the
variable nothing is installed: no handler, no cost.
"""

from __future__ import annotations

import cProfile
import os
import signal
import tempfile
import time
from pathlib import Path
from typing import Final

__all__ = ["PROFILE_ENV", "profile_on_signals"]

PROFILE_ENV: Final = "LINEUP_BENCH_PROFILE"
_DIR: Final = os.environ.get(PROFILE_ENV)  # read at import: in the zygote, before a sandbox


def profile_on_signals(name: str) -> None:
    """With the switch set: profile from SIGUSR1 until SIGUSR2, then write the stats."""
    if not _DIR:
        return
    profiler: cProfile.Profile | None = None
    stem = f"{name.replace(':', '_')}-{os.getpid()}.prof"

    def start(_signum: int, _frame: object) -> None:
        nonlocal profiler
        # CPU time, not wall: a send that wakes its peer is often preempted by it, and that
        # wait is the peer's work, not the sender's.
        profiler = cProfile.Profile(time.thread_time_ns, 1e-9)
        profiler.enable()

    def stop(_signum: int, _frame: object) -> None:
        nonlocal profiler
        if profiler is None:
            return
        profiler.disable()
        # A sandboxed child may write only to its private dir, which is its TMPDIR.
        for folder in (_DIR, os.environ.get("TMPDIR") or tempfile.gettempdir()):
            try:
                profiler.dump_stats(str(Path(folder) / stem))
                break
            except OSError:
                continue
        profiler = None

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
