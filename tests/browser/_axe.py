"""axe-core for the browser tests: fetched once from npm, pinned, and run on a page or a frame.

Theory of operation
-------------------
`axe_source()` answers axe-core's `axe.min.js`, installing `axe-core@AXE_VERSION` with npm into
`build/axe/` (git-ignored, like every build output; never vendored) the first time, under a file
lock so that parallel test workers install it once. The install goes to a fresh folder renamed
into place, so a killed install leaves nothing half there; the installed `package.json` must
name the pinned version, or the tests fail rather than run another axe.

`violations(frame, source)` evaluates the source in that document (through the DevTools
protocol, so the Shell's CSP does not apply to it) and runs `axe.run` on it with WCAG 2.0/2.1
A and AA rules only (`TAGS`), answering each violation as its rule id, impact and the CSS
targets of its nodes: what a failing assertion prints. Frames are not followed (`iframes:
false`): a Surface is another origin with a CSP of its own, so a test runs axe in its frame
as well, by the same call.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Final

from playwright.sync_api import Frame, Page

AXE_VERSION: Final = "4.14.1"
TAGS: Final = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa")
ROOT: Final = Path(__file__).resolve().parents[2]
AXE_DIR: Final = ROOT / "build" / "axe"
NPM_INSTALL: Final = "apt-get update && apt-get install -y npm"
INSTALL_TIMEOUT_S: Final = 180

RUN: Final = """
async (tags) => {
  const result = await axe.run(document, {
    runOnly: { type: "tag", values: tags },
    iframes: false,
    resultTypes: ["violations"],
  });
  return result.violations.map((v) => ({
    id: v.id,
    impact: v.impact,
    help: v.help,
    targets: v.nodes.map((n) => n.target.join(" ")).slice(0, 10),
  }));
}
"""


def _package(folder: Path) -> Path:
    return folder / "node_modules" / "axe-core"


def _installed(folder: Path) -> bool:
    try:
        meta = json.loads((_package(folder) / "package.json").read_text())
    except (OSError, ValueError):
        return False
    return meta.get("version") == AXE_VERSION and (_package(folder) / "axe.min.js").is_file()


def _install() -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(f"npm is missing; the accessibility tests need it. Run: {NPM_INSTALL}")
    AXE_DIR.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix="axe-", dir=AXE_DIR.parent))
    try:
        subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(fresh),
                "--no-save",
                "--no-package-lock",
                "--no-audit",
                "--no-fund",
                "--ignore-scripts",
                f"axe-core@{AXE_VERSION}",
            ],
            check=True,
            capture_output=True,
            timeout=INSTALL_TIMEOUT_S,
        )
        if not _installed(fresh):
            raise RuntimeError(f"npm did not install axe-core {AXE_VERSION} in {fresh}")
        if AXE_DIR.exists():
            shutil.rmtree(AXE_DIR)
        os.rename(fresh, AXE_DIR)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


def axe_source() -> str:
    """axe-core's script, installed from npm the first time (see the module docstring)."""
    AXE_DIR.parent.mkdir(parents=True, exist_ok=True)
    with (AXE_DIR.parent / "axe.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _installed(AXE_DIR):
            _install()
    return (_package(AXE_DIR) / "axe.min.js").read_text()


def violations(frame: Page | Frame, source: str) -> list[dict[str, Any]]:
    """The WCAG 2.1 A/AA violations axe finds in `frame`'s document as it is now."""
    if not frame.evaluate("() => typeof window.axe === 'object'"):
        frame.evaluate(source)
    found: list[dict[str, Any]] = frame.evaluate(RUN, list(TAGS))
    return found
