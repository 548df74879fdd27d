"""The Shell's Task Dashboard component and its app switcher, in real Chromium.

A fake hostbridge plays the runtime: it sends `shell.apps` and `shell.view` frames and reads
what the Shell sends back. Every browser wait is Playwright's auto-waiting `expect` with an
explicit timeout; every wait for a frame is the fake's `fail_after`. No sleeps.
Set LINEUP_TASK_DASHBOARD_SCREENSHOT=/path.png to save a picture of the dashboard in front.
"""

from __future__ import annotations

import itertools
import os
from typing import Any, Final

from playwright.sync_api import Page, expect

from lineup.hostbridge._markdown import markdown_tree
from lineup.tests.support.browser import open_shell

from ._fake_hostbridge import FakeHostbridge
from .conftest import ShellPage

WAIT_MS: Final = 5_000
CHAT: Final = "chat"
TASK: Final = "task-dashboard:call-1"
TASK_SCOPE: Final = "task-dashboard"
AT: Final = 1_760_000_000.0

Frame = dict[str, Any]
REVS = itertools.count(1)  # focus's stamps: each timeline sent is newer than the last


def chat_view(*texts: str) -> list[Frame]:
    """The chat's view, then its messages (`shell.items`), then the page end (as the
    hostbridge sends a timeline)."""
    shown = [
        {
            "id": f"m{index}",
            "order": index,
            "rev": next(REVS),
            "author": "agent" if index % 2 else "user",
            "state": "received" if index % 2 else "sent",
            "tree": markdown_tree(text),
            "at": AT,
        }
        for index, text in enumerate(texts, start=1)
    ]
    items = (
        [{"type": "shell.items", "app_scope": "chat", "instance_id": CHAT, "items": shown}]
        if shown
        else []
    )
    view = {
        "type": "shell.view",
        "app_scope": "chat",
        "instance_id": CHAT,
        "view": {"kind": "chat.timeline", "composer": {"enabled": True}},
    }
    return [view, *items, {"type": "shell.page", "instance_id": CHAT, "more": False}]


def task_view(
    *,
    title: object = "Write the quarterly report",
    progress: object = 40,
    status: object = "doing",
    actions: object = None,
    kind: str = "task.dashboard",
) -> Frame:
    """A `shell.view` shaped as miniapps/task_dashboard/_app.py's `_render` sends it."""
    if actions is None:
        actions = ["close"] if status == "done" else ["finish", "close"]
    task = {"task_id": "t-42", "title": title, "progress": progress, "status": status}
    return {
        "type": "shell.view",
        "app_scope": TASK_SCOPE,
        "instance_id": TASK,
        "view": {"kind": kind, "task": task, "actions": actions},
    }


def apps(foreground: str, *, task: bool = True) -> Frame:
    """The focus stack, bottom first: the chat, then (if open) the task dashboard."""
    instances = [
        {
            "instance_id": CHAT,
            "app_scope": "chat",
            "title": "Chat",
            "state": "foreground" if foreground == CHAT else "background",
        }
    ]
    if task:
        instances.append(
            {
                "instance_id": TASK,
                "app_scope": TASK_SCOPE,
                "title": "Task Dashboard",
                "state": "foreground" if foreground == TASK else "background",
            }
        )
    return {"type": "shell.apps", "foreground": foreground, "instances": instances}


def ui_event(kind: str) -> Frame:
    return {
        "type": "ui.event",
        "app_scope": TASK_SCOPE,
        "instance_id": TASK,
        "event": {"kind": kind},
    }


def intent(name: str, instance_id: str) -> Frame:
    return {"type": "ui.intent", "intent": name, "instance_id": instance_id}


def assert_no_csp_violations(p: Page) -> None:
    assert p.evaluate("window.__cspViolations") == []


def expect_dashboard_in_front(p: Page) -> None:
    expect(p.get_by_test_id("task-dashboard")).to_be_visible(timeout=WAIT_MS)
    expect(p.get_by_test_id("chat")).to_be_hidden(timeout=WAIT_MS)
    expect(p.get_by_test_id("timeline")).to_be_hidden(timeout=WAIT_MS)
    expect(p.get_by_test_id("composer")).to_be_hidden(timeout=WAIT_MS)
    expect(p.get_by_test_id("app-placeholder")).to_be_hidden(timeout=WAIT_MS)


def expect_chat_in_front(p: Page) -> None:
    expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)
    expect(p.get_by_test_id("composer")).to_be_visible(timeout=WAIT_MS)
    expect(p.get_by_test_id("task-dashboard")).to_have_count(0, timeout=WAIT_MS)
    expect(p.get_by_test_id("app-placeholder")).to_be_hidden(timeout=WAIT_MS)


