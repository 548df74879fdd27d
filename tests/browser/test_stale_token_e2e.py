"""A Shell tab left open across `lineup run`s, in real Chromium against the real runtime.

The second run listens on the same port with a new token (`--new-token`): the tab's reconnect
is refused, and instead of retrying forever it stops and tells the user what to run to get the
new link. Browser waits are
Playwright's auto-waiting `expect`; "it never retries" is proven with Playwright's fake clock
(every timer the page could still have fires), not by sleeping.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

import trio
from playwright.sync_api import Page, expect

from lineup.supervisor._runtime import free_port
from lineup.tests.support.browser import COUNT_SOCKETS
from lineup.tests.support.runtime import start_runtime

from .conftest import ShellPage

WAIT_MS: Final = 15_000  # a real runtime starting, and the Shell's backoff (at most 5 s)


def token_of(shell_url: str) -> str:
    return urlsplit(shell_url).fragment.removeprefix("token=")


async def test_a_tab_from_an_earlier_run_stops_reconnecting_and_asks_for_the_new_link(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    port = free_port()
    await page.run(lambda p: p.add_init_script(COUNT_SOCKETS))
    async with trio.open_nursery() as run:
        first = await start_runtime(run, data_dir, demo_agent=False, shell_port=port)

        def online(p: Page) -> None:
            p.goto(first.shell_url)
            expect(p.get_by_test_id("runtime-state")).to_have_attribute(
                "data-state", "online", timeout=WAIT_MS
            )

        await page.run(online)
        run.cancel_scope.cancel()

    second = await start_runtime(
        nursery, data_dir, demo_agent=False, shell_port=port, new_token=True
    )
    assert token_of(second.shell_url) != token_of(first.shell_url)

    def refused(p: Page) -> int:
        banner = p.get_by_test_id("connection-banner")
        expect(banner).to_have_attribute("data-reason", "refused", timeout=WAIT_MS)
        expect(banner).to_contain_text("earlier run")
        expect(banner).to_contain_text("Run `lineup status` and open the Shell link it prints")
        opened: int = p.evaluate("window.__lineupSockets")
        # Every timer the page has, fired: a Shell still retrying would open a socket now.
        p.clock.install()
        p.clock.run_for(60_000)
        expect(banner).to_have_attribute("data-reason", "refused")
        return opened - int(p.evaluate("window.__lineupSockets"))

    assert await page.run(refused) == 0
    page.console_errors.clear()  # the browser's own lines for the refused reconnects

    # The new link works in the same tab.
    def new_link(p: Page) -> None:
        p.goto(second.shell_url)
        expect(p.get_by_test_id("runtime-state")).to_have_attribute(
            "data-state", "online", timeout=WAIT_MS
        )
        expect(p.get_by_test_id("connection-banner")).to_be_hidden()

    await page.run(new_link)
    assert page.errors == []
