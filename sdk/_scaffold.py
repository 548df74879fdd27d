"""`lineup app new NAME [--surface] [--dir DIR]`: a new MiniApp package, ready to test, run
and pack.

Theory of operation
-------------------
The files come from `templates/` beside this module: `*.tmpl`, so that neither pytest, ruff
nor mypy takes them for code of the SDK's own. `README.md.tmpl` is shared; `card/` holds the
app and its test for a `card` view (the Shell's own component), `surface/` the same for an
iframe Surface plus its `web/` files. Each `{{key}}` is replaced by the NAME's forms: the
app_scope (`draw-and-guess`), the package (`draw_and_guess`), the class (`DrawAndGuess`) and the
title (`Draw and guess`). Nothing is written until NAME is valid and `DIR/<package>` is new; the
manifest is then generated from the code just written, as `lineup app manifest` would, by
loading it under a private module name (so two scaffolds of one name in a process never see
each other's module).
"""

from __future__ import annotations

import argparse
import importlib.util
import keyword
import re
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any, Final

from ._cli_support import app_class_of, refuse
from .manifest import manifest_json
from .tools import manifest_of

__all__ = ["TEMPLATES", "add_command", "names_of", "run", "scaffold"]

TEMPLATES: Final = Path(__file__).resolve().parent / "templates"
SUFFIX: Final = ".tmpl"
NAME: Final = re.compile(r"^[a-z][a-z0-9-]{0,62}$")  # an app_scope (lineup.app.v1)
_KEY: Final = re.compile(r"\{\{([a-z_]+)\}\}")
_VIEW_SENTENCE: Final = {
    "card": "and shows the greeting in a card",
    "surface": "in its Surface (`web/index.html` and `web/app.js`)",
}


def add_command(sub: Any) -> None:
    """Add `new` to `lineup app`'s subparsers (`sub`)."""
    new = sub.add_parser("new", help="write a new MiniApp package: app, test, manifest, README")
    new.add_argument("name", metavar="NAME", help="its app_scope: lowercase, digits and '-'")
    new.add_argument(
        "--surface", action="store_true", help="an iframe Surface (web/) instead of a card view"
    )
    new.add_argument(
        "--dir", type=Path, default=Path("."), help="where to make the package (default: here)"
    )


def run(args: argparse.Namespace) -> int:
    """`lineup app new`: write the package, print what was written and what to run next."""
    written = scaffold(args.name, args.dir, surface=args.surface)
    folder = written[0].parent
    for path in written:
        print(f"wrote {path}")
    package = folder.name
    print(
        f"next, from {folder.parent}:\n"
        f"  python -m pytest {package}\n"
        f"  lineup run --dev-app {package}\n"
        f"  lineup app pack {package} --key KEY --out {args.name}.lineup"
    )
    return 0


def names_of(name: str) -> dict[str, str]:
    """The forms of an app_scope the templates use. Refuses `name_invalid`: anything but an
    app_scope, `^[a-z][a-z0-9-]*$` (at most 63 characters), or a Python keyword."""
    package = name.replace("-", "_")
    if not NAME.match(name) or keyword.iskeyword(package):
        refuse("name_invalid", f"{name!r}: an app_scope is lowercase letters, digits and '-'")
    words = name.split("-")
    return {
        "app_scope": name,
        "package": package,
        "class_name": "".join(word.capitalize() for word in words),
        "title": " ".join(words).capitalize(),
    }


def scaffold(name: str, parent: Path, *, surface: bool = False) -> list[Path]:
    """Write the package of `name` into `parent / <package>`; return the files written, the
    package's `__init__.py` first. Refuses `name_invalid` (see `names_of`), `exists` (that
    folder is there), `name_taken` (the package would shadow an importable module: `json`,
    `lineup`), `output_not_written` (it could not be written: then nothing of it stays)."""
    keys = names_of(name)
    variant = "surface" if surface else "card"
    keys["view_sentence"] = _VIEW_SENTENCE[variant]
    folder = parent / keys["package"]
    if folder.exists() or folder.is_symlink():
        refuse("exists", f"{folder}: choose another NAME or --dir")
    package = keys["package"]
    if package in sys.stdlib_module_names or importlib.util.find_spec(package) is not None:
        refuse("name_taken", f"{package}: a module of that name exists, and would be shadowed")
    sources = sorted((TEMPLATES / variant).rglob("*" + SUFFIX))
    files = {
        folder / source.relative_to(TEMPLATES / variant).with_suffix(""): source
        for source in sources
    }
    files[folder / "README.md"] = TEMPLATES / ("README.md" + SUFFIX)
    written = sorted(files, key=lambda path: (path.name != "__init__.py", path))
    manifest = folder / "manifest.json"
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        refuse("output_not_written", f"{exc.filename or parent}: {exc.strerror}")
    try:
        folder.mkdir()  # exclusive: a folder made meanwhile by someone else is never used
    except FileExistsError:
        refuse("exists", f"{folder}: choose another NAME or --dir")
    except OSError as exc:
        refuse("output_not_written", f"{exc.filename or folder}: {exc.strerror}")
    try:
        for path in written:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(_render(files[path].read_text(encoding="utf-8"), keys), "utf-8")
        manifest.write_text(_manifest_text(folder), encoding="utf-8")
    except BaseException as exc:
        # The folder is this call's own (it was not there): no half-made package stays.
        shutil.rmtree(folder, ignore_errors=True)
        if isinstance(exc, OSError):
            refuse("output_not_written", f"{exc.filename or folder}: {exc.strerror}")
        raise
    return [*written, manifest]


def _render(template: str, keys: dict[str, str]) -> str:
    return _KEY.sub(lambda match: keys[match.group(1)], template)


def _manifest_text(folder: Path) -> str:
    """The manifest of the package just written, generated from its code."""
    name = f"_lineup_new_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None:  # never, for a .py file
        refuse("app_import_failed", f"{folder}: not loadable")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pydantic resolves the models' annotations through it
    try:
        spec.loader.exec_module(module)
        return manifest_json(manifest_of(app_class_of(module)))
    finally:
        sys.modules.pop(name, None)
