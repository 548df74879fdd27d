"""Lazy exports for a package's `__init__` (PEP 562): each public name is imported from its
home module on first use, so importing one module of the package (its protocol, one of its
pure tables) loads that module alone.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping

__all__ = ["exports"]


def exports(package: str, homes: Mapping[str, str]) -> Callable[[str], object]:
    """A module `__getattr__` for `package` that finds each name of `homes` (name → relative
    module, `"._actor"`) there on first use and keeps it, so later reads are plain attributes."""

    def __getattr__(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home, package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
