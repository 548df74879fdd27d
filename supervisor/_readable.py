"""What a sandboxed MiniApp's process may read and write (Landlock's rules, DESIGN §8): the
interpreter and its libraries, the runtime code a MiniApp imports (`RUNTIME_CODE`), the app's own
package, and its data directory alone to write. The app's code is located without importing it:
its package's `__init__` is MiniApp code, which runs only inside the sandbox.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterable, Iterator, Mapping
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from typing import Any, Final

from . import _landlock

__all__ = [
    "RUNTIME_CODE",
    "bundled_code",
    "bundled_rules",
    "exec_rules",
    "landlock_rules",
    "own_code",
    "own_module",
    "package_root",
    "path_entries",
    "readable_runtime",
    "runtime_trees",
]

_SYSTEM_READ: Final = (
    "/usr/lib",
    "/usr/lib64",
    "/lib",
    "/lib64",
    "/usr/local/lib",
    "/usr/share/zoneinfo",
)
_LOADERS: Final = ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1")
# Public configuration a server's runtime reads at start (Node's OpenSSL reads openssl.cnf).
_SERVER_READ: Final = ("/etc/ssl",)
_SYSTEM_FILES: Final = ("/etc/ld.so.cache", "/etc/localtime", "/dev/urandom")
# The runtime's code a MiniApp's process imports, relative to the package root: the closure of
# `lineup.sdk` and the actor kernel (tests/supervisor/test_sandbox.py recomputes it from a fresh
# interpreter). A directory is granted with what is beneath it, a file alone: so the package
# root, `actors/` and `miniapps/` are readable only file by file, never listed.
RUNTIME_CODE: Final = (
    "__init__.py",
    "_lazy.py",
    "_logs.py",
    "actors/__init__.py",
    "actors/kernel",
    "facts",
    "sdk",
    "miniapps/__init__.py",
)


def landlock_rules(
    data_dir: Path, home: Path, config: dict[str, Any], target: str
) -> list[_landlock.Rule]:
    """Read: the interpreter, its libraries, the runtime code a MiniApp runs, the app's own
    package. Write: `home`. Nothing under `data_dir` but `home` (the database, the control
    socket, other apps)."""
    path = tuple(sys.path)
    module = own_module(config, target)
    if config.get("app_path"):
        # A development or installed app's code is located anew, in each child: it may
        # change between two starts.
        return _rules(data_dir, home, own_code(module, package_root()), path)
    return list(bundled_rules(data_dir, home, module, path))


@functools.lru_cache(maxsize=64)
def bundled_rules(
    data_dir: Path, home: Path, module: str, path: tuple[str, ...]
) -> tuple[_landlock.Rule, ...]:
    """`landlock_rules` of a bundled app, whose code is the runtime's own (immutable while it
    runs): the same for each child of one app, so the zygote makes them before it forks
    (`_sandbox.warm`). `path` is `sys.path`."""
    return tuple(_rules(data_dir, home, bundled_code(module, path), path))


def _rules(
    data_dir: Path, home: Path, own: Iterable[Path], path: tuple[str, ...]
) -> list[_landlock.Rule]:
    own = tuple(own)
    readable = set(readable_runtime(data_dir, home.name, path))
    readable.update(piece for tree in own for piece in _landlock.carve(tree, data_dir))
    readable.update(_in_own_bundle(own, data_dir, home.name))
    rules: list[_landlock.Rule] = [(str(tree), _landlock.FS_READ) for tree in sorted(readable)]
    rules += [(file, _landlock.READ_FILE) for file in _SYSTEM_FILES]
    rules.append(("/dev/null", _landlock.READ_FILE | _landlock.WRITE_FILE))
    rules.append((str(home), _landlock.FS_WRITE_TREE))
    return rules


@functools.lru_cache(maxsize=16)
def readable_runtime(data_dir: Path, scope: str, path: tuple[str, ...]) -> frozenset[Path]:
    """What `landlock_rules` grants to read of the interpreter, its libraries, the runtime's
    code and the system's: the same for every child of one zygote with one data dir (and
    scope), so the zygote resolves it before it forks (`_sandbox.warm`)."""
    trees = {*runtime_trees(path), *(Path(p) for p in _SYSTEM_READ)}
    readable = {piece for tree in trees for piece in _landlock.carve(tree, data_dir)}
    readable.update(_in_own_bundle(trees, data_dir, scope))
    return frozenset(readable)


@functools.lru_cache(maxsize=64)
def bundled_code(module: str, path: tuple[str, ...]) -> tuple[Path, ...]:
    """`own_code` of a bundled app's module, located once per zygote (`path` is `sys.path`)."""
    return tuple(own_code(module, package_root()))


def own_module(config: Mapping[str, Any], target: str) -> str:
    """The module of the app's own code: its `app` (what the SDK's host imports inside), or,
    for a MiniApp that is its own host (the tests' hostile actor), its target's module."""
    return (str(config.get("app") or "") or target).partition(":")[0]


