"""How every LineUp process sets up its logs: the one reading of `LINEUP_LOG`.

`LINEUP_LOG` names a level in any case (`debug`, `INFO`) or gives its number; anything else
means the default, WARNING, and says so once. A typo in a variable must not stop the tree:
`logging` itself refuses an unknown level with a ValueError, in every process at its start.
"""

from __future__ import annotations

import logging
import os
from typing import Final

__all__ = ["DEFAULT_LEVEL", "configure_logs", "log_level"]

DEFAULT_LEVEL: Final = logging.WARNING


def log_level(raw: str | None) -> int | None:
    """The level `raw` names (a name in any case, or a number), or None if it names none."""
    if raw is None or not raw.strip():
        return None
    text = raw.strip()
    if text.isdigit():
        return int(text)
    return logging.getLevelNamesMapping().get(text.upper())


def configure_logs(prefix: str) -> None:
    """`logging.basicConfig` at `LINEUP_LOG`'s level, each line led by its level and `prefix`
    (the process: `supervisor`, `router[pid]`), to stderr (never stdout: `lineup mcp`'s is
    its MCP channel)."""
    raw = os.environ.get("LINEUP_LOG")
    level = log_level(raw)
    logging.basicConfig(
        level=DEFAULT_LEVEL if level is None else level,
        format=f"%(levelname)s {prefix} %(name)s: %(message)s",
    )
    if level is None and raw is not None and raw.strip():
        logging.getLogger("lineup").warning("logs.level_unknown: LINEUP_LOG names no level")
