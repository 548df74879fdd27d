"""npm packages for the tests: fetched once from the registry, pinned, checked, never vendored.

Theory of operation
-------------------
A test names a package by `NpmPackage(name, version, integrity)`: the version it was written
against and the registry's `dist.integrity` of that version's tarball (`npm view NAME@VERSION
dist.integrity`). `installed(package)` answers the package's folder, installing it with npm the
first time into `build/npm/NAME@VERSION/` (git-ignored, like every build output), under a file
lock of its own so that parallel test workers install it once, and different packages at once:
on a fresh clone the suite's longest tests, which start first, wait for them.

The install runs no package's scripts (`--ignore-scripts`), goes to a fresh folder renamed into
place (a killed install leaves nothing half there), and is accepted only if the lockfile npm
wrote names the pinned version with the pinned integrity: npm checks each tarball against the
integrity it records, so a package changed on the registry under the same version fails the
tests rather than runs. The dependencies are npm's to resolve, each checked the same way.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[2]
NPM_DIR: Final = ROOT / "build" / "npm"
NPM_INSTALL: Final = "apt-get update && apt-get install -y npm"
INSTALL_TIMEOUT_S: Final = 300


@dataclass(frozen=True)
class NpmPackage:
    name: str  # `axe-core`, `@modelcontextprotocol/ext-apps`
    version: str
    integrity: str  # the registry's `dist.integrity` of this version's tarball

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def folder(self) -> Path:
        """Where it is installed: `build/npm/NAME@VERSION/` (a scope's `/` as `+`)."""
        return NPM_DIR / self.spec.replace("/", "+")


def package_dir(prefix: Path, package: NpmPackage) -> Path:
    return prefix / "node_modules" / package.name


def _locked(prefix: Path, package: NpmPackage) -> bool:
    """The install under `prefix` is the pinned one: the version and integrity npm recorded."""
    try:
        lock = json.loads((prefix / "package-lock.json").read_text())
        meta = json.loads((package_dir(prefix, package) / "package.json").read_text())
    except (OSError, ValueError):
        return False
    entry = lock.get("packages", {}).get(f"node_modules/{package.name}", {})
    return bool(
        meta.get("version") == package.version
        and entry.get("version") == package.version
        and entry.get("integrity") == package.integrity
    )


def _install(package: NpmPackage) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(f"npm is missing; {package.spec} needs it. Run: {NPM_INSTALL}")
    NPM_DIR.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix="install-", dir=NPM_DIR))
    try:
        (fresh / "package.json").write_text('{"private": true}\n')
        subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(fresh),
                "--no-audit",
                "--no-fund",
                "--ignore-scripts",
                "--save-exact",
                package.spec,
            ],
            check=True,
            capture_output=True,
            timeout=INSTALL_TIMEOUT_S,
        )
        if not _locked(fresh, package):
            raise RuntimeError(
                f"npm did not install {package.spec} with integrity {package.integrity} "
                f"(see {fresh / 'package-lock.json'})"
            )
        if package.folder.exists():
            shutil.rmtree(package.folder)
        os.rename(fresh, package.folder)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


def installed(package: NpmPackage) -> Path:
    """The folder of `package` (its `package.json` at the top), installed from npm the first
    time (see the module docstring)."""
    NPM_DIR.mkdir(parents=True, exist_ok=True)
    with package.folder.with_name(f".{package.folder.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _locked(package.folder, package):
            _install(package)
    return package_dir(package.folder, package)
