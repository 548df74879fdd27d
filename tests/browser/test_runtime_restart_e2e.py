"""An app and a tab left open across a restart of the whole runtime, in real Chromium against the
real `lineup run` (issue 28, items 1 and 2; seed 000 §6, seed 003 §9.11: a restored instance is
resumable, never a dead tab).

Item 1: the user opens the Whiteboard from the Apps menu (no tool call comes for that instance)
and draws a stroke; `lineup run` stops, by SIGTERM or by a SIGKILL of its whole process group,
and starts again on the same data dir. The board's tab says it is suspended; the user opens it
by keyboard, its process starts, and the board shows with the stroke from its session data, also
after a reload of the Shell. Item 2: a tab left open while the runtime stops and starts again on
the same data dir (the same address: port and token) reconnects by itself and works, and the
token never shows in the browser's console or a socket's URL; the Whiteboard it showed is
resumed by its tab in that same page. Browser waits are Playwright's auto-waiting `expect`;
waits on the process run under `fail_after`. No sleeps.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

import pytest
import trio
from playwright.sync_api import Page, expect

from lineup.tests.support.browser import load_shell
from lineup.tests.support.process import SHELL_LINE, LineupProcess, lineup_status
from lineup.tests.support.runtime import agent_client

from .conftest import ShellPage
from .test_shell_e2e import send_from_composer, user_texts_at_agent
from .test_whiteboard_e2e import (
    FRAME,
    board_body,
    board_frame,
    board_pixel,
    draw,
    expect_saved,
    revision_of,
    tabs,
    whiteboard_tab,
)

WAIT_MS: Final = 15_000  # a real runtime: processes, an HTTP AppServer, a MiniApp starting
STOP_S: Final = 20.0  # for `lineup run` to stop on SIGTERM
STROKE: Final = [(100 + 10 * i, 200 + 3 * i) for i in range(40)]


async def start_run(data_dir: Path, *args: str) -> tuple[LineupProcess, str]:
    """`lineup run ARGS` on `data_dir`, in a process group of its own; answers it and the
    Shell's URL it printed once ready."""
    process = await LineupProcess.start("run", "--data-dir", str(data_dir), *args, own_group=True)
    try:
        with trio.fail_after(30):
            line = await process.wait_for_line(SHELL_LINE)
    except BaseException:
        process.kill_group()
        await process.wait()
        raise
    return process, line.split(SHELL_LINE, 1)[1]


async def stop_run(process: LineupProcess, how: str) -> None:
    if how == "sigterm":
        process.signal(signal.SIGTERM)
        with trio.fail_after(STOP_S):
            assert await process.wait() == 0
    else:
        process.kill_group()
        with trio.fail_after(STOP_S):
            await process.wait()


def open_the_whiteboard_by_keyboard(p: Page) -> None:
    button = p.get_by_role("button", name="Apps")
    button.focus()
    p.keyboard.press("Enter")
    entry = p.get_by_test_id("apps-menu").get_by_role("menuitem", name="Whiteboard")
    expect(entry).to_be_visible(timeout=WAIT_MS)
    entry.focus()
    p.keyboard.press("Enter")
    board_frame(p)
    expect(whiteboard_tab(p)).to_have_attribute("data-state", "foreground", timeout=WAIT_MS)


def suspended_with_the_chat_in_front(p: Page) -> None:
    expect(tabs(p)).to_have_count(2, timeout=WAIT_MS)
    tab = whiteboard_tab(p)
    expect(tab).to_have_attribute("data-state", "suspended", timeout=WAIT_MS)
    expect(tab.get_by_test_id("app-tab-note")).to_contain_text("Suspended", timeout=WAIT_MS)
    expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)
    expect(p.locator(FRAME)).to_have_count(0, timeout=WAIT_MS)


def resume_by_its_tab(p: Page) -> None:
    tab = whiteboard_tab(p)
    tab.focus()
    p.keyboard.press("Enter")
    expect(tab).to_have_attribute("data-state", "foreground", timeout=WAIT_MS)
    expect(tab).to_have_attribute("aria-current", "page", timeout=WAIT_MS)
    expect(tab.get_by_test_id("app-tab-note")).to_have_count(0, timeout=WAIT_MS)
    board_frame(p)
    expect(p.get_by_test_id("chat")).to_be_hidden(timeout=WAIT_MS)


def the_stroke_is_on_the_board(p: Page) -> None:
    expect_saved(p, 1)
    assert board_pixel(p, 200, 230) != board_pixel(p, 1200, 800)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["sigterm", "sigkill_group"])
