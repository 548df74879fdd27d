"""The Task Dashboard round trip in real Chromium against the real runtime.

The Agent (an `AgentClient` on the embedded AppServer) opens and updates a task; the user sees
it in the printed Shell URL, marks it done and closes it; the Agent gets one result for the open
call. Browser waits are Playwright's auto-waiting `expect` with `WAIT_MS`; waits on the
AppServer run under `fail_after(WAIT_S)`. No sleeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Locator, Page, expect

from lineup.tests.support.agent_view import FINALS
from lineup.tests.support.browser import greeted_in_the_shell
from lineup.tests.support.runtime import CONVERSATION

from .conftest import ShellPage

WAIT_MS: Final = 10_000  # a real runtime: processes, an HTTP AppServer, a long-polling Agent
WAIT_S: Final = WAIT_MS / 1000
GREETING: Final = "Here is your task"
TITLE: Final = "Write the quarterly report"
RESULT: Final = "lineup.v1.tool.result"


def tabs(p: Page) -> Locator:
    return p.get_by_test_id("app-switcher").get_by_test_id("app-tab")


def expect_dashboard_in_front(p: Page) -> None:
    dashboard = p.get_by_test_id("task-dashboard")
    expect(dashboard).to_be_visible(timeout=WAIT_MS)
    expect(dashboard.get_by_test_id("task-title")).to_have_text(TITLE, timeout=WAIT_MS)
    expect(dashboard.get_by_test_id("task-progress")).to_have_attribute(
        "data-progress", "0", timeout=WAIT_MS
    )
    expect(dashboard.get_by_test_id("task-status")).to_have_attribute(
        "data-status", "todo", timeout=WAIT_MS
    )
    expect(p.get_by_test_id("chat")).to_be_hidden(timeout=WAIT_MS)
    expect(p.get_by_test_id("composer")).to_be_hidden(timeout=WAIT_MS)
    # The switcher lists the stack bottom first and marks the dashboard as the one in front.
    # The tab is labelled by what it holds (the view's `label`: the task's title).
    expect(tabs(p)).to_have_text(["Chat", TITLE], timeout=WAIT_MS)
    chat_tab, task_tab = tabs(p).nth(0), tabs(p).nth(1)
    expect(task_tab).to_have_attribute("aria-current", "page", timeout=WAIT_MS)
    expect(task_tab).to_have_attribute("data-state", "foreground", timeout=WAIT_MS)
    expect(chat_tab).not_to_have_attribute("aria-current", "page", timeout=WAIT_MS)
    expect(chat_tab).to_have_attribute("data-state", "background", timeout=WAIT_MS)


def expect_progress_60(p: Page) -> None:
    bar = p.get_by_test_id("task-progress")
    expect(bar).to_have_attribute("data-progress", "60", timeout=WAIT_MS)
    expect(bar).to_have_js_property("value", 60, timeout=WAIT_MS)
    expect(p.get_by_test_id("task-progress-value")).to_have_text("60%", timeout=WAIT_MS)


def finish_and_close(p: Page) -> None:
    p.get_by_test_id("task-finish").click(timeout=WAIT_MS)
    expect(p.get_by_test_id("task-status")).to_have_text("Done", timeout=WAIT_MS)
    expect(p.get_by_test_id("task-progress")).to_have_attribute(
        "data-progress", "100", timeout=WAIT_MS
    )
    expect(p.get_by_test_id("task-finish")).to_have_count(0, timeout=WAIT_MS)
    p.get_by_test_id("task-close").click(timeout=WAIT_MS)


def expect_chat_back_with_its_timeline(p: Page) -> None:
    expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)
    expect(p.get_by_test_id("composer")).to_be_visible(timeout=WAIT_MS)
    expect(p.get_by_test_id("task-dashboard")).to_have_count(0, timeout=WAIT_MS)
    expect(tabs(p)).to_have_count(1, timeout=WAIT_MS)
    expect(tabs(p).nth(0)).to_have_attribute("aria-current", "page", timeout=WAIT_MS)
    messages = p.get_by_test_id("timeline").get_by_test_id("message")
    expect(messages).to_have_count(1, timeout=WAIT_MS)
    expect(messages.get_by_test_id("message-body")).to_have_text(GREETING, timeout=WAIT_MS)
    expect(messages).to_be_visible(timeout=WAIT_MS)
    assert p.evaluate("window.__cspViolations") == []


async def test_the_agent_opens_updates_and_the_user_finishes_and_closes_the_task_dashboard(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    _, agent, revision = await greeted_in_the_shell(
        nursery, data_dir, page, GREETING, wait_ms=WAIT_MS, chat_alone=True
    )
    with trio.fail_after(WAIT_S):
        await agent.client.call_tool(
            CONVERSATION,
            "task-dashboard.open",
            {"task_id": "t1", "title": TITLE},
            revision,
            call_id="open-1",
        )
    await page.run(expect_dashboard_in_front)

    with trio.fail_after(WAIT_S):
        await agent.client.call_tool(
            CONVERSATION,
            "task-dashboard.update",
            {"task_id": "t1", "progress": 60},
            revision,
            call_id="update-1",
        )
    update = await agent.terminal("update-1")
    await page.run(expect_progress_60)

    await page.run(finish_and_close)
    opened = await agent.terminal("open-1")
    await page.run(expect_chat_back_with_its_timeline)

    await agent.settle()
    assert [(m["type"], m["payload"]["result"]) for m in agent.of_call("open-1", *FINALS)] == [
        (RESULT, {"status": "completed"})
    ]
    assert opened["conversation_id"] == CONVERSATION
    receipts = [m["payload"]["status"] for m in agent.of_call("open-1", "lineup.v1.tool.receipt")]
    assert receipts == ["accepted", "starting", "activation_ready"]
    assert [m["type"] for m in agent.of_call("update-1", *FINALS)] == [RESULT]
    assert update["payload"]["result"] == {
        "task_id": "t1",
        "title": TITLE,
        "progress": 60,
        "status": "doing",  # the status follows the progress
    }
    assert page.off_loopback() == [], "a request left 127.0.0.1"
    assert page.console_errors == []
