"""`lineup app manifest PATH [--out FILE] [--class module:Class]`: a MiniApp's manifest as JSON;
the bundle commands `keygen`, `pack`, `verify` and `trust` (`lineup.sdk._bundle_cli`); and
`new NAME [--surface] [--dir DIR]`, a new MiniApp package (`lineup.sdk._scaffold`).

PATH is a MiniApp package folder inside an importable package (`miniapps/task_dashboard`), a
module file, or a dotted module name (`lineup.miniapps.task_dashboard`). The command imports
it, takes the one `MiniApp` subclass with an `app_info` (or the one `--class` names), and prints
its `lineup.app.v1` manifest (sorted keys, 2-space indent) or writes it to `--out`. A refusal is
one line on stderr, `lineup app manifest: <reason> ...`, and exit status 1 (the same for the
other commands, with their name).

`main(argv)` takes the arguments after `lineup app`; `python -m lineup.sdk.cli manifest PATH`
runs it too.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Final, NoReturn

from ._app import MiniApp
from .manifest import ManifestInvalid, manifest_json
from .schema import SchemaUnsupported
from .tools import AppInfo, manifest_of

__all__ = ["main"]

PROG: Final = "lineup app"
EXIT_REFUSED: Final = 1
_DOTTED: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class _Refused(Exception):
    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


def _refuse(reason: str, detail: str = "") -> NoReturn:
    raise _Refused(reason, detail)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="MiniApp authoring tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    manifest = sub.add_parser(
        "manifest", help="print a MiniApp's lineup.app.v1 manifest, generated from its code"
    )
    manifest.add_argument("path", metavar="PATH", help="package folder, module file or module")
    manifest.add_argument("--out", metavar="FILE", type=Path, help="write here, not to stdout")
    manifest.add_argument(
        "--class",
        dest="app_class",
        metavar="module:Class",
        help="the MiniApp class, when PATH holds several (or none) with an app_info",
    )
    # Here, not at the top: they import this module's helpers.
    from . import _bundle_cli, _scaffold

    _bundle_cli.add_commands(sub)
    _scaffold.add_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `lineup app ...`; returns the exit status (0 done, 1 refused, 2 usage)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error argparse already printed
        return exc.code if isinstance(exc.code, int) else 2
    if args.command != "manifest":
        from . import _bundle_cli, _scaffold

        try:
            return _scaffold.run(args) if args.command == "new" else _bundle_cli.run(args)
        except _Refused as exc:
            return _report(exc.reason, exc.detail, command=args.command)
        except ManifestInvalid as exc:
            return _report(exc.reason, exc.path, command=args.command)
        except SchemaUnsupported as exc:
            return _report(exc.reason, exc.path, command=args.command)
    try:
        app_class = _app_class(args.path, args.app_class)
        text = manifest_json(manifest_of(app_class))
        if args.out is None:
            sys.stdout.write(text)
        else:
            try:
                args.out.write_text(text, encoding="utf-8")
            except OSError as exc:
                _refuse("output_not_written", f"{args.out}: {exc.strerror}")
    except _Refused as exc:
        return _report(exc.reason, exc.detail)
    except ManifestInvalid as exc:
        return _report(exc.reason, exc.path)
    except SchemaUnsupported as exc:
        return _report(exc.reason, exc.path)
    return 0


def _report(reason: str, detail: str, *, command: str = "manifest") -> int:
    line = f"{PROG} {command}: {reason}" + (f" {detail}" if detail else "")
    print(line.replace("\n", " "), file=sys.stderr)
    return EXIT_REFUSED


def _app_class(target: str, class_option: str | None) -> type[MiniApp]:
    module_name, _, class_name = (class_option or "").rpartition(":")
    return _app_class_of(_import(module_name or _module_name(target)), class_name)


def _app_class_of(module: ModuleType, class_name: str = "") -> type[MiniApp]:
    """The MiniApp class `class_name` of `module`, or its one class with an `app_info`."""
    if class_name:
        found = getattr(module, class_name, None)
        if not (isinstance(found, type) and issubclass(found, MiniApp)):
            _refuse("app_not_found", f"{module.__name__}:{class_name} is not a MiniApp class")
        return found
    candidates = {
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, MiniApp)
        and isinstance(getattr(value, "app_info", None), AppInfo)
    }
    if not candidates:
        _refuse("app_not_found", f"no MiniApp class with an app_info in {module.__name__}")
    if len(candidates) > 1:
        names = ", ".join(sorted(c.__qualname__ for c in candidates))
        _refuse("app_ambiguous", f"{names}: choose one with --class")
    return candidates.pop()


def _import(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except (ManifestInvalid, SchemaUnsupported):
        raise  # a tool declaration refused while the module defined its class
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        _refuse("app_import_failed", f"{name}: {type(exc).__name__} {first}".rstrip())


def _module_name(target: str) -> str:
    path = Path(target)
    if path.exists():
        return _module_of_path(path.resolve())
    if _DOTTED.match(target):
        return target
    _refuse("app_not_found", f"{target}: no such folder, file or module")


def _module_of_path(path: Path) -> str:
    """The dotted name under which `path` (a package folder or a .py file) is importable."""
    if path.is_file():
        if path.suffix != ".py":
            _refuse("app_not_found", f"{path}: not a Python file")
        tail = [] if path.name == "__init__.py" else [path.stem]
        folder = path.parent
    else:
        tail = []
        folder = path
        if not (folder / "__init__.py").is_file():
            _refuse("app_not_found", f"{path}: not a package (no __init__.py)")
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
    _refuse("app_not_importable", f"{path}: no enclosing package is on the import path")


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


if __name__ == "__main__":
    # Through the package's module, not this `__main__` copy: `_bundle_cli` raises that
    # module's `_Refused`.
    from lineup.sdk.cli import main as _main

    sys.exit(_main(sys.argv[1:]))
