"""axe-core for the browser tests: fetched once from npm, pinned, and run on a page or a frame.

Theory of operation
-------------------
`axe_source()` answers axe-core's `axe.min.js`, installed from npm, pinned by version and
integrity, into `build/npm/` the first time (`tests/support/npm.py`): never vendored, and the
tests fail rather than run another axe.

`violations(frame, source)` evaluates the source in that document (through the DevTools
protocol, so the Shell's CSP does not apply to it) and runs `axe.run` on it with WCAG 2.0/2.1
A and AA rules only (`TAGS`), answering each violation as its rule id, impact and the CSS
targets of its nodes: what a failing assertion prints. Frames are not followed (`iframes:
false`): a Surface is another origin with a CSP of its own, so a test runs axe in its frame
as well, by the same call.
"""

from __future__ import annotations

from typing import Any, Final

from playwright.sync_api import Frame, Page

from tests.support.npm import NpmPackage, installed

AXE: Final = NpmPackage(
    "axe-core",
    "4.14.1",
    "sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==",
)
TAGS: Final = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa")

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


def axe_source() -> str:
    """axe-core's script, installed from npm the first time (`tests/support/npm.py`)."""
    return (installed(AXE) / "axe.min.js").read_text()


def violations(frame: Page | Frame, source: str) -> list[dict[str, Any]]:
    """The WCAG 2.1 A/AA violations axe finds in `frame`'s document as it is now."""
    if not frame.evaluate("() => typeof window.axe === 'object'"):
        frame.evaluate(source)
    found: list[dict[str, Any]] = frame.evaluate(RUN, list(TAGS))
    return found
