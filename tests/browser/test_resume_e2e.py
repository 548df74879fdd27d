"""A Task Dashboard left open when `lineup run` stopped, in real Chromium against the real
runtime started again on the same data (seed 004 §4.4: suspended → restoring → active).

Its tab comes back saying it is suspended, with the chat in front and no process for it; opening
the tab starts its process and shows the task as it was; closing it from the switcher ends it
without starting anything. Browser waits are Playwright's auto-waiting `expect`; waits on the
AppServer run under `fail_after`. No sleeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Locator, Page, expect

from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.runtime import (
    Runtime,
    agent_client,
    start_runtime,
    task_moved_to,
)

from .conftest import ShellPage

WAIT_MS: Final = 10_000  # a real runtime: processes, an HTTP AppServer, a long-polling Agent
WAIT_S: Final = 2 * WAIT_MS / 1000
TITLE: Final = "Survive a restart"
APP: Final = "miniapp:task-dashboard"


def tabs(p: Page) -> Locator:
    return p.get_by_test_id("app-switcher").get_by_test_id("app-tab")


def dashboard_tab(p: Page) -> Locator:
    return tabs(p).and_(p.locator('[data-app-scope="task-dashboard"]'))


def expect_progress(p: Page, progress: int) -> None:
    dashboard = p.get_by_test_id("task-dashboard")
    expect(dashboard).to_be_visible(timeout=WAIT_MS)
    expect(dashboard.get_by_test_id("task-title")).to_have_text(TITLE, timeout=WAIT_MS)
    expect(dashboard.get_by_test_id("task-progress")).to_have_attribute(
        "data-progress", str(progress), timeout=WAIT_MS
    )


async def first_run_with_the_dashboard_at_60(data_dir: Path, page: ShellPage) -> None:
    """One `lineup run`: the Agent opens a task and moves it to 60 %, the user sees it; then
    the runtime is stopped."""
    async with trio.open_nursery() as run:
        runtime = await start_runtime(run, data_dir, demo_agent=False)
        agent = AgentView(await agent_client(run, runtime.appserver_url), wait_s=WAIT_S)
        revision = await agent.inventory()
        await page.run(lambda p: p.goto(runtime.shell_url))
        updated = await task_moved_to(agent, revision, TITLE, 60)
        assert updated["type"] == "lineup.v1.tool.result"
        await page.run(lambda p: expect_progress(p, 60))
        run.cancel_scope.cancel()


async def second_run(nursery: trio.Nursery, data_dir: Path, page: ShellPage) -> Runtime:
    """The runtime started again; the Shell at its new URL shows the dashboard suspended."""
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)

    def load(p: Page) -> None:
        p.goto(runtime.shell_url)
        page.console_errors.clear()  # the old page's reconnects to the stopped runtime
        expect(p.get_by_test_id("runtime-state")).to_have_attribute(
            "data-state", "online", timeout=WAIT_MS
        )
        expect(tabs(p)).to_have_count(2, timeout=WAIT_MS)
        tab = dashboard_tab(p)
        expect(tab).to_have_attribute("data-state", "suspended", timeout=WAIT_MS)
        expect(tab.get_by_test_id("app-tab-note")).to_contain_text("Suspended", timeout=WAIT_MS)
        expect(tab).not_to_have_attribute("aria-current", "page", timeout=WAIT_MS)
        # The chat is in front, not a tab that cannot show anything.
        expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)
        expect(p.get_by_test_id("task-dashboard")).to_have_count(0, timeout=WAIT_MS)

    await page.run(load)
    assert APP not in runtime.supervisor.children  # no process runs for it yet
    return runtime


async def test_a_dashboard_open_at_a_restart_is_resumed_by_opening_its_tab(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    await first_run_with_the_dashboard_at_60(data_dir, page)
    runtime = await second_run(nursery, data_dir, page)

    def resume(p: Page) -> None:
        dashboard_tab(p).press("Enter")  # a keyboard user; a click does the same
        expect_progress(p, 60)
        tab = dashboard_tab(p)
        expect(tab).to_have_attribute("aria-current", "page", timeout=WAIT_MS)
        expect(tab).to_have_attribute("data-state", "foreground", timeout=WAIT_MS)
        expect(tab.get_by_test_id("app-tab-note")).to_have_count(0, timeout=WAIT_MS)
        expect(p.get_by_test_id("chat")).to_be_hidden(timeout=WAIT_MS)

    await page.run(resume)
    assert runtime.supervisor.children[APP].state == "running"

    # Resumed for real: the user's actions reach its process again.
    await page.run(lambda p: p.get_by_test_id("task-finish").click(timeout=WAIT_MS))
    await page.run(lambda p: expect_progress(p, 100))
    assert page.console_errors == []


async def test_a_dashboard_suspended_at_a_restart_can_be_closed_without_resuming_it(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    await first_run_with_the_dashboard_at_60(data_dir, page)
    runtime = await second_run(nursery, data_dir, page)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT_S)

    def close(p: Page) -> None:
        p.get_by_test_id("app-switcher").get_by_test_id("app-close").click(timeout=WAIT_MS)
        expect(tabs(p)).to_have_count(1, timeout=WAIT_MS)
        expect(tabs(p).nth(0)).to_have_attribute("aria-current", "page", timeout=WAIT_MS)
        expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)

    await page.run(close)
    final = await agent.terminal("open-1")
    assert (final["type"], final["payload"]["code"]) == ("lineup.v1.tool.error", "app_closed")
    assert APP not in runtime.supervisor.children
    assert page.console_errors == []
