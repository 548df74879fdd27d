"""Issue 11, finding 4, in real Chromium against the real runtime: three Agent messages of
250 KB each and a short one all show in full, and again after the runtime restarts on the same
data dir. (The timeline used to travel as one view, which these pushed past the MiniApp frame
limit: the chat was killed and messages vanished.)

Browser waits are Playwright's auto-waiting `expect`; no sleeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Page, expect

from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.runtime import CONVERSATION, agent_client, start_runtime

from .conftest import ShellPage

WAIT_MS: Final = 20_000  # a real runtime; 750 KB of Markdown parsed on the way
WAIT_S: Final = 2 * WAIT_MS / 1000
LARGE: Final = 250_000


def large(n: int) -> str:
    return f"large {n} " + chr(ord("a") + n) * (LARGE - 8)


TEXTS: Final = [large(0), large(1), large(2), "and a short one"]


def expect_all_in_full(p: Page) -> None:
    bodies = p.get_by_test_id("message-body")
    expect(bodies).to_have_count(len(TEXTS), timeout=WAIT_MS)
    shown = bodies.evaluate_all("nodes => nodes.map(n => n.textContent)")
    assert shown == TEXTS  # each whole, none cut, in order
    expect(p.get_by_test_id("runtime-state")).to_have_attribute(
        "data-state", "online", timeout=WAIT_MS
    )


async def test_three_large_messages_and_a_short_one_show_in_full_and_again_after_a_restart(
    data_dir: Path, page: ShellPage
) -> None:
    async with trio.open_nursery() as run:
        runtime = await start_runtime(run, data_dir, demo_agent=False)
        agent = AgentView(await agent_client(run, runtime.appserver_url), wait_s=WAIT_S)
        await page.run(lambda p: p.goto(runtime.shell_url))
        for text in TEXTS:
            await agent.client.say(CONVERSATION, text)
        await page.run(expect_all_in_full)
        assert all(c.restarts == 0 for c in runtime.supervisor.status().children)
        run.cancel_scope.cancel()

    async with trio.open_nursery() as run:
        runtime = await start_runtime(run, data_dir, demo_agent=False)

        def load(p: Page) -> None:
            p.goto(runtime.shell_url)
            page.console_errors.clear()  # the old page's reconnects to the stopped runtime
            expect_all_in_full(p)

        await page.run(load)
        run.cancel_scope.cancel()
    assert page.errors == []
