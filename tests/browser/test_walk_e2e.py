"""A newcomer's walk through LineUp, in real Chromium against `lineup run` as `make run` starts it
(the embedded AppServer, the demo Agent, the local catalog), one test from start to restart
(issue 28: "the walk above is a test").

The user tries each of the menu's five choices (a notice, a choice, a confirmation, a form, and
the Task Dashboard, whose question is pending while the user switches to the chat and back);
asks the Agent for its tools (`/tools`) and opens the Whiteboard with `/call`, draws, exports the
board (allowing the save in the runtime's prompt) and submits it; installs Draw-and-Guess from
the App Registry and plays a round with the demo Agent (`/play`); reloads the page; and stops
and starts the whole runtime on the same data dir, after which the tab left open reconnects by
itself and shows what it showed. Every step asserts what the user sees; the console stays
clean and nothing leaves loopback. Waits are Playwright's `expect` with a deadline; no sleeps.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Final

import pytest
import trio
from playwright.sync_api import Locator, Page, expect

from lineup.ops.agent._play import WORDS
from lineup.ops.agent._questions import MENU_PROMPT
from lineup.tests.support.process import SHELL_LINE, LineupProcess

from .conftest import ShellPage
from .test_app_registry_e2e import WAIT_MS
from .test_draw_and_guess_e2e import (
    catalog,
    chat_in_front,
    close_the_registry,
    game_body,
    game_in_front,
    give_up_with_the_keyboard,
    install_from_the_catalog,
)
from .test_draw_and_guess_e2e import draw as draw_the_house
from .test_whiteboard_e2e import board_body, board_frame, draw, expect_saved

__all__ = ["catalog"]  # the Draw-and-Guess module's catalog fixture, built here too

STOP_S: Final = 30.0
WAIT_S: Final = WAIT_MS / 1000
OPEN_CARD: Final = '[data-testid="interaction-card"][data-outcome="open"]'
TOUR_BOARD: Final = "Try the Whiteboard"  # the board the demo Agent opens after the dashboard


def tabs(p: Page) -> Locator:
    return p.get_by_test_id("app-switcher").get_by_test_id("app-tab")


def timeline_cards(p: Page) -> Locator:
    return p.locator('[data-testid="interaction-card"][data-place="timeline"]')


def menus(p: Page) -> Locator:
    return timeline_cards(p).filter(has_text=MENU_PROMPT)


def composer_says(text: str) -> Callable[[Page], None]:
    def send(p: Page) -> None:
        composer = p.get_by_test_id("composer-input")
        composer.fill(text)
        composer.press("Enter")

    return send


def agent_said(text: str) -> Callable[[Page], None]:
    def check(p: Page) -> None:
        said = p.locator('[data-testid="message"][data-author="agent"]').filter(has_text=text)
        expect(said.last).to_be_visible(timeout=WAIT_MS)

    return check


def choose_from_the_menu(action_id: str, label: str, asked: int) -> Callable[[Page], None]:
    """The `asked`-th menu is the open one; the user takes `action_id` from it."""

    def choose(p: Page) -> None:
        expect(menus(p)).to_have_count(asked, timeout=WAIT_MS)
        expect(menus(p).last).to_have_attribute("data-outcome", "open", timeout=WAIT_MS)
        # This menu, by its id: the next one may come at once after the answer (a notice's).
        asked_id = menus(p).last.get_attribute("data-interaction-id")
        menu = p.locator(f'[data-testid="interaction-card"][data-interaction-id="{asked_id}"]')
        menu.locator(f'[data-action-id="{action_id}"]').click(timeout=WAIT_MS)
        expect(menu.get_by_test_id("interaction-outcome")).to_have_text(
            f"You chose: {label}", timeout=WAIT_MS
        )

    return choose


def the_menu_is_asked_again(p: Page) -> None:
    expect(menus(p).last).to_have_attribute("data-outcome", "open", timeout=WAIT_MS)


def kind_card(p: Page, kind: str) -> Locator:
    return (
        timeline_cards(p).and_(p.locator(f'[data-kind="{kind}"]')).filter(has_not_text=MENU_PROMPT)
    )


def the_notice_is_read(p: Page) -> None:
    notice = kind_card(p, "notice").last
    expect(notice).to_have_attribute("data-outcome", "answered", timeout=WAIT_MS)
    expect(notice.get_by_test_id("interaction-prompt")).to_contain_text("the Agent tells you")
    expect(notice.get_by_test_id("interaction-prompt")).not_to_contain_text("**")


def pick_fruits(p: Page) -> None:
    choice = kind_card(p, "choice").last
    expect(choice).to_have_attribute("data-outcome", "open", timeout=WAIT_MS)
    choice.locator('input[data-action-id="apple"]').check(timeout=WAIT_MS)
    choice.locator('input[data-action-id="cherry"]').check(timeout=WAIT_MS)
    choice.get_by_test_id("interaction-submit").click(timeout=WAIT_MS)
    expect(choice.get_by_test_id("interaction-outcome")).to_have_text(
        "You chose: Apple, Cherry", timeout=WAIT_MS
    )


def confirm_yes(p: Page) -> None:
    confirm = kind_card(p, "confirm").last
    expect(confirm).to_have_attribute("data-outcome", "open", timeout=WAIT_MS)
    confirm.get_by_test_id("interaction-approve").click(timeout=WAIT_MS)
    expect(confirm.get_by_test_id("interaction-outcome")).to_have_text(
        "You chose: Yes", timeout=WAIT_MS
    )


def fill_the_form(p: Page) -> None:
    form = kind_card(p, "input").last
    expect(form).to_have_attribute("data-outcome", "open", timeout=WAIT_MS)
    form.get_by_label("Your name").fill("Ada", timeout=WAIT_MS)
    form.get_by_label("Cups of tea a day").fill("3")
    form.get_by_test_id("interaction-submit").click(timeout=WAIT_MS)
    expect(form.get_by_test_id("interaction-outcome")).to_contain_text(
        "Your name: Ada", timeout=WAIT_MS
    )


def the_dashboard_asks_while_the_user_looks_elsewhere(p: Page) -> None:
    """The Task Dashboard comes to the front with its question above it; the user goes to the
    chat (the question waits in the dashboard's group there) and back, then answers."""
    expect(p.get_by_test_id("task-dashboard")).to_be_visible(timeout=WAIT_MS)
    overlay = p.get_by_test_id("interaction-overlay")
    expect(overlay).to_be_visible(timeout=WAIT_MS)
    expect(overlay.locator(OPEN_CARD)).to_contain_text("How far along is the task?")
    tabs(p).filter(has_text="Chat").click(timeout=WAIT_MS)
    expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)
    expect(overlay).to_be_hidden(timeout=WAIT_MS)
    group = p.get_by_test_id("app-session-group").last
    expect(group).to_have_attribute("data-waiting", "true", timeout=WAIT_MS)
    tabs(p).filter(has_text="Try the Task Dashboard").click(timeout=WAIT_MS)
    expect(overlay).to_be_visible(timeout=WAIT_MS)
    asked = overlay.locator(OPEN_CARD)
    asked.locator('input[data-action-id="p60"]').check(timeout=WAIT_MS)
    asked.get_by_test_id("interaction-submit").click(timeout=WAIT_MS)
    expect(overlay).to_be_hidden(timeout=WAIT_MS)
    expect(p.get_by_test_id("task-dashboard")).to_contain_text("60", timeout=WAIT_MS)
    # The user closes it; the task is not done, so the dashboard asks first.
    p.get_by_test_id("task-close").click(timeout=WAIT_MS)
    asked = p.locator('[data-testid="interaction-card"][data-place="app"]').filter(
        has=p.get_by_test_id("interaction-approve")
    )
    asked.last.get_by_test_id("interaction-approve").click(timeout=WAIT_MS)
    expect(p.get_by_test_id("task-dashboard")).to_have_count(0, timeout=WAIT_MS)


