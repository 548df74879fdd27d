"""The chat reads and moves as a user expects (issue 28, items 3, 4 and 11), in real Chromium
against the real `lineup run` and its demo Agent, the way the issue's walk met them: answered by
keyboard, the menu hands the focus to the composer and then on to the Agent's question when it
comes, and each answer hands it on to the next question; a notice's card and toast read as
text, with no Markdown source, and its toast covers none of the card after it; a code the
Agent shows in a code span (the Whiteboard's `app_closed`) reads with no backslash; and a message
sent while scrolled up brings the timeline to the newest, so the Agent's answer arrives in
sight.

One deadline, counted from just before `lineup run` starts, bounds everything (as
test_demo_tour_browser_e2e.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest
from playwright.sync_api import Locator, Page, ViewportSize, expect

from lineup.tests.support.process import lineup_run, stopped

from .conftest import ShellPage
from .test_chat_toasts_render import assert_clear_of
from .test_demo_tour_browser_e2e import GRACE_S, SETUP_S, STOP_S, Deadline
from .test_interactions_e2e import card

BOUND_S: Final = 90.0  # from the runtime's start to the last check
MENU_PROMPT: Final = "What would you like to try?"
NOTICE_TEXT: Final = "This is a notice: the Agent tells you something, and it needs no answer."
SAID: Final = "Hello from the bottom of the page"
AT_NEWEST: Final = "(t) => t.scrollHeight - t.scrollTop - t.clientHeight < 2"


def menus(p: Page) -> Locator:
    return card(p).filter(has_text=MENU_PROMPT)


@pytest.mark.timeout(SETUP_S + BOUND_S + STOP_S)
async def test_the_demo_chat_hands_focus_on_reads_as_text_and_follows_the_conversation(
    page: ShellPage, data_dir: Path
) -> None:
    # Low enough that a few cards fill the timeline and it scrolls.
    await page.run(lambda p: p.set_viewport_size(ViewportSize(width=900, height=560)))
    deadline = Deadline(BOUND_S)
    async with lineup_run(data_dir, within_s=deadline.left()) as (process, shell_url):

        def answer_by_keyboard_and_focus_follows(p: Page) -> None:
            p.goto(shell_url, timeout=deadline.left_ms())
            confirm = menus(p).last.locator('[data-action-id="confirm"]')
            expect(confirm).to_be_enabled(timeout=deadline.left_ms())
            confirm.focus()
            p.keyboard.press("Enter")
            # The Agent's question comes a moment after: the focus waits in the composer, then
            # goes on to it, with no Tab to press.
            asked = card(p).filter(has_text="Do you like what you have seen so far?")
            expect(asked.get_by_test_id("interaction-approve")).to_be_focused(
                timeout=deadline.left_ms()
            )
            p.keyboard.press("Enter")
            expect(asked.get_by_test_id("interaction-outcome")).to_have_text(
                "You chose: Yes", timeout=deadline.left_ms()
            )
            # Answered, the Agent offers the menu again: focus is on its first choice.
            expect(menus(p)).to_have_count(2, timeout=deadline.left_ms())
            notice = menus(p).last.locator('[data-action-id="notice"]')
            expect(notice).to_be_focused(timeout=deadline.left_ms())
            p.keyboard.press("Enter")

        await page.run(answer_by_keyboard_and_focus_follows, deadline.left() + GRACE_S)

        def the_notice_reads_as_text(p: Page) -> None:
            shown = p.locator('[data-kind="notice"]').get_by_test_id("interaction-prompt")
            expect(shown).to_have_text(NOTICE_TEXT, timeout=deadline.left_ms())
            toast = p.get_by_test_id("toast")
            expect(toast).to_contain_text(NOTICE_TEXT, timeout=deadline.left_ms())
            assert "**" not in toast.inner_text()
            # The card after it (the menu once more) is read in full, clear of the toast.
            expect(menus(p)).to_have_count(3, timeout=deadline.left_ms())
            assert_clear_of(p, menus(p).last, toast)

        await page.run(the_notice_reads_as_text, deadline.left() + GRACE_S)

        def send_while_scrolled_up(p: Page) -> None:
            timeline = p.get_by_test_id("timeline")
            timeline.evaluate("(t) => { t.scrollTop = 0; }")
            assert not timeline.evaluate(AT_NEWEST), "the walk so far fills more than a screen"
            composer = p.get_by_test_id("composer-input")
            composer.fill(SAID)
            composer.press("Enter")
            answer = p.locator('[data-author="agent"]').filter(has_text=SAID)
            expect(answer).to_be_in_viewport(timeout=deadline.left_ms())
            expect(p.get_by_test_id("timeline-newer")).to_be_hidden()

        await page.run(send_while_scrolled_up, deadline.left() + GRACE_S)
        await stopped(process, within_s=STOP_S)
    assert page.off_loopback() == [] and page.console_errors == []


@pytest.mark.timeout(SETUP_S + BOUND_S + STOP_S)
async def test_a_code_the_demo_agent_shows_in_a_code_span_reads_as_it_is(
    page: ShellPage, data_dir: Path
) -> None:
    """The issue's `app\\_closed`: the Whiteboard the tour opens, closed by its tab."""
    deadline = Deadline(BOUND_S)
    async with lineup_run(data_dir, within_s=deadline.left()) as (process, shell_url):

        def close_the_whiteboard(p: Page) -> None:
            p.goto(shell_url, timeout=deadline.left_ms())
            dashboard = menus(p).last.locator('[data-action-id="dashboard"]')
            expect(dashboard).to_be_enabled(timeout=deadline.left_ms())
            dashboard.click(timeout=deadline.left_ms())
            p.get_by_test_id("overlay-later").click(timeout=deadline.left_ms())  # its question
            p.get_by_test_id("task-finish").click(timeout=deadline.left_ms())
            expect(p.get_by_test_id("task-finish")).to_have_count(0, timeout=deadline.left_ms())
            p.get_by_test_id("task-close").click(timeout=deadline.left_ms())  # done: no question
            board = p.get_by_test_id("app-tab").filter(has_text="Whiteboard")
            expect(board).to_have_attribute("aria-current", "page", timeout=deadline.left_ms())
            p.locator(".app", has=board).get_by_test_id("app-close").click(
                timeout=deadline.left_ms()
            )

        await page.run(close_the_whiteboard, deadline.left() + GRACE_S)

        def the_code_as_it_is(p: Page) -> None:
            ended = p.get_by_test_id("message-body").filter(has_text="The Whiteboard ended")
            expect(ended.locator("code")).to_have_text("app_closed", timeout=deadline.left_ms())
            expect(ended).to_contain_text("The Whiteboard ended. The app was closed.")
            expect(ended).not_to_contain_text("\\")

        await page.run(the_code_as_it_is, deadline.left() + GRACE_S)
        await stopped(process, within_s=STOP_S)
    assert page.off_loopback() == [] and page.console_errors == []
