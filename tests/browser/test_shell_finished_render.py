"""The Shell, honest and finished (issue 12), in real Chromium against the fake hostbridge: a
silent hostbridge is shown disconnected within 5 s; tabs are labelled by what they hold and keep
their order; a sent message says so; GFM tables; a copy button on code blocks; a favicon; the
modules load under the one CSP."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from lineup.hostbridge._markdown import markdown_tree
from lineup.tests.support.browser import open_shell

from ._fake_hostbridge import FakeHostbridge
from .conftest import ShellPage
from .test_shell_render import CHAT, chat_view, message

Frame = dict[str, Any]
TASKS = ("task-dashboard:call-1", "task-dashboard:call-2")


def apps(foreground: str, order: tuple[str, ...]) -> Frame:
    """The instances in focus-stack order (`order`, bottom first), as focus sends them."""
    instances = [
        {
            "instance_id": i,
            "app_scope": "chat" if i == CHAT else "task-dashboard",
            "title": "Chat" if i == CHAT else "Task Dashboard",
            "state": "foreground" if i == foreground else "background",
        }
        for i in order
    ]
    return {"type": "shell.apps", "foreground": foreground, "instances": instances}


def task_view(instance_id: str, label: str | None) -> Frame:
    view: Frame = {
        "kind": "task.dashboard",
        "task": {"task_id": instance_id, "title": label or "x", "progress": 10},
        "actions": ["finish", "close"],
    }
    if label is not None:
        view["label"] = label
    return {
        "type": "shell.view",
        "app_scope": "task-dashboard",
        "instance_id": instance_id,
        "view": view,
    }


async def test_a_silent_hostbridge_is_shown_disconnected_within_five_seconds(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    """Over five seconds by design: the Shell's own five-second silence bound is what is
    tested, so the test lets it run out."""
    await open_shell(page, hostbridge, chat_view(message("a", "agent", "received", "A")))
    await page.run(
        lambda p: expect(p.get_by_test_id("runtime-state")).to_have_attribute(
            "data-state", "online"
        )
    )
    # Heartbeats keep an idle Shell online past its 4 s of allowed silence.
    await page.run(lambda p: p.wait_for_timeout(4500))
    await page.run(
        lambda p: expect(p.get_by_test_id("runtime-state")).to_have_attribute(
            "data-state", "online"
        )
    )
    hostbridge.freeze()  # as a SIGSTOPped process: the socket stays open, nothing comes

    def disconnected(p: Page) -> None:
        badge = p.get_by_test_id("runtime-state")
        expect(badge).to_have_attribute("data-state", "disconnected", timeout=5000)
        expect(badge).to_have_text("Disconnected")
        expect(p.get_by_test_id("connection-banner")).to_contain_text("Disconnected")
        expect(p.get_by_test_id("message-body")).to_have_text("A")  # the last snapshot stays

    await page.run(disconnected)
    hostbridge.thaw()
    reconnected = await hostbridge.next_connection()
    await reconnected.expect("shell.ready")
    await page.run(
        lambda p: expect(p.get_by_test_id("runtime-state")).to_have_attribute(
            "data-state", "online"
        )
    )


async def test_tabs_are_labelled_by_what_they_hold_and_keep_their_order_when_focus_moves(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    first, second = TASKS
    connection = await open_shell(
        page,
        hostbridge,
        apps(second, (CHAT, first, second)),
        chat_view(),
        task_view(first, "Write the report"),
        task_view(second, None),
    )

    def tabs_text(p: Page, texts: list[str]) -> None:
        expect(p.get_by_test_id("app-tab")).to_have_text(texts)

    await page.run(lambda p: tabs_text(p, ["Chat", "Write the report", "Task Dashboard"]))
    # The first comes in front: focus puts it on top of its stack; the tabs stay where they are.
    await connection.send(apps(first, (CHAT, second, first)))
    await page.run(
        lambda p: expect(p.get_by_test_id("app-tab").nth(1)).to_have_attribute(
            "aria-current", "page"
        )
    )
    await connection.send(task_view(second, "Plan the week"))
    await page.run(lambda p: tabs_text(p, ["Chat", "Write the report", "Plan the week"]))
    # The arrow keys move between the tabs.

    def arrows(p: Page) -> None:
        p.get_by_test_id("app-tab").nth(0).focus()
        p.keyboard.press("ArrowRight")
        expect(p.get_by_test_id("app-tab").nth(1)).to_be_focused()
        p.keyboard.press("ArrowLeft")
        p.keyboard.press("ArrowLeft")
        expect(p.get_by_test_id("app-tab").nth(2)).to_be_focused()

    await page.run(arrows)


async def test_a_message_the_appserver_has_is_marked_sent(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    await open_shell(
        page,
        hostbridge,
        chat_view(
            message("u1", "user", "pending", "one"),
            message("u2", "user", "sent", "two"),
            message("a1", "agent", "received", "three"),
        ),
    )

    def check(p: Page) -> None:
        messages = p.get_by_test_id("message")
        expect(messages.nth(0).get_by_test_id("message-sent")).to_have_count(0)
        expect(messages.nth(1).get_by_test_id("message-sent")).to_have_text("✓ Sent")
        expect(messages.nth(2).get_by_test_id("message-sent")).to_have_count(0)

    await page.run(check)


async def test_a_gfm_table_renders_as_a_table_with_its_alignment(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    text = "| Task | Done |\n|:--|--:|\n| Report | **60%** |\n| <i>x</i> | 5 |\n"
    await open_shell(page, hostbridge, chat_view(message("m1", "agent", "received", text)))

    def check(p: Page) -> None:
        table = p.get_by_test_id("message-body").locator("table")
        expect(table.locator("thead th")).to_have_text(["Task", "Done"])
        expect(table.locator("tbody tr")).to_have_count(2)
        expect(table.locator("tbody td").nth(1).locator("strong")).to_have_text("60%")
        expect(table.locator("tbody td").nth(1)).to_have_class("align-right")
        expect(table.locator("tbody td").nth(2)).to_have_text("<i>x</i>")
        expect(table.locator("i")).to_have_count(0)
        assert p.evaluate("window.__cspViolations") == []

    await page.run(check)


async def test_a_code_block_copies_its_text_from_the_keyboard_and_says_copied(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    code = "print('hi')\nexit(0)\n"
    await page.run(
        lambda p: p.context.grant_permissions(
            ["clipboard-read", "clipboard-write"], origin=hostbridge.url
        )
    )
    tree = markdown_tree(f"Run this:\n\n```python\n{code}```\n")
    await open_shell(page, hostbridge, chat_view(message("m1", "agent", "received", "", tree=tree)))

    def copy(p: Page) -> None:
        button = p.get_by_test_id("copy-code")
        button.focus()
        p.keyboard.press("Enter")
        expect(button).to_have_text("Copied")
        assert p.evaluate("navigator.clipboard.readText()") == code
        expect(button).to_have_text("Copy", timeout=5000)  # and back

    await page.run(copy)


async def test_the_page_has_a_favicon_and_loads_its_modules_under_the_one_csp(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    await open_shell(page, hostbridge, chat_view())

    def check(p: Page) -> None:
        icon = p.locator('link[rel="icon"]')
        expect(icon).to_have_attribute("href", "favicon.svg")
        answer = p.request.get(f"{hostbridge.url}/favicon.svg")
        assert answer.status == 200
        assert answer.headers["content-type"] == "image/svg+xml"
        assert p.locator('meta[http-equiv="Content-Security-Policy"]').count() == 0
        assert p.evaluate("window.__cspViolations") == []

    await page.run(check)
    assert "/js/main.js" in hostbridge.http_paths
    assert "/js/core/state.js" in hostbridge.http_paths
