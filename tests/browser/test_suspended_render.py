"""How the Shell shows a suspended instance (against the fake hostbridge): its tab says so and
how to get it back, opening it asks the runtime to resume it, and until its view arrives the
stage says it is resuming, not that it cannot be shown."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from lineup.tests.support.browser import open_shell

from ._fake_hostbridge import FakeHostbridge
from .conftest import ShellPage
from .test_shell_render import CHAT, chat_view

TASK = "task-dashboard:open-1"

Frame = dict[str, Any]


def apps(foreground: str, task_state: str) -> Frame:
    chat_state = "foreground" if foreground == CHAT else "background"
    return {
        "type": "shell.apps",
        "foreground": foreground,
        "instances": [
            {"instance_id": CHAT, "app_scope": "chat", "title": "Chat", "state": chat_state},
            {
                "instance_id": TASK,
                "app_scope": "task-dashboard",
                "title": "Task Dashboard",
                "state": task_state,
            },
        ],
    }


def task_view(progress: int) -> Frame:
    return {
        "type": "shell.view",
        "app_scope": "task-dashboard",
        "instance_id": TASK,
        "view": {
            "kind": "task.dashboard",
            "task": {"task_id": "t1", "title": "Back", "progress": progress, "status": "todo"},
            "actions": ["finish", "close"],
        },
    }


async def test_a_suspended_tab_says_so_and_opening_it_resumes_it(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, apps(CHAT, "suspended"), chat_view())

    def open_suspended(p: Page) -> None:
        tab = p.get_by_test_id("app-tab").and_(p.locator(f'[data-instance-id="{TASK}"]'))
        expect(tab).to_have_attribute("data-state", "suspended")
        expect(tab.get_by_test_id("app-tab-note")).to_have_text(" · Suspended — open to resume")
        expect(p.get_by_test_id("chat")).to_be_visible()
        tab.click()

    await page.run(open_suspended)
    assert await connection.expect("ui.intent") == {
        "type": "ui.intent",
        "intent": "focus",
        "instance_id": TASK,
    }
    await connection.send(apps(TASK, "foreground"))

    def resuming(p: Page) -> None:
        placeholder = p.get_by_test_id("app-placeholder")
        expect(placeholder).to_be_visible()
        expect(placeholder).to_contain_text("Resuming Task Dashboard")
        expect(p.get_by_test_id("app-tab-note")).to_have_count(0)

    await page.run(resuming)
    await connection.send(task_view(60))

    def resumed(p: Page) -> None:
        expect(p.get_by_test_id("app-placeholder")).to_be_hidden()
        expect(p.get_by_test_id("task-progress")).to_have_attribute("data-progress", "60")

    await page.run(resumed)


async def test_a_view_held_from_before_a_suspension_is_never_shown_again(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    # The tab was left open while the runtime restarted: it holds the dashboard's view from the
    # earlier run, and the new run says the instance is suspended. That view is dead (a
    # Surface's page would no longer be served): opening the tab shows "Resuming…" until the
    # resumed app's own view arrives.
    connection = await open_shell(page, hostbridge, apps(TASK, "foreground"), task_view(10))
    await page.run(
        lambda p: expect(p.get_by_test_id("task-progress")).to_have_attribute("data-progress", "10")
    )
    await connection.send(apps(CHAT, "suspended"))

    def open_suspended(p: Page) -> None:
        expect(p.get_by_test_id("chat")).to_be_visible()
        tab = p.get_by_test_id("app-tab").and_(p.locator(f'[data-instance-id="{TASK}"]'))
        expect(tab).to_have_attribute("data-state", "suspended")
        tab.focus()
        p.keyboard.press("Enter")

    await page.run(open_suspended)
    assert (await connection.expect("ui.intent"))["instance_id"] == TASK
    await connection.send(apps(TASK, "foreground"))

    def resuming(p: Page) -> None:
        expect(p.get_by_test_id("app-placeholder")).to_contain_text("Resuming Task Dashboard")
        expect(p.get_by_test_id("task-progress")).to_have_count(0)

    await page.run(resuming)
    await connection.send(task_view(60))
    await page.run(
        lambda p: expect(p.get_by_test_id("task-progress")).to_have_attribute("data-progress", "60")
    )
