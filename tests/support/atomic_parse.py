"""`ast.parse` that no other thread can interleave with, for tests on CPython 3.11.0–3.11.7.

Those releases keep the AST constructor's recursion depth in state every thread shares (CPython
gh-106905, fixed in 3.11.8). The constructor itself runs no Python code, so the thread building a
tree keeps the GIL, except when one of its allocations starts a garbage collection: the
finalizers and callbacks a collection runs are Python code, and the GIL can pass to another
thread there. If that thread parses too (3.11 parses the source of every traceback it formats, to
draw its carets), the first parse fails with `SystemError: AST constructor recursion depth
mismatch` on a tree it built right. A test process has threads (trio's workers, Playwright's),
and pytest parses the failing test's module to report it: a fresh clone's run lost a whole
session's report to it, a worker's INTERNALERROR hiding the failure it was formatting.

Held off collection for the length of a parse, the constructor runs no Python code, so no other
thread runs until it returns. Nothing is caught or retried: every error is the interpreter's.
"""

from __future__ import annotations

import ast
import gc
import sys
from typing import Any, Final

__all__ = ["FIXED_IN", "affected", "install", "parse_atomically"]

FIXED_IN: Final = (3, 11, 8)
_PARSE: Final = ast.parse


def affected(version: tuple[int, ...] = tuple(sys.version_info[:3])) -> bool:
    """Whether `version` shares the constructor's depth between threads."""
    return version[:2] == (3, 11) and version[:3] < FIXED_IN


def parse_atomically(*args: Any, **kwargs: Any) -> Any:
    """`ast.parse`, with garbage collection held off until it returns."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _PARSE(*args, **kwargs)
    finally:
        if collecting:
            gc.enable()


def install() -> None:
    """This process's `ast.parse` is `parse_atomically`, on the releases that need it."""
    if affected():
        ast.parse = parse_atomically
