"""The Agent's short result in an app sub-session, end to end in real Chromium (seed 000 §7.3:
the main IM's folded group records the Agent's questions, the user's answers and the Agent's
short results, never the app's own operations): the Agent (an `AgentClient` on the embedded
AppServer) says a text naming the Task Dashboard's open sub-session; the chat shows it inside
that group, not in the main timeline, while the dashboard's own question (`sdk.ui.request`,
asked before closing a task that is not done) stays in the app's container and never enters
the group. Once the dashboard is closed, the ended group keeps the result, and a text naming
it is refused: nothing new appears. Browser waits are Playwright's `expect`; waits on the
AppServer run under `fail_after`."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Page, expect

from lineup.tests.support.runtime import CONVERSATION

from .conftest import ShellPage
from .test_interactions_e2e import card, started, task_shown
from .test_task_dashboard_e2e import GREETING, WAIT_MS, WAIT_S, tabs

SESSION: Final = "lu:app_session:task-dashboard:open-1"


def timeline_texts(p: Page) -> list[str]:
    return p.get_by_test_id("timeline").get_by_test_id("message-body").all_inner_texts()


async def test_a_short_result_shows_in_its_group_and_the_apps_own_question_never_does(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    _runtime, agent, revision = await started(nursery, data_dir, page)
    await task_shown(agent, revision, page)
    with trio.fail_after(WAIT_S):
        await agent.client.say(
            CONVERSATION, "The task is at **60 %**.", "r-1", app_session_context=SESSION
        )
        await agent.client.say(CONVERSATION, "Back in the chat.", "plain-1")

    def the_app_asks_then_the_chat_shows_the_group(p: Page) -> None:
        # The dashboard's own question, in its own container.
        p.get_by_test_id("task-close").click(timeout=WAIT_MS)
        expect(card(p, "app").get_by_test_id("interaction-approve")).to_be_visible(timeout=WAIT_MS)
        tabs(p).nth(0).click()
        expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)
        bodies = p.get_by_test_id("timeline").get_by_test_id("message-body")
        expect(bodies).to_have_text([GREETING, "Back in the chat."], timeout=WAIT_MS)
        group = p.get_by_test_id("app-session-group")
        expect(group).to_have_attribute("data-app-session-id", SESSION, timeout=WAIT_MS)
        expect(group.get_by_test_id("app-session-count")).to_have_text(
            " · 1 result", timeout=WAIT_MS
        )
        expect(group).to_have_attribute("data-waiting", "false")  # the app's question is its own
        group.get_by_test_id("app-session-toggle").click()
        text = group.get_by_test_id("app-session-text-body")
        expect(text).to_have_text("The task is at 60 %.")
        expect(text.locator("strong")).to_have_text("60 %")
        expect(card(p, "group")).to_have_count(0)
        expect(card(p, "timeline")).to_have_count(0)
        assert "The task is at 60 %." not in timeline_texts(p)

    await page.run(the_app_asks_then_the_chat_shows_the_group)

    def close_the_dashboard(p: Page) -> None:
        tabs(p).nth(1).click()
        card(p, "app").get_by_test_id("interaction-approve").click(timeout=WAIT_MS)
        expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)
        group = p.get_by_test_id("app-session-group")
        expect(group).to_have_attribute("data-state", "closed", timeout=WAIT_MS)

    await page.run(close_the_dashboard)
    with trio.fail_after(WAIT_S):
        await agent.pull(
            "lineup.v1.app_session.closed", lambda m: m["payload"]["app_session_id"] == SESSION
        )
        await agent.client.say(CONVERSATION, "Too late.", "late-1", app_session_context=SESSION)
        await agent.client.say(CONVERSATION, "After the close.", "plain-2")

    def the_ended_group_keeps_its_result_and_takes_no_new_one(p: Page) -> None:
        bodies = p.get_by_test_id("timeline").get_by_test_id("message-body")
        expect(bodies).to_have_text(
            [GREETING, "Back in the chat.", "After the close."], timeout=WAIT_MS
        )
        group = p.get_by_test_id("app-session-group")
        expect(group.get_by_test_id("app-session-count")).to_have_text(" · 1 result")
        if group.get_by_test_id("app-session-toggle").get_attribute("aria-expanded") != "true":
            group.get_by_test_id("app-session-toggle").click()
        expect(group.get_by_test_id("app-session-text-body")).to_have_text(["The task is at 60 %."])
        expect(p.get_by_text("Too late.")).to_have_count(0)
        assert p.evaluate("window.__cspViolations") == []

    await page.run(the_ended_group_keeps_its_result_and_takes_no_new_one)
    assert page.off_loopback() == [] and page.console_errors == []
