"""The Task Dashboard's notification in real Chromium against the real runtime (issue 14): the
first user of `notification.show`.

The Agent opens a task (the dashboard comes to the front); the user goes back to the chat, so
the dashboard is in the background; the Agent finishes the task: its update is answered at once,
and the runtime's own prompt asks whether the Task Dashboard may show notifications. "Always
allow" shows the Shell's toast; the next task finished in the background shows its toast
without asking again. A task finished while its dashboard is in front shows none. Browser waits
are Playwright's auto-waiting `expect`; waits on the AppServer run under `fail_after`. No sleeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Locator, Page, expect

from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.runtime import CONVERSATION, agent_client, start_runtime

from .conftest import ShellPage

WAIT_MS: Final = 15_000
WAIT_S: Final = 2 * WAIT_MS / 1000


def tabs(p: Page) -> Locator:
    return p.get_by_test_id("app-switcher").get_by_test_id("app-tab")


def toasts(p: Page) -> Locator:
    return p.get_by_test_id("capability-notification")


async def open_task_then_back_to_chat(
    agent: AgentView, page: ShellPage, revision: str, task_id: str, title: str
) -> None:
    await agent.client.call_tool(
        CONVERSATION,
        "task-dashboard.open",
        {"task_id": task_id, "title": title},
        revision,
        call_id=f"open-{task_id}",
    )
    await agent.pull(
        "lineup.v1.tool.progress", lambda m: m["payload"]["call_id"] == f"open-{task_id}"
    )

    def back_to_chat(p: Page) -> None:
        dashboard = p.get_by_test_id("task-dashboard")
        expect(dashboard.get_by_test_id("task-title")).to_have_text(title, timeout=WAIT_MS)
        tabs(p).nth(0).click(timeout=WAIT_MS)  # the chat's tab: the dashboard goes behind
        expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)

    await page.run(back_to_chat)


async def finish(agent: AgentView, revision: str, task_id: str) -> None:
    await agent.client.call_tool(
        CONVERSATION,
        "task-dashboard.update",
        {"task_id": task_id, "progress": 100},
        revision,
        call_id=f"done-{task_id}",
    )
    with trio.fail_after(WAIT_S):
        done = await agent.terminal(f"done-{task_id}")  # answered before the user is asked
    assert done["type"] == "lineup.v1.tool.result"
    assert done["payload"]["result"]["status"] == "done"


async def test_a_task_done_in_the_background_is_announced_after_always_allow(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT_S)
    revision = await agent.inventory()
    await page.run(lambda p: p.goto(runtime.shell_url))
    await open_task_then_back_to_chat(agent, page, revision, "t1", "Bake the bread")
    await finish(agent, revision, "t1")

    def always_allow(p: Page) -> None:
        dialog = p.get_by_test_id("permission-prompt")
        expect(dialog).to_be_visible(timeout=WAIT_MS)
        expect(dialog).to_have_attribute("data-capability", "notification.show")
        expect(p.get_by_test_id("permission-heading")).to_contain_text("Task Dashboard")
        p.get_by_test_id("permission-allow-always").click(timeout=WAIT_MS)
        expect(dialog).to_be_hidden(timeout=WAIT_MS)
        expect(toasts(p)).to_have_count(1, timeout=WAIT_MS)
        expect(toasts(p)).to_contain_text("Task done — Bake the bread")

    await page.run(always_allow)

    # Remembered: the next task done behind the front is announced without a prompt.
    await open_task_then_back_to_chat(agent, page, revision, "t2", "Sweep the floor")
    await finish(agent, revision, "t2")

    def toasted_without_asking(p: Page) -> None:
        expect(toasts(p).last).to_contain_text("Task done — Sweep the floor", timeout=WAIT_MS)
        expect(toasts(p)).to_have_count(2)
        expect(p.get_by_test_id("permission-prompt")).to_be_hidden()

    await page.run(toasted_without_asking)
    assert page.console_errors == []
