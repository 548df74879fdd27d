"""The MCP server `make run` offers, in real Chromium against the real runtime (issue 31): the
catalog holds the bundle `make run`'s builder makes of it (`lineup.ops.catalog` packs the pinned
`@modelcontextprotocol/server-basic-vanillajs` with `lineup app pack-mcp` and its
`MCP_SERVERS` arguments, `tests/ops/test_catalog.py` proves it; here the same pack, made once
for the test session, `lineup.tests.support.session_builds`), the App Registry
lists the server among the Available apps, the user installs it with the keyboard and allows it
in the runtime's prompt, and the Agent's call of its tool gets one result from the server,
which runs in the sandbox from its installed folder, offline, and opens the server's own UI,
which came in the bundle.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest
import trio
from playwright.sync_api import Page, expect

from lineup.facts.npm_pins import BASIC_VANILLAJS
from lineup.ops.catalog import MCP_SERVERS
from lineup.tests.support.browser import framed
from lineup.tests.support.bundles import write_catalog
from lineup.tests.support.runtime import CONVERSATION
from lineup.tests.support.session_builds import MCP_PACK_KEY, shared_pack

from .conftest import ShellPage
from .test_app_registry_catalog_e2e import available
from .test_app_registry_e2e import (
    WAIT_MS,
    WAIT_S,
    registry,
    registry_in_front,
    registry_opened,
    row,
)

SCOPE: Final = "server-basic-vanillajs"
FILE: Final = f"{SCOPE}-{BASIC_VANILLAJS.version}.lineup"
INSTALL: Final = f"Install {SCOPE} {BASIC_VANILLAJS.version}"
pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`make run`'s catalog, its MCP server alone (no example package: they have their tests),
    packed with the catalog's arguments for it."""
    [(pin, arguments)] = MCP_SERVERS
    assert pin == BASIC_VANILLAJS
    bundle = shared_pack(tmp_path_factory, MCP_PACK_KEY, *pin.spec_args(), "--", *arguments)
    folder = tmp_path_factory.mktemp("catalog") / "catalog"
    return write_catalog(folder, MCP_PACK_KEY, {FILE: bundle})


def installed_with_the_keyboard(p: Page) -> None:
    button = available(p, FILE).get_by_role("button", name=INSTALL)
    expect(button).to_be_enabled(timeout=WAIT_MS)
    button.focus()
    p.keyboard.press("Enter")
    prompt = p.get_by_test_id("permission-prompt")
    expect(prompt).to_be_visible(timeout=WAIT_MS)
    expect(prompt.get_by_test_id("permission-detail")).to_contain_text(
        f"{SCOPE} {BASIC_VANILLAJS.version}"
    )
    expect(prompt).to_have_attribute("data-armed", "true", timeout=WAIT_MS)
    p.keyboard.press("Tab")
    expect(prompt.get_by_test_id("permission-allow-once")).to_be_focused()
    p.keyboard.press("Enter")
    expect(prompt).to_be_hidden(timeout=WAIT_MS)
    expect(registry(p).locator("#status")).to_have_text(
        f"Installed {SCOPE} {BASIC_VANILLAJS.version}.", timeout=WAIT_MS
    )
    expect(row(p, SCOPE)).to_have_attribute("data-enabled", "true", timeout=WAIT_MS)


def shows_the_time(p: Page, time: str) -> None:
    frame = framed(p, f'iframe[title^="{SCOPE} "]', wait_ms=WAIT_MS)
    expect(frame.locator("#server-time")).to_have_text(time, timeout=WAIT_MS)


async def test_the_mcp_server_make_run_offers_installs_from_the_registry_and_answers_the_agent(
    nursery: trio.Nursery, data_dir: Path, catalog: Path, page: ShellPage
) -> None:
    """About ten seconds by what it proves: `make run`'s own catalog (its pack of the pinned
    npm server, shared by the session), installed from the App Registry in Chromium by
    keyboard, the server started in its sandbox and its UI opened on the Agent's call."""
    agent, _ = await registry_opened(nursery, data_dir, page, catalog=catalog)
    await page.run(registry_in_front)
    await page.run(installed_with_the_keyboard)

    tool = f"{SCOPE}.get-time"
    with_it = await agent.revision_with(tool)
    with trio.fail_after(WAIT_S):
        await agent.client.call_tool(CONVERSATION, tool, {}, with_it, call_id="time-1")
    done = await agent.terminal("time-1")
    assert done["type"] == "lineup.v1.tool.result", done
    assert set(done["payload"]["result"]) == {"time"}
    # Its UI came in the bundle (read by pack-mcp's listing): the call opened it in front,
    # and it shows the server's time.
    await page.run(lambda p: shows_the_time(p, str(done["payload"]["result"]["time"])))
    assert (data_dir / "bundles" / SCOPE / BASIC_VANILLAJS.version / "bundle.lineup").is_file()
    assert page.off_loopback() == [], "a request left 127.0.0.1"
    assert page.errors == []
