"""Answers to the Agent's questions through the real runtime, in real Chromium (issue 12): a
question of the Task Dashboard's sub-session answered in the overlay after switching to the
chat and back ("the user can answer from the IM or back in the app, and only once"), and a
request that names no labels, shown and answered under the plain defaults.

Browser waits are Playwright's auto-waiting `expect`; the Agent's side is read from the
AppServer under `fail_after`, as in test_interactions_e2e."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Page, expect

from lineup.actors.kernel import ActorKind
from lineup.tests.support.tree import attach, audit_rows

from .conftest import ShellPage
from .test_interactions_e2e import CONFIRM, RESULT, ask, card, finals, started, task_shown
from .test_interactions_keyboard_render import assert_focus_ring, tab_to
from .test_task_dashboard_e2e import WAIT_MS, tabs

SESSION: Final = "lu:app_session:task-dashboard:open-1"  # the sub-session of `open_task`


async def test_a_question_in_the_apps_sub_session_is_answered_once_in_the_overlay_after_switching(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime, agent, revision = await started(nursery, data_dir, page)
    await task_shown(agent, revision, page)
    context = {"app_session_id": SESSION}
    await ask(
        agent, revision, "interaction.confirm", {**CONFIRM, "app_session_context": context}, "c-in"
    )

    def away_and_back(p: Page) -> None:
        overlay = p.get_by_test_id("interaction-overlay")
        expect(card(p, "overlay").get_by_test_id("interaction-approve")).to_have_text(
            "Deploy it", timeout=WAIT_MS
        )
        expect(tabs(p)).to_have_text(["Chat", "Quarterly report"], timeout=WAIT_MS)
        tabs(p).nth(0).click()
        expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)
        expect(overlay).to_be_hidden()
        group = p.get_by_test_id("app-session-group")
        expect(group).to_have_attribute("data-waiting", "true", timeout=WAIT_MS)
        tabs(p).nth(1).click()
        expect(p.get_by_test_id("task-dashboard")).to_be_visible(timeout=WAIT_MS)
        # Back in front, the question is above the app again, unfolded.
        expect(overlay).to_be_visible(timeout=WAIT_MS)
        expect(overlay).to_have_attribute("data-folded", "false")
        approve = card(p, "overlay").get_by_test_id("interaction-approve")
        tab_to(p, approve)
        assert_focus_ring(approve)
        approve.dblclick()  # a double click answers once
        expect(overlay).to_be_hidden(timeout=WAIT_MS)
        expect(p.get_by_test_id("task-dashboard")).to_be_visible()

    await page.run(away_and_back)
    result = await agent.terminal("c-in")
    assert (result["type"], result["payload"]["result"]) == (RESULT, {"approved": True})
    answered = await finals(agent, "c-in")
    assert [(m["type"], m["payload"]["result"]) for m in answered] == [(RESULT, {"approved": True})]

    def answered_in_the_im_too(p: Page) -> None:
        tabs(p).nth(0).click()
        group = p.get_by_test_id("app-session-group")
        expect(group).to_have_attribute("data-waiting", "false", timeout=WAIT_MS)
        group.get_by_test_id("app-session-toggle").click()
        asked = card(p, "group")
        expect(asked.get_by_test_id("interaction-outcome")).to_have_text(
            "You chose: Deploy it", timeout=WAIT_MS
        )
        expect(asked.locator("button")).to_have_count(0)  # nothing left to answer here
        expect(asked).to_have_attribute("data-outcome", "answered")

    await page.run(answered_in_the_im_too)
    # The Shell sent one answer: the hostbridge audits each it forwards.
    reader = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "reader")
    rows = await audit_rows(
        reader, lambda rows: any(r.event == "ui.interaction.answer" for r in rows), peer="user"
    )
    assert [r.subject_id for r in rows if r.event == "ui.interaction.answer"] == [
        "lu:interaction:c-in"
    ]
    assert page.off_loopback() == [] and page.console_errors == []


BARE_CONFIRM: Final = {"title": "Proceed", "prompt": "Shall I go on?"}
BARE_INPUT: Final = {
    "title": "A name",
    "prompt": "What is it called?",
    "fields": [{"id": "name", "label": "Name", "type": "text"}],
}


async def test_a_request_naming_no_labels_is_shown_and_answered_under_the_plain_defaults(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    _runtime, agent, revision = await started(nursery, data_dir, page)
    await ask(agent, revision, "interaction.confirm", BARE_CONFIRM, "c-bare")
    await ask(agent, revision, "interaction.input", BARE_INPUT, "i-bare")

    def defaults_by_keyboard(p: Page) -> None:
        confirm = card(p).filter(has_text="Shall I go on?")
        form = card(p).filter(has_text="What is it called?")
        expect(confirm.locator("button")).to_have_text(["Approve", "Cancel"], timeout=WAIT_MS)
        expect(form.locator("button")).to_have_text(["Submit", "Cancel"], timeout=WAIT_MS)
        tab_to(p, confirm.get_by_test_id("interaction-approve"))
        p.keyboard.press("Enter")
        expect(confirm.get_by_test_id("interaction-outcome")).to_have_text(
            "You chose: Approve", timeout=WAIT_MS
        )
        tab_to(p, form.get_by_test_id("interaction-cancel"))
        p.keyboard.press("Enter")
        expect(form).to_have_attribute("data-outcome", "cancelled", timeout=WAIT_MS)

    await page.run(defaults_by_keyboard)
    confirmed = await agent.terminal("c-bare")
    assert (confirmed["type"], confirmed["payload"]["result"]) == (RESULT, {"approved": True})
    cancelled = await agent.terminal("i-bare")
    assert cancelled["type"] == "lineup.v1.tool.error", cancelled
    assert cancelled["payload"]["code"] == "cancelled_by_user"
