"""What the `lineup app` subcommands share: how a refusal is raised, and how PATH (a package
folder, a module file or a dotted module name) becomes the MiniApp class it holds.
"""

from __future__ import annotations

import importlib
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Final, NoReturn

from ._app import MiniApp
from .manifest import ManifestInvalid
from .schema import SchemaUnsupported
from .tools import apps_in

__all__ = ["Refused", "app_class", "app_class_of", "refuse"]

_DOTTED: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class Refused(Exception):
    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


def refuse(reason: str, detail: str = "") -> NoReturn:
    raise Refused(reason, detail)


def app_class(target: str, class_option: str | None) -> type[MiniApp]:
    module_name, _, class_name = (class_option or "").rpartition(":")
    return app_class_of(_import(module_name or _module_name(target)), class_name)


def app_class_of(module: ModuleType, class_name: str = "") -> type[MiniApp]:
    """The MiniApp class `class_name` of `module`, or its one class with an `app_info`."""
    if class_name:
        found = getattr(module, class_name, None)
        if not (isinstance(found, type) and issubclass(found, MiniApp)):
            refuse("app_not_found", f"{module.__name__}:{class_name} is not a MiniApp class")
        return found
    candidates = apps_in(module)
    if not candidates:
        refuse("app_not_found", f"no MiniApp class with an app_info in {module.__name__}")
    if len(candidates) > 1:
        names = ", ".join(sorted(c.__qualname__ for c in candidates))
        refuse("app_ambiguous", f"{names}: choose one with --class")
    return candidates.pop()


def _import(name: str) -> ModuleType:
    try:
        with _from_source():
            return importlib.import_module(name)
    except (ManifestInvalid, SchemaUnsupported):
        raise  # a tool declaration refused while the module defined its class
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        refuse("app_import_failed", f"{name}: {type(exc).__name__} {first}".rstrip())


@contextmanager
def _from_source() -> Iterator[None]:
    """Imports compile the app from its source as it is now, never from a cached `.pyc`, and
    write none. CPython trusts a `.pyc` whose recorded source mtime (in whole seconds) and size
    match: a file edited within the second it was last imported, to the same size (a version
    "1.0" made "1.1"), would give the old code's manifest, and the old version packed."""
    prefix, dont_write = sys.pycache_prefix, sys.dont_write_bytecode
    with tempfile.TemporaryDirectory(prefix="lineup-app-") as empty:
        sys.pycache_prefix, sys.dont_write_bytecode = empty, True
        try:
            yield
        finally:
            sys.pycache_prefix, sys.dont_write_bytecode = prefix, dont_write


def _module_name(target: str) -> str:
    path = Path(target)
    if path.exists():
        return _module_of_path(path.resolve())
    if _DOTTED.match(target):
        return target
    refuse("app_not_found", f"{target}: no such folder, file or module")


def _module_of_path(path: Path) -> str:
    """The dotted name under which `path` (a package folder or a .py file) is importable."""
    if path.is_file():
        if path.suffix != ".py":
            refuse("app_not_found", f"{path}: not a Python file")
        tail = [] if path.name == "__init__.py" else [path.stem]
        folder = path.parent
    else:
        tail = []
        folder = path
        if not (folder / "__init__.py").is_file():
            refuse("app_not_found", f"{path}: not a package (no __init__.py)")
    chain: list[Path] = []  # the enclosing packages, innermost first
    while (folder / "__init__.py").is_file():
        chain.append(folder)
        folder = folder.parent
    if not chain and tail and _on_sys_path(folder):
        return tail[0]  # a plain module file in a folder on the import path
    # The outermost importable package wins: `lineup.miniapps.x`, never a second copy `miniapps.x`.
    for depth in range(len(chain) - 1, -1, -1):
        top = _top_level_name(chain[depth])
        if top is not None:
            return ".".join([top, *(c.name for c in reversed(chain[:depth])), *tail])
    if chain and chain[-1].name.isidentifier():
        # A package outside every import path (a development app, `lineup run --dev-app`):
        # import it as the top-level package it is, from its own folder's parent.
        sys.path.insert(0, str(chain[-1].parent))
        return ".".join([*(c.name for c in reversed(chain)), *tail])
    refuse("app_not_importable", f"{path}: no enclosing package is on the import path")


def _top_level_name(folder: Path) -> str | None:
    """The top-level import name of a package folder, if it has one."""
    for name, module in list(sys.modules.items()):
        paths = getattr(module, "__path__", None) or ()
        if "." not in name and any(
            isinstance(entry, str) and Path(entry).resolve() == folder for entry in paths
        ):
            return name
    for entry in sys.path:
        base = Path(entry or ".").resolve()
        if base == folder.parent and folder.name.isidentifier():
            return folder.name
        if not base.is_dir():
            continue
        for child in base.iterdir():  # a package linked in, as `lineup` is into site-packages
            if child.name.isidentifier() and child.is_symlink() and child.resolve() == folder:
                return child.name
    return None


def _on_sys_path(folder: Path) -> bool:
    return any(Path(entry or ".").resolve() == folder for entry in sys.path)
