"""Set up the development virtualenv: install pyproject's dependencies, link the package.

Run by `make` with the venv's own interpreter. The repository root is the `lineup` package
(DESIGN §10), so it is linked into site-packages under that name instead of pip-installed:
type checkers and import-linter then see an ordinary package, and `.venv/bin/lineup` runs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, *requirements], check=True)

    site = Path(sysconfig.get_paths()["purelib"])
    link = site / "lineup"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(ROOT, target_is_directory=True)

    script = Path(sys.executable).parent / "lineup"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m lineup "$@"\n')
    script.chmod(0o755)
    print(f"linked {link} -> {ROOT}", file=sys.stderr)


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
