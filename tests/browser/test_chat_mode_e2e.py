"""Interact's mode in real Chromium against the real `lineup run` (issue 29, item 5; seed 003
§5.1, seed 004 §4.5): the user switches the chat to Audio by keyboard in the bar at the top of
the chat; the chat asks the runtime (`AppContext.switch_mode`), focus records it on the focus
stack and in the store and tells the chat, whose view then says Audio, and the chat's tab says
it too (the runtime's list). The user opens the Task Dashboard from the Apps menu and closes it
by keyboard: the chat comes back in front in Audio. The runtime stops (a SIGKILL of its whole
process group) and starts again on the same data dir: the chat is still in Audio, in its
view and in its tab, and the user switches it back to IM. No media starts: a mode is what the
chat offers. Browser waits are Playwright's auto-waiting `expect`; waits on the processes run
under `fail_after`. No sleeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest
from playwright.sync_api import Locator, Page, expect

from lineup.tests.support.browser import load_shell

from .conftest import ShellPage
from .test_runtime_restart_e2e import start_run, stop_run

WAIT_MS: Final = 15_000  # a real runtime: processes, an HTTP AppServer, a MiniApp starting


def tabs(p: Page) -> Locator:
    return p.get_by_test_id("app-switcher").get_by_test_id("app-tab")


def chat_tab(p: Page) -> Locator:
    return tabs(p).and_(p.locator('[data-app-scope="chat"]'))


def mode_button(p: Page, mode: str) -> Locator:
    return p.get_by_test_id("chat-mode").locator(f'[data-testid="mode-button"][data-mode="{mode}"]')


def the_chat_is_in(p: Page, mode: str, label: str) -> None:
    """In front, and in `mode` as its own view says (the bar) and as the runtime lists it (the
    tab: a mode other than IM is named there)."""
    expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)
    expect(p.get_by_test_id("chat-mode-current")).to_have_text(f"{label} mode", timeout=WAIT_MS)
    expect(mode_button(p, mode)).to_have_attribute("aria-pressed", "true", timeout=WAIT_MS)
    pressed = p.get_by_test_id("chat-mode").locator('[aria-pressed="true"]')
    expect(pressed).to_have_count(1, timeout=WAIT_MS)
    note = chat_tab(p).get_by_test_id("app-tab-mode")
    if mode == "im":
        expect(note).to_have_count(0, timeout=WAIT_MS)
    else:
        expect(note).to_have_text(f" · {label}", timeout=WAIT_MS)


def switch_by_keyboard(p: Page, presses: list[str]) -> None:
    """Tab into the mode bar from the timeline (the element before it), move with the arrow
    keys and switch with Enter."""
    expect(mode_button(p, "im")).to_be_visible(timeout=WAIT_MS)
    p.get_by_test_id("chat-mode").locator('[aria-pressed="true"]').focus()
    for key in presses:
        p.keyboard.press(key)
    p.keyboard.press("Enter")


def open_and_close_the_task_dashboard_by_keyboard(p: Page) -> None:
    button = p.get_by_role("button", name="Apps")
    button.focus()
    p.keyboard.press("Enter")
    entry = p.get_by_test_id("apps-menu").get_by_role("menuitem", name="Task Dashboard")
    expect(entry).to_be_visible(timeout=WAIT_MS)
    entry.focus()
    p.keyboard.press("Enter")
    dashboard = tabs(p).and_(p.locator('[data-app-scope="task-dashboard"]'))
    expect(dashboard).to_have_attribute("aria-current", "page", timeout=WAIT_MS)
    expect(p.get_by_test_id("chat")).to_be_hidden(timeout=WAIT_MS)
    # The chat behind it keeps its mode, and its tab says so.
    expect(chat_tab(p)).to_have_attribute("data-state", "background", timeout=WAIT_MS)
    expect(chat_tab(p).get_by_test_id("app-tab-mode")).to_have_text(" · Audio", timeout=WAIT_MS)

    its_tab = p.locator('[data-testid="app-tab"][data-app-scope="task-dashboard"]')
    close = (
        p.get_by_test_id("app-switcher").locator(".app", has=its_tab).get_by_test_id("app-close")
    )
    close.focus()
    p.keyboard.press("Enter")
    expect(tabs(p)).to_have_count(1, timeout=WAIT_MS)
    expect(chat_tab(p)).to_have_attribute("aria-current", "page", timeout=WAIT_MS)


@pytest.mark.timeout(150)
async def test_the_chat_comes_back_in_audio_after_another_app_closes_and_after_a_restart(
    page: ShellPage, data_dir: Path
) -> None:
    first, url = await start_run(data_dir)
    try:
        await page.run(load_shell(url, wait_ms=WAIT_MS))
        await page.run(lambda p: the_chat_is_in(p, "im", "IM"))
        await page.run(lambda p: switch_by_keyboard(p, ["ArrowRight"]))  # IM → Audio
        await page.run(lambda p: the_chat_is_in(p, "audio", "Audio"))
        await page.run(open_and_close_the_task_dashboard_by_keyboard)
        await page.run(lambda p: the_chat_is_in(p, "audio", "Audio"))
    finally:
        await stop_run(first, "sigkill_group")

    second, url = await start_run(data_dir)
    try:
        await page.run(lambda p: p.goto("about:blank"))
        await page.run(load_shell(url, wait_ms=WAIT_MS))
        await page.run(lambda p: the_chat_is_in(p, "audio", "Audio"))
        await page.run(lambda p: switch_by_keyboard(p, ["ArrowLeft"]))  # Audio → IM
        await page.run(lambda p: the_chat_is_in(p, "im", "IM"))
    finally:
        await stop_run(second, "sigterm")
    assert page.errors == []
