"""The Pomodoro in real Chromium against a real runtime (issue 29, item 3): a focus period the
Agent starts is shown in front with the time left, its end and its state; the interruption
(the Agent's `pomodoro.interrupt`) is shown as soon as the runtime has ended the period. What
the view shows is the app's display state; the period's end is the runtime's."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Page, expect

from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.runtime import CONVERSATION, agent_client, start_runtime

from .conftest import ShellPage

WAIT_MS: Final = 20_000  # a real runtime: processes, an HTTP AppServer
PROGRESS: Final = "lineup.v1.tool.progress"


async def test_the_focus_period_shows_its_time_left_and_then_its_interruption(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT_MS / 1000)
    revision = await agent.revision_with("pomodoro.focus")
    await agent.client.call_tool(
        CONVERSATION, "pomodoro.focus", {"minutes": 25, "label": "Write the report"}, revision,
        call_id="focus-1",
    )  # fmt: skip
    started = await agent.pull(PROGRESS, lambda m: m["payload"]["call_id"] == "focus-1")
    ends_at = started["payload"]["progress"]["ends_at"]
    end = datetime.fromtimestamp(ends_at, UTC).strftime("%H:%M:%S UTC")

    def focusing(p: Page) -> None:
        p.goto(runtime.shell_url)
        tab = p.get_by_test_id("app-switcher").get_by_test_id("app-tab").nth(1)
        expect(tab).to_have_attribute("aria-current", "page", timeout=WAIT_MS)
        expect(p.get_by_test_id("card-view-title")).to_have_text("Write the report")
        expect(p.get_by_test_id("card-view-text")).to_have_text("Focusing", timeout=WAIT_MS)
        countdown = p.get_by_test_id("card-view-countdown")
        expect(countdown).to_have_text(re.compile(r"^2[45] min [0-9]{1,2} s left$"))
        expect(countdown).to_have_attribute("role", "timer")
        values = p.get_by_test_id("card-view-value")
        expect(values).to_have_text(["25 min", end, "running"])
        # The time left is redrawn by the Shell, the app rendering nothing meanwhile: it goes
        # down on its own, second by second, towards the runtime's `ends_at`.
        first = int(countdown.get_attribute("data-left") or "0")
        assert abs(first - (ends_at - time.time())) < 5
        p.wait_for_function(
            "(first) => Number(document.querySelector('[data-testid=card-view-countdown]')"
            ".getAttribute('data-left')) <= first - 2",
            arg=first,
            timeout=WAIT_MS,
        )

    await page.run(focusing)

    await agent.client.call_tool(CONVERSATION, "pomodoro.interrupt", {}, revision, call_id="stop-1")
    assert (await agent.terminal("focus-1"))["payload"]["code"] == "cancelled_by_user"

    def interrupted(p: Page) -> None:
        expect(p.get_by_test_id("card-view-text")).to_have_text("Interrupted", timeout=WAIT_MS)
        expect(p.get_by_test_id("card-view-value").nth(2)).to_have_text("interrupted")
        expect(p.get_by_test_id("card-view-countdown")).to_be_hidden()

    await page.run(interrupted)
    assert page.console_errors == []


async def test_the_user_interrupts_the_period_from_the_cards_button_by_keyboard(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    # The user's own interruption (seed 004 §6.3): the card's Interrupt button, reached by Tab
    # and pressed with Enter, has the app ask the runtime, which ends the call
    # `cancelled_by_user` itself; the button is gone once the period is over.
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT_MS / 1000)
    revision = await agent.revision_with("pomodoro.focus")
    await agent.client.call_tool(
        CONVERSATION, "pomodoro.focus", {"minutes": 25}, revision, call_id="focus-2"
    )
    await agent.pull(PROGRESS, lambda m: m["payload"]["call_id"] == "focus-2")

    def press(p: Page) -> None:
        p.goto(runtime.shell_url)
        button = p.get_by_test_id("card-view-action")
        expect(button).to_have_text("Interrupt", timeout=WAIT_MS)
        p.get_by_test_id("card-view-title").focus()
        for _ in range(10):  # Tab until the button has focus: it is in the tab order
            if button.evaluate("(b) => b === document.activeElement"):
                break
            p.keyboard.press("Tab")
        expect(button).to_be_focused()
        p.keyboard.press("Enter")

    await page.run(press)
    assert (await agent.terminal("focus-2"))["payload"]["code"] == "cancelled_by_user"

    def over(p: Page) -> None:
        expect(p.get_by_test_id("card-view-text")).to_have_text("Interrupted", timeout=WAIT_MS)
        expect(p.get_by_test_id("card-view-action")).to_have_count(0)

    await page.run(over)
    assert page.console_errors == []
