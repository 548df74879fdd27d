"""The embedded default's demo Agent as a newcomer meets it, in real Chromium against the real
`lineup run` (issue 12: "a newcomer sees a card, the overlay and a sub-session within a minute
of `make run`, without a second terminal"): the menu card, the Task Dashboard chosen from it,
its question shown as the overlay above it, and its sub-session's group in the chat, waiting.

One deadline, counted from just before `lineup run` starts, bounds everything: each wait gets
what is left of the minute, never a minute of its own. The tour's logic, and each of its other
answers, are tested through the Shell socket in tests/ops/agent/test_demo_tour_e2e.py."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Final

import pytest
from playwright.sync_api import Page, expect

from lineup.tests.support.process import lineup_run, stopped

from .conftest import ShellPage
from .test_interactions_e2e import card
from .test_task_dashboard_e2e import tabs

MINUTE: Final = 60.0  # the bound, from the runtime's start
GRACE_S: Final = 5.0  # for the Playwright thread to report an `expect` that ran out of time
STOP_S: Final = 20.0  # for `lineup run` to stop on SIGTERM, after the test
SETUP_S: Final = 30.0  # the browser and its page, before the minute starts
MENU_PROMPT: Final = "What would you like to try?"
PROGRESS_PROMPT: Final = "How far along is the task?"
TASK_TITLE: Final = "Try the Task Dashboard"


class Deadline:
    """What is left of one bound, for trio waits and for Playwright's timeouts alike."""

    def __init__(self, seconds: float) -> None:
        self.started = time.monotonic()
        self.at = self.started + seconds

    def left(self) -> float:
        left = self.at - time.monotonic()
        if left <= 0:
            raise AssertionError(f"past the deadline, {self.elapsed():.1f} s after the start")
        return left

    def left_ms(self) -> float:
        return self.left() * 1000

    def elapsed(self) -> float:
        return time.monotonic() - self.started


# The minute is the test's own bound: pytest's (60 s for the whole test) must not judge first.
@pytest.mark.timeout(SETUP_S + MINUTE + STOP_S)
async def test_a_newcomer_sees_the_menu_card_then_the_dashboards_overlay_and_group_in_a_minute(
    page: ShellPage, data_dir: Path
) -> None:
    deadline = Deadline(MINUTE)
    async with lineup_run(data_dir, within_s=deadline.left()) as (process, shell_url):

        def the_menu(p: Page) -> None:
            p.goto(shell_url, timeout=deadline.left_ms())
            menu = card(p).filter(has_text=MENU_PROMPT)
            dashboard = menu.locator('[data-action-id="dashboard"]')
            expect(dashboard).to_be_enabled(timeout=deadline.left_ms())
            expect(dashboard).to_contain_text("The Task Dashboard")
            expect(menu.get_by_test_id("interaction-action")).to_have_count(5)
            dashboard.click(timeout=deadline.left_ms())
            expect(menu.get_by_test_id("interaction-outcome")).to_have_text(
                "You chose: The Task Dashboard", timeout=deadline.left_ms()
            )

        await page.run(the_menu, deadline.left() + GRACE_S)

        def the_overlay_above_the_dashboard(p: Page) -> None:
            expect(p.get_by_test_id("task-dashboard")).to_be_visible(timeout=deadline.left_ms())
            expect(tabs(p)).to_have_text(["Chat", TASK_TITLE], timeout=deadline.left_ms())
            asked = card(p, "overlay")
            expect(asked.get_by_test_id("interaction-prompt")).to_contain_text(
                PROGRESS_PROMPT, timeout=deadline.left_ms()
            )
            expect(p.get_by_test_id("interaction-overlay")).to_be_visible()
            expect(asked.get_by_test_id("interaction-option")).to_have_count(3)

        await page.run(the_overlay_above_the_dashboard, deadline.left() + GRACE_S)

        def the_group_in_the_chat(p: Page) -> None:
            tabs(p).nth(0).click(timeout=deadline.left_ms())
            expect(p.get_by_test_id("chat")).to_be_visible(timeout=deadline.left_ms())
            expect(p.get_by_test_id("interaction-overlay")).to_be_hidden(timeout=deadline.left_ms())
            group = p.get_by_test_id("app-session-group")
            expect(group).to_have_attribute("data-waiting", "true", timeout=deadline.left_ms())
            expect(group.get_by_test_id("app-session-waiting")).to_be_visible()
            group.get_by_test_id("app-session-toggle").click(timeout=deadline.left_ms())
            expect(card(p, "group").get_by_test_id("interaction-prompt")).to_contain_text(
                PROGRESS_PROMPT, timeout=deadline.left_ms()
            )

        await page.run(the_group_in_the_chat, deadline.left() + GRACE_S)
        elapsed = deadline.elapsed()
        assert elapsed <= MINUTE, f"card, overlay and group took {elapsed:.1f} s from the start"
        await stopped(process, within_s=STOP_S)
    assert page.off_loopback() == [] and page.console_errors == []
