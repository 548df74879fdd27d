"""Set up the development virtualenv: install pyproject's dependencies, link the package.

Run by `make` with the venv's own interpreter. The repository root is the `lineup` package
(DESIGN §10), so it is linked into site-packages under that name instead of pip-installed:
type checkers and import-linter then see an ordinary package, and `.venv/bin/lineup` runs it.

`--extra NAME` also installs one of pyproject's optional dependency groups besides `dev`:
`make bench` adds `bench` (ray, the peer it measures), so `make run` and `make test` never do.

The browser tests drive Debian's Chromium (`/usr/bin/chromium`) through Playwright; Playwright's
own browser download (`playwright install`) is never used, so Chromium comes from apt here.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_INSTALL = "apt-get update && apt-get install -y chromium"


def main() -> None:
    parser = argparse.ArgumentParser(description="Set up the development virtualenv.")
    parser.add_argument(
        "--extra", action="append", default=[], metavar="NAME", help="an optional extra, e.g. bench"
    )
    args = parser.parse_args()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    unknown = [name for name in args.extra if name not in extras]
    if unknown:
        parser.error(f"no such extra in pyproject.toml: {', '.join(unknown)}")
    requirements = [*project["dependencies"], *extras["dev"]]
    for name in args.extra:
        requirements += extras[name]
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
    ensure_chromium()


def ensure_chromium() -> None:
    """Install Debian's Chromium for the browser tests when it is missing.

    Only as root with apt-get; otherwise print the exact command and exit non-zero.
    """
    if CHROMIUM.exists():
        return
    apt_get = shutil.which("apt-get")
    if os.geteuid() != 0 or apt_get is None:
        command = CHROMIUM_INSTALL if os.geteuid() == 0 else f"sudo sh -c '{CHROMIUM_INSTALL}'"
        print(
            f"{CHROMIUM} is missing and the browser tests need it (Debian's chromium package; "
            f"Playwright's own browser download is not used). Run:\n    {command}",
            file=sys.stderr,
        )
        sys.exit(1)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run([apt_get, "-qq", "update"], check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(
        [apt_get, "-qq", "install", "-y", "chromium"],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    if not CHROMIUM.exists():
        print(f"apt-get installed chromium but {CHROMIUM} is still missing", file=sys.stderr)
        sys.exit(1)
    print(f"installed {CHROMIUM}", file=sys.stderr)


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
