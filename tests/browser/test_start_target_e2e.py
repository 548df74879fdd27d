"""The Shell's deep link in real Chromium against the real runtime (seed 004 §4.3: an explicit
target first). The fragment is URL-encoded parameters: `#token=<token>&open=<app_scope>` (or
`#open=<app_scope>` alone once the tab holds its token). `open=whiteboard` puts a Whiteboard
in front with a board to draw on; the link leaves the address bar with the token, so a
reload opens nothing new; an unknown app is a notice naming its code, and the chat stays.
Browser waits are Playwright's auto-waiting `expect`. No sleeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Locator, Page, expect

from lineup.tests.support.runtime import start_runtime

from .conftest import ShellPage

WAIT_MS: Final = 15_000  # a real runtime: processes, an HTTP AppServer
FRAME: Final = '[data-testid="surface-frame"]'


def tabs(p: Page) -> Locator:
    return p.get_by_test_id("app-switcher").get_by_test_id("app-tab")


def online(p: Page) -> None:
    expect(p.get_by_test_id("runtime-state")).to_have_attribute(
        "data-state", "online", timeout=WAIT_MS
    )


def whiteboard_in_front(p: Page) -> None:
    expect(tabs(p)).to_have_text(["Chat", "Whiteboard"], timeout=WAIT_MS)
    expect(tabs(p).nth(1)).to_have_attribute("aria-current", "page", timeout=WAIT_MS)
    expect(p.get_by_test_id("chat")).to_be_hidden(timeout=WAIT_MS)
    board = p.frame_locator(FRAME).locator("body")
    expect(board).to_have_attribute("data-state", "ready", timeout=WAIT_MS)
    expect(board.locator("#board-title")).to_have_text("Whiteboard", timeout=WAIT_MS)
    expect(board).to_have_attribute("data-phase", "drawing", timeout=WAIT_MS)


async def test_a_deep_link_with_the_token_opens_the_whiteboard_in_front(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    assert "#token=" in runtime.shell_url

    def open_link(p: Page) -> None:
        p.goto(runtime.shell_url + "&open=whiteboard")
        online(p)
        whiteboard_in_front(p)
        # Both parameters are taken from the address bar (neither is left in history).
        assert "#" not in p.url

    await page.run(open_link)
    assert runtime.supervisor.children["miniapp:whiteboard"].state == "running"

    def reload_opens_nothing_new(p: Page) -> None:
        p.reload()
        online(p)
        whiteboard_in_front(p)  # the same instance, still in front: no second tab

    await page.run(reload_opens_nothing_new)
    assert page.console_errors == []


async def test_an_unknown_app_in_the_link_is_a_notice_with_its_code_and_the_chat_stays(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)

    def open_link(p: Page) -> None:
        p.goto(runtime.shell_url + "&open=no-such-app")
        online(p)
        notice = p.get_by_test_id("notice")
        expect(notice).to_have_count(1, timeout=WAIT_MS)
        expect(notice).to_contain_text("app_not_installed", timeout=WAIT_MS)
        expect(tabs(p)).to_have_count(1, timeout=WAIT_MS)
        expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)

    await page.run(open_link)


async def test_a_link_opened_in_a_tab_that_holds_its_token_opens_the_app(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    base = runtime.shell_url.split("#", maxsplit=1)[0]

    def open_later(p: Page) -> None:
        p.goto(runtime.shell_url)
        online(p)
        expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)
        p.goto(base + "#open=whiteboard")  # the same document: only the fragment changes
        whiteboard_in_front(p)

    await page.run(open_later)
    assert page.console_errors == []