def the_tools_are_listed(p: Page) -> None:
    listed = p.locator('[data-testid="message"][data-author="agent"]').filter(
        has_text="whiteboard.open"
    )
    expect(listed.last).to_be_visible(timeout=WAIT_MS)
    expect(listed.last).to_contain_text("task-dashboard.open")


def board_in_front(title: str) -> Callable[[Page], None]:
    def check(p: Page) -> None:
        board_frame(p)
        expect(p.get_by_test_id("chat")).to_be_hidden(timeout=WAIT_MS)
        expect(tabs(p)).to_have_text(["Chat", "Whiteboard"], timeout=WAIT_MS)
        expect(board_body(p).locator("#board-title")).to_have_text(title, timeout=WAIT_MS)

    return check


def close_the_board(p: Page) -> None:
    close = p.get_by_role("button", name="Close Whiteboard")
    close.focus(timeout=WAIT_MS)
    p.keyboard.press("Enter")
    expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)
    expect(tabs(p)).to_have_text(["Chat"], timeout=WAIT_MS)
    # Its frame is told to tear down, then goes (a moment after the tab).
    expect(p.locator('[data-testid="surface-frame"]')).to_have_count(0, timeout=WAIT_MS)


def export_allowed(p: Page) -> None:
    body = board_body(p)
    with p.expect_download(timeout=WAIT_MS):
        body.locator("#export").click(timeout=WAIT_MS)
        dialog = p.get_by_test_id("permission-prompt")
        expect(dialog).to_be_visible(timeout=WAIT_MS)
        expect(dialog).to_have_attribute("data-armed", "true", timeout=WAIT_MS)
        p.get_by_test_id("permission-allow-once").click(timeout=WAIT_MS)
        expect(dialog).to_be_hidden(timeout=WAIT_MS)
    expect(body).to_have_attribute("data-export", "completed", timeout=WAIT_MS)


