"""Process titles, so that `ps` and `top` show which process of the tree is which."""

from __future__ import annotations

import os
from typing import Final

import setproctitle

__all__ = ["set_title", "title_for"]

PREFIX: Final = "lineup: "


def title_for(name: str) -> str:
    """`router` → `lineup: router`; `miniapp:task-dashboard` → `lineup: miniapp task-dashboard`."""
    return PREFIX + name.replace(":", " ", 1)


def set_title(name: str) -> None:
    """Title this process after `name` (see `title_for`). Never raises; without the C module
    (an unusual platform) it does nothing."""
    # Only the argv area is rewritten, never the environment block: a MiniApp's sandbox wipes
    # that block in place (see _sandbox._scrub_environment), which must still be where /proc
    # serves it from, and setproctitle's relocated copy would keep the runtime's variables
    # alive in every forked child's memory. Read once, at the process's first title.
    os.environ.setdefault("SPT_NOENV", "1")
    setproctitle.setproctitle(title_for(name))
