"""An MCP App's UI, unchanged, as a LineUp Surface, in real Chromium against a real runtime.

The page is the ext-apps project's published "Get Time" example (`dist/mcp-app.html` of
`@modelcontextprotocol/server-basic-vanillajs`, fetched from npm pinned by version and
integrity, byte for byte): one file whose code (the `App` class bundled in) is an inline module
script. The app (`tests/support/mcp_time_app.py`) declares it an MCP App's document; the
hostbridge serves it with that script moved to a file of its own, guarded, under a CSP that
allows no inline script (hostbridge/_mcp_document.py). What a user would see: the Agent calls
the tool, the page comes in front, completes the MCP Apps handshake with the Shell, gets the
tool's input and result, and shows the time, with nothing refused on the way. The same runs
for the example built with React (`@modelcontextprotocol/server-basic-react`), which shows the
result's text content rather than its structured content: the whole result as JSON, as the
runtime's CallToolResult carries it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest
import trio
from playwright.sync_api import Page, expect

from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.browser import load_shell
from lineup.tests.support.mcp_time_app import MCP_APP_PACKAGE, MCP_REACT_APP_PACKAGE, TimeApp
from lineup.tests.support.npm import NpmPackage, installed
from lineup.tests.support.runtime import CONVERSATION, agent_client, start_runtime_with_app

from .conftest import ShellPage

WAIT_MS: Final = 15_000
FRAME: Final = '[data-testid="surface-frame"]'


# Each build of the example, where its page shows the server's time, and what it shows of a
# result: its structured `time` (vanillajs), or its text content (react).
def _structured(result: dict[str, Any]) -> str:
    return str(result["time"])


def _text(result: dict[str, Any]) -> str:
    return json.dumps(result, separators=(",", ":"), sort_keys=True)


BUILDS: Final[dict[str, tuple[tuple[str, str, str], str, Callable[[dict[str, Any]], str]]]] = {
    "vanillajs": (MCP_APP_PACKAGE, "#server-time", _structured),
    "react": (MCP_REACT_APP_PACKAGE, "p:has-text('Server Time:') code", _text),
}


def published_page(build: str = "vanillajs") -> bytes:
    """The example's page as npm ships it."""
    package = NpmPackage(*BUILDS[build][0])
    return (installed(package) / "dist" / "mcp-app.html").read_bytes()


@pytest.mark.parametrize("build", sorted(BUILDS))
async def test_the_published_get_time_mcp_app_runs_unchanged_in_a_surface(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage, build: str
) -> None:
    web = data_dir / "web"
    web.mkdir(parents=True)
    (web / "index.html").write_bytes(published_page(build))
    runtime = await start_runtime_with_app(nursery, data_dir, TimeApp, title="Get Time")
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT_MS / 1000)
    revision = await agent.inventory()
    await page.run(load_shell(runtime.shell_url, wait_ms=WAIT_MS))
    await agent.client.call_tool(CONVERSATION, "gettime.get-time", {}, revision, call_id="c-time")
    terminal = await agent.terminal("c-time")
    assert terminal["type"] == "lineup.v1.tool.result", terminal
    shows = BUILDS[build][2](terminal["payload"]["result"])

    def shown(p: Page) -> list[str]:
        handle = p.locator(FRAME).element_handle(timeout=WAIT_MS)
        frame = handle.content_frame()
        assert frame is not None
        # The app's own code ran (its handshake, then the tool's result): the time it got.
        expect(frame.locator(BUILDS[build][1])).to_have_text(shows, timeout=WAIT_MS)
        violations: list[str] = frame.evaluate("() => window.__cspViolations")
        return violations

    # Nothing refused, but the one probe the bundled zod makes (`new Function`, caught: it then
    # runs without eval), which the spec's own default policy refuses as well.
    assert [v for v in await page.run(shown) if v != "script-src eval"] == []
    assert published_page(build) == (data_dir / "web" / "index.html").read_bytes()  # unchanged


def test_the_published_page_is_one_inline_module_script() -> None:
    # What the test above rests on: the page's code is inline (which a Surface's CSP refuses
    # as it stands), so the page runs only if the hostbridge moves it out.
    page = published_page().decode()
    assert page.count("<script") == 1 and '<script type="module" crossorigin>' in page