def submitted_to_the_agent(p: Page) -> None:
    board_body(p).locator("#submit").click(timeout=WAIT_MS)
    asked = p.locator('[data-testid="interaction-card"][data-place="app"]').last
    expect(asked.get_by_test_id("interaction-approve")).to_be_visible(timeout=WAIT_MS)
    asked.get_by_test_id("interaction-approve").click(timeout=WAIT_MS)
    expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)  # the board ended
    expect(tabs(p)).to_have_text(["Chat"], timeout=WAIT_MS)
    expect(p.locator('[data-testid="surface-frame"]')).to_have_count(0, timeout=WAIT_MS)
    # Its sub-session's group in the chat, folded; unfolded, the board's files are there.
    group = p.get_by_test_id("app-session-group").filter(has_text="Whiteboard")
    expect(group).to_have_attribute("data-state", "closed", timeout=WAIT_MS)
    group.get_by_test_id("app-session-toggle").click(timeout=WAIT_MS)
    expect(group.get_by_test_id("artifact-card").first).to_be_visible(timeout=WAIT_MS)


def open_the_registry_by_keyboard(p: Page) -> None:
    """The header's Apps menu, by keyboard: Enter opens it, ArrowDown to the App Registry."""
    p.get_by_test_id("apps-button").focus(timeout=WAIT_MS)
    p.keyboard.press("Enter")
    item = p.get_by_test_id("apps-menu").get_by_role("menuitem", name="App Registry")
    for _ in range(10):
        if item.evaluate("(e) => e === document.activeElement"):
            break
        p.keyboard.press("ArrowDown")
    expect(item).to_be_focused()
    p.keyboard.press("Enter")


def the_round_ends_in_the_chat(word: str) -> Callable[[Page], None]:
    """The Agent guesses once. A wrong guess plays on, shown by the game, until the user gives
    up. A right one (the game draws its `word` at random: one in fifty) wins the round at once
    and the game closes, perhaps before it has shown the guess: the Agent's answer in the chat
    says so then. Either way the chat is in front again."""

    def end(p: Page) -> None:
        if word == WORDS[0]:
            agent_said(f"{WORDS[0]} is right!")(p)
        else:
            expect(game_body(p)).to_have_attribute("data-guesses", "1", timeout=WAIT_MS)
            give_up_with_the_keyboard(p)
        chat_in_front(p)

    return end


def menus_asked(p: Page) -> int:
    return menus(p).count()


def reload_keeps_the_conversation(asked: int) -> Callable[[Page], None]:
    def check(p: Page) -> None:
        p.reload()
        expect(p.get_by_test_id("runtime-state")).to_have_attribute(
            "data-state", "online", timeout=WAIT_MS
        )
        expect(menus(p)).to_have_count(asked, timeout=WAIT_MS)
        expect(p.get_by_test_id("app-session-group").filter(has_text="Whiteboard")).to_have_count(2)

    return check


def offline_then_back(asked: int) -> Callable[[Page], None]:
    def check(p: Page) -> None:
        state = p.get_by_test_id("runtime-state")
        expect(state).to_have_attribute("data-state", "online", timeout=3 * WAIT_MS)
        expect(menus(p)).to_have_count(asked, timeout=WAIT_MS)
        expect(p.get_by_test_id("app-session-group").filter(has_text="Whiteboard")).to_have_count(2)

    return check


