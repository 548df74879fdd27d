"""The supervisor's view of one child process (`lineup status`). No I/O.

A child is `new` until its first start; `starting` from its fork until it says it is ready,
then `running`. One that exits is `stopped` (exit status 0) or `failed` (any other status, or
given up); one the supervisor stops is `stopping` until it exits, then `stopped`. A child to be
started again after an exit is `restarting` until its new process is forked.
"""

from __future__ import annotations

from typing import Final, Literal

__all__ = ["UP", "ChildState"]

ChildState = Literal["new", "starting", "running", "restarting", "stopping", "stopped", "failed"]
UP: Final[ChildState] = "running"  # the one state a child answers in