async def test_the_dashboard_replaces_the_chat_when_its_instance_is_in_front(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    await open_shell(page, hostbridge, apps(TASK), chat_view("Hello", "Plan my week"), task_view())

    def check(p: Page) -> None:
        expect_dashboard_in_front(p)
        dashboard = p.get_by_test_id("task-dashboard")
        expect(dashboard).to_have_attribute("data-instance-id", TASK, timeout=WAIT_MS)
        title = dashboard.get_by_test_id("task-title")
        expect(title).to_have_text("Write the quarterly report", timeout=WAIT_MS)
        expect(dashboard.get_by_role("heading", level=2)).to_have_text(
            "Write the quarterly report", timeout=WAIT_MS
        )
        expect(dashboard).to_have_accessible_name("Write the quarterly report", timeout=WAIT_MS)
        bar = dashboard.get_by_test_id("task-progress")
        expect(bar).to_have_attribute("data-progress", "40", timeout=WAIT_MS)
        expect(bar).to_have_js_property("value", 40, timeout=WAIT_MS)
        expect(dashboard.get_by_role("progressbar", name="Progress")).to_be_visible(timeout=WAIT_MS)
        expect(dashboard.get_by_test_id("task-progress-value")).to_have_text("40%", timeout=WAIT_MS)
        status = dashboard.get_by_test_id("task-status")
        expect(status).to_have_text("In progress", timeout=WAIT_MS)
        expect(status).to_have_attribute("data-status", "doing", timeout=WAIT_MS)
        expect(dashboard.get_by_test_id("task-finish")).to_have_text("Mark done", timeout=WAIT_MS)
        expect(dashboard.get_by_test_id("task-close")).to_have_text("Close", timeout=WAIT_MS)
        expect(dashboard.get_by_role("button")).to_have_count(2, timeout=WAIT_MS)
        assert_no_csp_violations(p)

    await page.run(check)
    if path := os.environ.get("LINEUP_TASK_DASHBOARD_SCREENSHOT"):
        await page.run(lambda p: p.screenshot(path=path))


async def test_the_chat_stays_in_front_until_the_dashboard_instance_is(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, apps(CHAT), chat_view("Hi"), task_view())

    def check_chat(p: Page) -> None:
        expect_chat_in_front(p)
        expect(p.get_by_test_id("message")).to_have_count(1, timeout=WAIT_MS)

    await page.run(check_chat)
    await connection.send(apps(TASK))
    await page.run(expect_dashboard_in_front)


async def test_a_new_snapshot_updates_the_bar_and_the_status_in_place(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, apps(TASK), task_view(progress=10))

    def remember_the_dashboard(p: Page) -> None:
        expect(p.get_by_test_id("task-progress")).to_have_attribute(
            "data-progress", "10", timeout=WAIT_MS
        )
        p.evaluate("window.__dashboard = document.querySelector('[data-testid=task-dashboard]')")

    await page.run(remember_the_dashboard)
    await connection.send(task_view(progress=75))

    def check_progress(p: Page) -> None:
        bar = p.get_by_test_id("task-progress")
        expect(bar).to_have_attribute("data-progress", "75", timeout=WAIT_MS)
        expect(bar).to_have_js_property("value", 75, timeout=WAIT_MS)
        expect(p.get_by_test_id("task-progress-value")).to_have_text("75%", timeout=WAIT_MS)
        expect(p.get_by_test_id("task-status")).to_have_text("In progress", timeout=WAIT_MS)
        assert p.evaluate(
            "window.__dashboard === document.querySelector('[data-testid=task-dashboard]')"
        ), "an update changes the dashboard in place"

    await page.run(check_progress)
    await connection.send(task_view(progress=100, status="done"))

    def check_done(p: Page) -> None:
        expect(p.get_by_test_id("task-progress")).to_have_attribute(
            "data-progress", "100", timeout=WAIT_MS
        )
        status = p.get_by_test_id("task-status")
        expect(status).to_have_text("Done", timeout=WAIT_MS)
        expect(status).to_have_attribute("data-status", "done", timeout=WAIT_MS)
        expect(p.get_by_test_id("task-finish")).to_have_count(0, timeout=WAIT_MS)
        expect(p.get_by_test_id("task-close")).to_be_visible(timeout=WAIT_MS)
        assert_no_csp_violations(p)

    await page.run(check_done)
    await connection.send(task_view(progress=0, status="todo"))
    await page.run(
        lambda p: expect(p.get_by_test_id("task-status")).to_have_text("To do", timeout=WAIT_MS)
    )


async def test_mark_done_sends_task_finish_once_until_the_next_snapshot(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, apps(TASK), task_view())

    def click_finish(p: Page) -> None:
        finish = p.get_by_test_id("task-finish")
        finish.click(timeout=WAIT_MS)
        expect(finish).to_be_disabled(timeout=WAIT_MS)
        expect(finish).to_be_focused(timeout=WAIT_MS)
        finish.click(force=True, timeout=WAIT_MS)  # a second click before the answer

    await page.run(click_finish)
    assert await connection.expect("ui.event") == ui_event("task.finish")
    await connection.send(chat_view("meanwhile, in the chat"))

    def check_still_waiting(p: Page) -> None:
        expect(p.get_by_test_id("message")).to_have_count(1, timeout=WAIT_MS)  # it was handled
        expect(p.get_by_test_id("task-finish")).to_be_disabled(timeout=WAIT_MS)

    await page.run(check_still_waiting)
    await connection.send(task_view(progress=100, status="done"))

    def check_done_then_close(p: Page) -> None:
        expect(p.get_by_test_id("task-finish")).to_have_count(0, timeout=WAIT_MS)
        close = p.get_by_test_id("task-close")
        expect(close).to_be_focused(timeout=WAIT_MS)  # focus moved to what is left
        expect(p.get_by_test_id("task-status")).to_have_text("Done", timeout=WAIT_MS)
        close.click(timeout=WAIT_MS)

    await page.run(check_done_then_close)
    # The socket keeps order: had the second click gone out, it would come first.
    assert await connection.expect("ui.event") == ui_event("task.close")
    assert connection.pending() == []


async def test_close_sends_task_close_and_the_chat_comes_back(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(
        page, hostbridge, apps(TASK), chat_view("Hello"), task_view(status="todo", progress=0)
    )

    def click_close(p: Page) -> None:
        expect(p.get_by_test_id("task-status")).to_have_text("To do", timeout=WAIT_MS)
        p.get_by_role("button", name="Close", exact=True).click(timeout=WAIT_MS)

    await page.run(click_close)
    assert await connection.expect("ui.event") == ui_event("task.close")
    assert connection.pending() == []
    await connection.send(apps(CHAT, task=False))

    def check_chat_back(p: Page) -> None:
        expect_chat_in_front(p)
        expect(p.get_by_test_id("message-body")).to_have_text("Hello", timeout=WAIT_MS)
        expect(p.get_by_test_id("app-tab")).to_have_count(1, timeout=WAIT_MS)
        expect(p.get_by_test_id("composer-input")).to_be_focused(timeout=WAIT_MS)

    await page.run(check_chat_back)


async def test_the_switcher_marks_the_foreground_and_sends_focus_and_close_intents(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, apps(TASK), chat_view("Hi"), task_view())

    def check_task_in_front(p: Page) -> None:
        switcher = p.get_by_test_id("app-switcher")
        expect(switcher).to_be_visible(timeout=WAIT_MS)
        tabs = switcher.get_by_test_id("app-tab")
        expect(tabs).to_have_text(["Chat", "Task Dashboard"], timeout=WAIT_MS)  # stack order
        chat_tab, task_tab = tabs.nth(0), tabs.nth(1)
        expect(task_tab).to_have_attribute("aria-current", "page", timeout=WAIT_MS)
        expect(task_tab).to_have_attribute("data-state", "foreground", timeout=WAIT_MS)
        expect(chat_tab).not_to_have_attribute("aria-current", "page", timeout=WAIT_MS)
        expect(chat_tab).to_have_attribute("data-state", "background", timeout=WAIT_MS)
        expect(switcher.locator('[aria-current="page"]')).to_have_count(1, timeout=WAIT_MS)
        close = switcher.get_by_test_id("app-close")
        expect(close).to_have_count(1, timeout=WAIT_MS)  # the chat cannot be closed
        expect(close).to_have_attribute("data-instance-id", TASK, timeout=WAIT_MS)
        expect(close).to_have_accessible_name("Close Task Dashboard", timeout=WAIT_MS)
        task_tab.click(timeout=WAIT_MS)  # already in front: nothing to ask
        chat_tab.click(timeout=WAIT_MS)

    await page.run(check_task_in_front)
    assert await connection.expect("ui.intent") == intent("focus", CHAT)
    assert connection.pending() == []
    await connection.send(apps(CHAT))

    def check_chat_in_front(p: Page) -> None:
        expect_chat_in_front(p)
        tabs = p.get_by_test_id("app-tab")
        expect(tabs.nth(0)).to_have_attribute("aria-current", "page", timeout=WAIT_MS)
        expect(tabs.nth(0)).to_be_focused(timeout=WAIT_MS)  # kept across the rebuild
        expect(tabs.nth(1)).to_have_attribute("data-state", "background", timeout=WAIT_MS)
        tabs.nth(1).click(timeout=WAIT_MS)

    await page.run(check_chat_in_front)
    assert await connection.expect("ui.intent") == intent("focus", TASK)
    await connection.send(apps(TASK))

    def close_from_the_switcher(p: Page) -> None:
        expect_dashboard_in_front(p)
        p.get_by_role("button", name="Close Task Dashboard").click(timeout=WAIT_MS)

    await page.run(close_from_the_switcher)
    assert await connection.expect("ui.intent") == intent("close", TASK)
    assert connection.pending() == []
    await page.run(assert_no_csp_violations)


async def test_switching_back_to_the_chat_shows_the_earlier_timeline_and_draft(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    texts = [f"message number {n}" for n in range(1, 31)]
    connection = await open_shell(page, hostbridge, apps(CHAT, task=False), chat_view(*texts))

    def write_a_draft(p: Page) -> None:
        expect(p.get_by_test_id("message")).to_have_count(30, timeout=WAIT_MS)
        p.evaluate("window.__first = document.querySelector('[data-testid=message]')")
        p.get_by_test_id("composer-input").fill("a draft in progress")

    await page.run(write_a_draft)
    await connection.send(apps(TASK))
    await connection.send(task_view())
    await page.run(expect_dashboard_in_front)
    await connection.send(apps(CHAT, task=False))

    def check_chat_back(p: Page) -> None:
        expect_chat_in_front(p)
        messages = p.get_by_test_id("message")
        expect(messages).to_have_count(30, timeout=WAIT_MS)
        expect(messages.first.get_by_test_id("message-body")).to_have_text(
            "message number 1", timeout=WAIT_MS
        )
        expect(messages.last).to_be_in_viewport(timeout=WAIT_MS)  # still scrolled to the end
        expect(p.get_by_test_id("composer-input")).to_have_value(
            "a draft in progress", timeout=WAIT_MS
        )
        expect(p.get_by_test_id("composer-input")).to_be_enabled(timeout=WAIT_MS)
        assert p.evaluate("window.__first === document.querySelector('[data-testid=message]')"), (
            "the timeline was kept, not rebuilt"
        )
        assert_no_csp_violations(p)

    await page.run(check_chat_back)


async def test_an_unknown_view_kind_keeps_the_placeholder(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    await open_shell(page, hostbridge, apps(TASK), task_view(kind="task.kanban"))

    def check(p: Page) -> None:
        placeholder = p.get_by_test_id("app-placeholder")
        expect(placeholder).to_be_visible(timeout=WAIT_MS)
        expect(placeholder).to_contain_text("cannot show its view yet", timeout=WAIT_MS)
        expect(p.get_by_test_id("task-dashboard")).to_have_count(0, timeout=WAIT_MS)
        expect(p.get_by_test_id("chat")).to_be_hidden(timeout=WAIT_MS)

    await page.run(check)


async def test_hostile_task_fields_render_as_inert_text_within_bounds(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    title = "<img src=x onerror=window.__xss=1><script>window.__xss=2</script>"
    connection = await open_shell(
        page,
        hostbridge,
        apps(TASK),
        task_view(title=title, progress=250, status="<b>owned</b>", actions=["delete", "close"]),
    )

    def check(p: Page) -> None:
        dashboard = p.get_by_test_id("task-dashboard")
        expect(dashboard.get_by_test_id("task-title")).to_have_text(title, timeout=WAIT_MS)
        expect(dashboard.locator("img, script, [onerror]")).to_have_count(0, timeout=WAIT_MS)
        expect(dashboard.get_by_test_id("task-progress")).to_have_attribute(
            "data-progress", "100", timeout=WAIT_MS
        )
        expect(dashboard.get_by_test_id("task-status")).to_have_attribute(
            "data-status", "unknown", timeout=WAIT_MS
        )
        expect(dashboard.get_by_role("button")).to_have_count(1, timeout=WAIT_MS)
        expect(dashboard.get_by_test_id("task-close")).to_be_visible(timeout=WAIT_MS)
        assert p.evaluate("typeof window.__xss") == "undefined"

    await page.run(check)
    await connection.send(task_view(progress="60", status="doing"))
    await page.run(
        lambda p: expect(p.get_by_test_id("task-progress")).to_have_attribute(
            "data-progress", "0", timeout=WAIT_MS
        )
    )
    assert "/x" not in hostbridge.http_paths


async def test_nothing_leaves_loopback_while_the_dashboard_is_shown(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    await open_shell(
        page,
        hostbridge,
        apps(TASK),
        task_view(title="See https://example.test/report and ![x](https://img.example.test/a.png)"),
    )
    await page.run(
        lambda p: expect(p.get_by_test_id("task-title")).to_contain_text(
            "https://example.test/report", timeout=WAIT_MS
        )
    )
    await page.run(assert_no_csp_violations)
    assert any(url.startswith("ws://127.0.0.1") for url in page.requests)
    assert page.off_loopback() == []