def assert_only_the_outage(errors: list[str]) -> None:
    """While the runtime was down, only the browser's own lines for what it could not reach
    (the tab's reconnects, a thumbnail asked again), none with the token: never in a URL."""
    down = ("WebSocket connection to", "net::ERR_CONNECTION_REFUSED")
    assert all(any(mark in line for mark in down) for line in errors), errors
    assert not any("token" in line for line in errors), errors


async def start(data_dir: Path, catalog_dir: Path) -> tuple[LineupProcess, str]:
    process = await LineupProcess.start(
        "run", "--data-dir", str(data_dir), "--catalog", str(catalog_dir)
    )
    with trio.fail_after(WAIT_S * 3):
        line = await process.wait_for_line(SHELL_LINE)
    return process, line.split(SHELL_LINE, 1)[1]


async def stop(process: LineupProcess) -> None:
    process.signal(signal.SIGTERM)
    with trio.fail_after(STOP_S):
        assert await process.wait() == 0


@pytest.mark.timeout(420)
async def test_a_newcomers_walk_from_the_menu_to_a_restart(  # noqa: PLR0915 (the whole walk)
    page: ShellPage, data_dir: Path, catalog: Path
) -> None:
    """About forty seconds by design: the issue's walk itself, one newcomer's session from the
    first card to a restart of the whole runtime (two `lineup run` starts, a game round with
    the demo Agent). Each of its steps is also tested alone, faster, elsewhere."""
    process, url = await start(data_dir, catalog)
    try:

        def open_shell(p: Page) -> None:
            p.goto(url)
            expect(p.get_by_test_id("runtime-state")).to_have_attribute(
                "data-state", "online", timeout=WAIT_MS
            )

        await page.run(open_shell)
        # The menu's five choices, each answered; the menu comes back after each.
        await page.run(choose_from_the_menu("notice", "A notice", 1))
        await page.run(the_notice_is_read)
        await page.run(choose_from_the_menu("choice", "A choice", 2))
        await page.run(pick_fruits)
        await page.run(choose_from_the_menu("confirm", "A confirmation", 3))
        await page.run(confirm_yes)
        await page.run(choose_from_the_menu("input", "A form", 4))
        await page.run(fill_the_form)
        await page.run(choose_from_the_menu("dashboard", "The Task Dashboard", 5))
        await page.run(the_dashboard_asks_while_the_user_looks_elsewhere)
        # Then the Agent's Whiteboard: drawn on, exported (the save allowed), and submitted.
        await page.run(board_in_front(TOUR_BOARD))
        await page.run(draw([(100 + 10 * i, 200 + 3 * i) for i in range(40)]))
        await page.run(lambda p: expect_saved(p, 1))
        await page.run(export_allowed)
        await page.run(submitted_to_the_agent)
        await page.run(agent_said("Thank you for the board"))
        await page.run(the_menu_is_asked_again)

        # /tools and /call: a board of the user's own, opened and closed again.
        await page.run(composer_says("/tools"))
        await page.run(the_tools_are_listed)
        await page.run(composer_says('/call whiteboard.open {"board_id": "walk", "title": "Walk"}'))
        await page.run(board_in_front("Walk"))
        await page.run(close_the_board)
        await page.run(agent_said("app_closed"))

        # Draw-and-Guess, installed from the App Registry and played with the demo Agent.
        await page.run(open_the_registry_by_keyboard)
        await page.run(install_from_the_catalog)
        await page.run(close_the_registry)
        await page.run(composer_says("/play draw-and-guess"))
        word = await page.run(game_in_front)
        await page.run(draw_the_house)
        await page.run(the_round_ends_in_the_chat(word))

        # A reload, then the whole runtime stopped and started again under the open tab.
        asked = await page.run(menus_asked)
        await page.run(reload_keeps_the_conversation(asked))
        assert page.console_errors == []
        await stop(process)
        process, _ = await start(data_dir, catalog)
        await page.run(offline_then_back(asked))
        await stop(process)
    finally:
        process.kill()
        await process.wait()
    assert page.off_loopback() == []
    assert page.errors == []  # no uncaught exception in the Shell, ever
    assert_only_the_outage(page.console_errors)
