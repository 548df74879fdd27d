"""LineUp: the on-device runtime for AI-agent MiniApps."""

import sys as _sys

__all__ = ["__version__"]

__version__ = "0.1.0"

# httpx imports its command-line client (`httpx._main`) with itself whenever the CLI's
# dependencies happen to be installed (click, pygments and rich, which the dev tools bring):
# about 0.1 s of CPU in every process that speaks HTTP, a third of a child's start. LineUp never
# runs that client; with this, httpx takes the fallback it has for when they are missing.
_sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
