"""Where LineUp keeps its data when no `--data-dir` is given: the one definition, for the
runtime's CLI (which must not load the SDK to learn it: it is on `lineup run`'s critical path)
and the authoring CLI alike."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_data_dir"]


def default_data_dir() -> Path:
    """Where `lineup run` keeps its data (and so its trusted keys) when no `--data-dir` is
    given: `$XDG_DATA_HOME/lineup`, else `~/.local/share/lineup`."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "lineup"
