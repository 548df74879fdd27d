"""Set up the development virtualenv: install pyproject's dependencies, link the package.

Run by `make` with the venv's own interpreter. The repository root is the `lineup` package
(DESIGN §10), so it is linked into site-packages under that name instead of pip-installed:
type checkers and import-linter then see an ordinary package, and `.venv/bin/lineup` runs it.

`--extra NAME` also installs one of pyproject's optional dependency groups besides `dev`:
`make bench` adds `bench` (ray, the peer it measures), so `make run` and `make test` never do.

The browser tests drive Debian's Chromium through Playwright, as its headless shell
(`/usr/bin/chromium-headless-shell`: the same engine without the browser's own windows, whose
WebUI toolbar cost a renderer process per test; the tests took half the CPU with it); `make
bench` drives the whole browser (`/usr/bin/chromium`), as a user runs it. Playwright's own
browser download (`playwright install`) is never used, so Chromium comes from apt here, and so
does npm (with Node.js) where a machine lacks it: the accessibility tests fetch axe-core from
the npm registry, pinned, into a git-ignored folder (`tests/browser/_axe.py`).
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
HEADLESS_CHROMIUM = Path("/usr/bin/chromium-headless-shell")
CHROMIUM = Path("/usr/bin/chromium")
# What the tests need from apt: a program, and the Debian packages that bring it.
FROM_APT: tuple[tuple[str, tuple[str, ...]], ...] = (
    (str(HEADLESS_CHROMIUM), ("chromium-headless-shell",)),
    ("npm", ("nodejs", "npm")),
)
# And what an extra needs besides.
EXTRA_FROM_APT: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "bench": ((str(CHROMIUM), ("chromium",)),),
}


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
    ensure_from_apt(
        (*FROM_APT, *(need for name in args.extra for need in EXTRA_FROM_APT.get(name, ())))
    )


def ensure_from_apt(wanted: tuple[tuple[str, tuple[str, ...]], ...]) -> None:
    """Install from Debian's packages what the tests (and the extras asked for) need and the
    machine lacks (`FROM_APT`, `EXTRA_FROM_APT`).

    Only as root with apt-get; otherwise print the exact command and exit non-zero.
    """
    missing = [(program, packages) for program, packages in wanted if not shutil.which(program)]
    if not missing:
        return
    packages = [package for _, names in missing for package in names]
    install = f"apt-get update && apt-get install -y {' '.join(packages)}"
    apt_get = shutil.which("apt-get")
    if os.geteuid() != 0 or apt_get is None:
        command = install if os.geteuid() == 0 else f"sudo sh -c '{install}'"
        programs = ", ".join(program for program, _ in missing)
        print(
            f"{programs} missing, and the tests need them (Debian's packages; Playwright's own "
            f"browser download is not used). Run:\n    {command}",
            file=sys.stderr,
        )
        sys.exit(1)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run([apt_get, "-qq", "update"], check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(
        [apt_get, "-qq", "install", "-y", *packages],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    still = [program for program, _ in missing if not shutil.which(program)]
    if still:
        print(f"apt-get ran but {', '.join(still)} still missing", file=sys.stderr)
        sys.exit(1)
    print(f"installed {' '.join(packages)}", file=sys.stderr)


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
