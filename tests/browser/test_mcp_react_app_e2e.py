"""The React build of the ext-apps "Get Time" example (`@modelcontextprotocol/server-basic-react`,
its npm page byte for byte), driven by its own buttons in real Chromium on a real runtime, as
the vanillajs build is in test_mcp_app_host_e2e.py and test_mcp_app_tool_lifecycle_e2e.py:
"Get Server Time" is its `tools/call`, answered with the tool's real result, which it shows;
"Send Message" is `ui/message`, a proposal in the chat's message box; "Open Link" is
`ui/open-link`, the runtime's own prompt; closing the app sends `ui/resource-teardown`, which
the page answers (its own console says so)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Frame, Page, expect

from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.browser import framed, load_shell
from lineup.tests.support.mcp_time_app import TimeApp
from lineup.tests.support.runtime import CONVERSATION, agent_client, start_runtime_with_app

from .conftest import ShellPage
from .test_mcp_app_host_e2e import HOST_SAID
from .test_mcp_app_surface_e2e import BUILDS, published_page

WAIT_MS: Final = 15_000
FRAME: Final = '[data-testid="surface-frame"]'
SHOWN: Final = BUILDS["react"][1]  # where the page shows the time it got


def frame_of(p: Page) -> Frame:
    return framed(p, FRAME, wait_ms=WAIT_MS)


async def test_the_react_builds_own_buttons_are_served_by_lineup(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    web = data_dir / "web"
    web.mkdir(parents=True)
    (web / "index.html").write_bytes(published_page("react"))
    runtime = await start_runtime_with_app(nursery, data_dir, TimeApp, title="Get Time")
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT_MS / 1000)
    revision = await agent.inventory()
    await page.run(lambda p: p.context.add_init_script(HOST_SAID))
    await page.run(load_shell(runtime.shell_url, wait_ms=WAIT_MS))
    await agent.client.call_tool(CONVERSATION, "gettime.get-time", {}, revision, call_id="c-time")
    first = (await agent.terminal("c-time"))["payload"]["result"]
    shown_first = BUILDS["react"][2](first)

    def buttons(p: Page) -> None:
        frame = frame_of(p)
        expect(frame.locator(SHOWN)).to_have_text(shown_first, timeout=WAIT_MS)
        # Its own tools/call: a new time, the tool's real result, shown by the page.
        frame.get_by_role("button", name="Get Server Time").click()
        expect(frame.locator(SHOWN)).not_to_have_text(shown_first, timeout=WAIT_MS)
        fetched = json.loads(frame.locator(SHOWN).inner_text())
        assert set(fetched) == {"time"}
        # ui/message: proposed above the chat's message box, never sent for the user.
        frame.get_by_role("button", name="Send Message").click()
        expect(p.get_by_test_id("proposal-text")).not_to_be_empty(timeout=WAIT_MS)
        expect(p.get_by_test_id("proposal-from")).to_contain_text("Get Time")
        # ui/open-link: the runtime's own prompt; declined, nothing opens.
        frame.get_by_role("button", name="Open Link").click()
        expect(p.get_by_test_id("link-prompt")).to_be_visible(timeout=WAIT_MS)
        p.get_by_test_id("link-decline").click()
        expect(p.get_by_test_id("link-prompt")).to_be_hidden()
        assert len(p.context.pages) == 1
        # Closing: the page is asked to tear down, and answers.
        with p.expect_console_message(
            lambda m: m.text == "App is being torn down", timeout=WAIT_MS
        ):
            p.get_by_role("button", name="Close Get Time").click()
        expect(p.locator(FRAME)).to_have_count(0, timeout=WAIT_MS)

    await page.run(buttons)
    await agent.settle()
    said = [m for m in agent.seen if m["type"] == "lineup.v1.text"]
    assert said == []  # the proposal was never sent: the user did not send it
