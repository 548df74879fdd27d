"""The Shell's Apps launcher in real Chromium against the real runtime: the header's "Apps"
button (a menu button, `aria-haspopup` / `aria-expanded`) opens by keyboard a menu of the apps
the user may open — the App Registry and the Whiteboard among them, never the chat; the arrow
keys move within it; choosing the Whiteboard brings it to the front (a `ui.open`) and closes
the menu with focus back on the button; Escape closes it likewise; and an app disabled (here
through `focus.ui.app.enable`, as the Shell's own switch sends it) leaves the open menu at
once. Browser waits are Playwright's auto-waiting `expect`. No sleeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Locator, Page, expect

from lineup.actors.focus.messages import AppEnableRequest, InventoryReply
from lineup.actors.kernel import ActorKind
from lineup.tests.support.runtime import start_runtime
from lineup.tests.support.tree import attach

from .conftest import ShellPage

WAIT_MS: Final = 15_000  # a real runtime: processes, an HTTP AppServer
FRAME: Final = '[data-testid="surface-frame"]'
EVERY_APP: Final = ["App Registry", "Pomodoro", "Task Dashboard", "Whiteboard"]  # by title, no chat


def tabs(p: Page) -> Locator:
    return p.get_by_test_id("app-switcher").get_by_test_id("app-tab")


def entries(p: Page) -> Locator:
    return p.get_by_test_id("apps-menu").get_by_role("menuitem")


def open_the_whiteboard(p: Page, shell_url: str) -> None:
    p.goto(shell_url)
    expect(p.get_by_test_id("runtime-state")).to_have_attribute(
        "data-state", "online", timeout=WAIT_MS
    )
    button = p.get_by_role("button", name="Apps")
    menu = p.get_by_test_id("apps-menu")
    expect(button).to_have_attribute("aria-haspopup", "menu")
    expect(button).to_have_attribute("aria-expanded", "false")
    expect(menu).to_be_hidden()
    expect(tabs(p)).to_have_text(["Chat"], timeout=WAIT_MS)

    button.focus()
    p.keyboard.press("Enter")  # opens on the first app
    expect(menu).to_be_visible()
    expect(button).to_have_attribute("aria-expanded", "true")
    expect(entries(p)).to_have_text(EVERY_APP, timeout=WAIT_MS)
    expect(entries(p).nth(0)).to_be_focused()
    p.keyboard.press("ArrowUp")  # wraps to the last
    expect(entries(p).nth(3)).to_be_focused()
    p.keyboard.press("ArrowDown")  # and back round to the first
    expect(entries(p).nth(0)).to_be_focused()
    p.keyboard.press("End")
    p.keyboard.press("ArrowUp")
    expect(entries(p).nth(2)).to_be_focused()
    p.keyboard.press("ArrowDown")
    whiteboard = entries(p).nth(3)
    expect(whiteboard).to_have_text("Whiteboard")
    expect(whiteboard).to_be_focused()
    p.keyboard.press("Enter")

    expect(menu).to_be_hidden()
    expect(button).to_have_attribute("aria-expanded", "false")
    expect(button).to_be_focused()
    expect(tabs(p)).to_have_text(["Chat", "Whiteboard"], timeout=WAIT_MS)
    expect(tabs(p).nth(1)).to_have_attribute("aria-current", "page", timeout=WAIT_MS)
    board = p.frame_locator(FRAME).locator("body")
    expect(board).to_have_attribute("data-state", "ready", timeout=WAIT_MS)
    expect(board.locator("#board-title")).to_have_text("Whiteboard", timeout=WAIT_MS)

    p.keyboard.press("ArrowDown")  # on the button: opens on the first app
    expect(menu).to_be_visible()
    expect(entries(p).nth(0)).to_be_focused()
    p.keyboard.press("Escape")
    expect(menu).to_be_hidden()
    expect(button).to_be_focused()
    expect(tabs(p).nth(1)).to_have_attribute("aria-current", "page")  # nothing else moved

    p.keyboard.press("Enter")  # left open while the registry changes
    expect(entries(p)).to_have_text(EVERY_APP)


def the_disabled_app_left_the_menu(p: Page) -> None:
    expect(entries(p)).to_have_text(["App Registry", "Pomodoro", "Whiteboard"], timeout=WAIT_MS)
    expect(p.get_by_test_id("apps-menu")).to_be_visible()
    p.keyboard.press("Escape")
    p.keyboard.press("Enter")  # opened again: the list is the runtime's, not this page's
    expect(entries(p)).to_have_text(["App Registry", "Pomodoro", "Whiteboard"])
    entries(p).nth(0).click()  # the pointer works too
    expect(p.get_by_test_id("apps-menu")).to_be_hidden()
    expect(tabs(p)).to_have_text(["Chat", "Whiteboard", "App Registry"], timeout=WAIT_MS)
    expect(tabs(p).nth(2)).to_have_attribute("aria-current", "page", timeout=WAIT_MS)


async def test_the_launcher_opens_by_keyboard_brings_an_app_forward_and_follows_the_registry(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)

    await page.run(lambda p: open_the_whiteboard(p, runtime.shell_url))

    probe = await attach(nursery, runtime.supervisor, ActorKind.HOSTBRIDGE, "probe")
    off = AppEnableRequest(app_scope="task-dashboard", enabled=False)
    await probe.request("focus", off, expect=InventoryReply)

    await page.run(the_disabled_app_left_the_menu)
    on = AppEnableRequest(app_scope="task-dashboard", enabled=True)
    await probe.request("focus", on, expect=InventoryReply)

    def enabled_again(p: Page) -> None:
        p.get_by_role("button", name="Apps").click()
        expect(entries(p)).to_have_text(EVERY_APP, timeout=WAIT_MS)

    await page.run(enabled_again)
    assert page.console_errors == []