def _in_own_bundle(trees: Iterable[Path], data_dir: Path, scope: str) -> Iterator[Path]:
    """An installed app's code is in the verified cache under `data_dir`: its own version
    directory alone (`bundles/<its scope>/…`), never another app's or anything else there."""
    bundles = data_dir / "bundles" / scope
    return (tree for tree in trees if tree.is_relative_to(bundles) and tree != bundles)


def exec_rules(paths: tuple[str, ...]) -> list[_landlock.Rule]:
    """What an MCP app's process may execute (read with it): each of `paths` (a file alone, a
    folder with what is beneath it), resolved, and the dynamic loader every program needs,
    which the kernel opens for execution too; and `_SERVER_READ`, read-only. Nothing for none (a
    MiniApp executes nothing)."""
    if not paths:
        return []
    rules: list[_landlock.Rule] = [(path, _landlock.FS_READ) for path in _SERVER_READ]
    for raw in (*paths, *_LOADERS):
        path = Path(raw).resolve()
        if path.is_dir():
            rules.append((str(path), _landlock.FS_READ | _landlock.EXECUTE))
        elif path.is_file():
            rules.append((str(path), _landlock.READ_FILE | _landlock.EXECUTE))
            # A virtual environment's interpreter reads its `pyvenv.cfg` first.
            venv = Path(raw).parent.parent / "pyvenv.cfg"
            if venv.is_file():
                rules.append((str(venv.resolve()), _landlock.READ_FILE))
    return rules


@functools.lru_cache(maxsize=1)
def package_root() -> Path:
    """The directory of the `lineup` package (the repository its link points to); resolved
    once, in the zygote before it forks (`_sandbox.warm`)."""
    lineup = sys.modules["lineup"].__file__
    assert lineup is not None
    return Path(lineup).resolve().parent


@functools.lru_cache(maxsize=4)
def runtime_trees(path: tuple[str, ...]) -> tuple[Path, ...]:
    """The interpreter's libraries, the entries of `path` (`sys.path`) beneath them, and the
    runtime code a MiniApp runs: the same for every child of one zygote, which resolves them
    once before it forks (`_sandbox.warm`); a child whose `sys.path` differs resolves its own."""
    prefixes = {
        Path(p).resolve()
        for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)
    }
    trees = [prefix / "lib" for prefix in prefixes]
    for entry in path:  # site-packages and the like; never the cwd or other odd entries
        resolved = Path(entry).resolve() if entry else None
        if resolved is not None and any(resolved.is_relative_to(p) for p in prefixes):
            trees.append(resolved)
    root = package_root()
    return (*trees, *(root / piece for piece in RUNTIME_CODE))


def own_code(module: str, root: Path) -> list[Path]:
    """What of `module` its process may read: the directory of its package (its own, if it is
    one), and the `__init__.py` of each package above it, which its import runs; located
    without importing anything. The module's file alone where that directory would hold more
    than the app (a `sys.path` entry, or the runtime's package root or a parent of it).
    Nothing if it is not found (the host then fails to import it, inside, with a clear error)."""
    spec = _locate(module) if module else None
    if spec is None:
        return []
    parents = module.split(".")[:-1]
    paths = []
    for index in range(len(parents)):
        parent = _locate(".".join(parents[: index + 1]))
        if parent is not None and parent.origin is not None and parent.has_location:
            paths.append(Path(parent.origin).resolve())
    if spec.submodule_search_locations:
        where = Path(next(iter(spec.submodule_search_locations))).resolve()
        return [*paths, where] if not root.is_relative_to(where) else paths
    if spec.origin is None or not spec.has_location:
        return paths
    origin = Path(spec.origin).resolve()
    if origin.parent in path_entries(tuple(sys.path)) or root.is_relative_to(origin.parent):
        return [*paths, origin]
    return [*paths, origin.parent]


@functools.lru_cache(maxsize=4)
def path_entries(path: tuple[str, ...]) -> frozenset[Path]:
    """The entries of `path` (`sys.path`), resolved: like `runtime_trees`, the same for every
    child of one zygote, which resolves them once before it forks (a symlink per component:
    most of what locating an app's code cost a child)."""
    return frozenset(Path(entry).resolve() for entry in path if entry)


def _locate(module: str) -> ModuleSpec | None:
    """`module`'s spec, found part by part as the import system would, but running no package's
    `__init__` (a MiniApp's is MiniApp code, which runs only inside)."""
    spec: ModuleSpec | None = None
    search: list[str] | None = None
    parts = module.split(".")
    for index in range(len(parts)):
        if index and not search:
            return None  # a plain module has no submodules
        name = ".".join(parts[: index + 1])
        loaded = sys.modules.get(name)
        try:
            spec = (
                loaded.__spec__
                if loaded is not None and loaded.__spec__ is not None
                else PathFinder.find_spec(name, search)
            )
        except (ImportError, ValueError):
            return None
        if spec is None:
            return None
        locations = spec.submodule_search_locations
        search = list(locations) if locations is not None else None
    return spec