async def test_a_whiteboard_opened_by_the_user_comes_back_after_a_restart_of_the_runtime(
    page: ShellPage, data_dir: Path, how: str
) -> None:
    """About ten seconds by design: two real `lineup run`s one after another on one data dir
    (the restart of the whole runtime, by SIGTERM or by a SIGKILL of its group, is the claim),
    with the Whiteboard's process started in each and a Chromium page through both."""
    first, url = await start_run(data_dir)
    try:
        await page.run(load_shell(url, wait_ms=WAIT_MS))
        await page.run(open_the_whiteboard_by_keyboard)
        await page.run(draw(STROKE))
        await page.run(lambda p: expect_saved(p, 1))
        drawn: int = await page.run(revision_of)
    finally:
        await stop_run(first, how)

    second, url = await start_run(data_dir)
    try:
        # The link opened afresh, as the issue's user did (a tab left open is item 2's test).
        await page.run(lambda p: p.goto("about:blank"))
        await page.run(load_shell(url, wait_ms=WAIT_MS))
        page.console_errors.clear()  # the browser's own lines for the old page's reconnects
        await page.run(suspended_with_the_chat_in_front)
        await page.run(resume_by_its_tab)
        # The board its session data holds, at the revision it was saved at, on the canvas.
        await page.run(the_stroke_is_on_the_board)
        assert await page.run(revision_of) >= drawn
        children = lineup_status(data_dir)["children"]
        assert isinstance(children, list)
        assert any(c["name"] == "miniapp:whiteboard" for c in children), children

        # A reload of the Shell finds the board in front, not a view it cannot show.
        def reloaded(p: Page) -> None:
            p.reload()
            expect(whiteboard_tab(p)).to_have_attribute("aria-current", "page", timeout=WAIT_MS)
            board_frame(p)
            the_stroke_is_on_the_board(p)

        await page.run(reloaded)
        # Resumed for real: a new stroke reaches the new process and is saved.
        await page.run(draw([(900, 300), (950, 350), (1000, 400)]))
        await page.run(lambda p: expect_saved(p, 2))
    finally:
        await stop_run(second, "sigterm")
    assert page.errors == []
    assert page.console_errors == []


APPSERVER_LINE: Final = "lineup: reference AppServer: "


async def test_a_tab_left_open_follows_a_restarted_runtime_by_itself_without_showing_its_token(
    page: ShellPage, data_dir: Path, nursery: trio.Nursery
) -> None:
    """About ten seconds by design: two real `lineup run`s on one data dir, and between them
    the tab's own reconnects, which back off (`core/connection.js`) while the runtime is down:
    the tab coming back by itself on its next attempt is the claim."""
    console: list[str] = []  # every line the page printed, errors or not
    await page.run(lambda p: p.on("console", lambda message: console.append(message.text)))
    first, url = await start_run(data_dir, "--no-demo-agent")
    token = urlsplit(url).fragment.removeprefix("token=")
    try:
        await page.run(load_shell(url, wait_ms=WAIT_MS))
        await page.run(open_the_whiteboard_by_keyboard)
        await page.run(draw(STROKE))
        await page.run(lambda p: expect_saved(p, 1))
    finally:
        await stop_run(first, "sigterm")

    def disconnected(p: Page) -> None:
        expect(p.get_by_test_id("runtime-state")).to_have_attribute(
            "data-state", "disconnected", timeout=WAIT_MS
        )

    await page.run(disconnected)

    # Drawn while the runtime is down: the board says it is offline, and what a restart loses.
    def drawn_offline(p: Page) -> None:
        draw([(1300, 150), (1350, 200), (1400, 250)])(p)
        expect(board_body(p).locator("#board-status")).to_have_text(
            "Offline: LineUp cannot be reached. What you draw is saved once it is back "
            "(not if LineUp restarts meanwhile).",
            timeout=WAIT_MS,
        )

    await page.run(drawn_offline)
    second, again = await start_run(data_dir, "--no-demo-agent")
    try:
        assert again == url  # the same address: port and token
        with trio.fail_after(30):
            line = await second.wait_for_line(APPSERVER_LINE)
        agent = await agent_client(nursery, line.split(APPSERVER_LINE, 1)[1])

        # The same tab, never reloaded: it is back online by itself, and the chat works.
        def back_online(p: Page) -> None:
            expect(p.get_by_test_id("runtime-state")).to_have_attribute(
                "data-state", "online", timeout=WAIT_MS
            )
            expect(p.get_by_test_id("connection-banner")).to_be_hidden(timeout=WAIT_MS)

        await page.run(back_online)
        # The link opened again in this tab (the same address: only its fragment moves, so
        # the page stays). The board it showed is suspended; its tab resumes it in this same
        # page, with the stroke (not the view the page held from the earlier run, whose
        # Surface is no longer served).
        await page.run(suspended_with_the_chat_in_front)
        await page.run(resume_by_its_tab)
        await page.run(the_stroke_is_on_the_board)

        def back_to_the_chat(p: Page) -> None:
            chat = tabs(p).and_(p.locator('[data-app-scope="chat"]'))
            chat.focus()
            p.keyboard.press("Enter")
            expect(p.get_by_test_id("composer-input")).to_be_visible(timeout=WAIT_MS)

        await page.run(back_to_the_chat)
        text = "still there after the restart?"
        await send_from_composer(page, text)
        assert len(await user_texts_at_agent(agent, text)) == 1
    finally:
        await stop_run(second, "sigterm")
    assert [line for line in console if token in line] == []
    assert [url for url in page.requests if token in url] == []
    # The browser's own lines for the reconnects while the runtime was down, and nothing else.
    assert all("WebSocket connection to" in line for line in page.console_errors)
    assert page.errors == []
