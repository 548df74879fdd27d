"""Standard interactions end to end: the Agent asks (an `AgentClient` on the embedded
AppServer), the user answers in real Chromium, the Agent gets its one result; an input's draft
kept by the real hostbridge across a reload; a question of an app's sub-session as the overlay
above it and from the IM's group; the Task Dashboard's confirm before closing; and a stopped
hostbridge shown disconnected. Browser waits are Playwright's auto-waiting `expect`; waits on
other processes run under `fail_after`, polling at most as the e2e tests do."""

from __future__ import annotations

import contextlib
import os
import signal
from collections import Counter
from pathlib import Path
from typing import Any, Final

import trio
from playwright.sync_api import Locator, Page, expect

from lineup.actors.kernel import ActorKind
from lineup.hostbridge.shell_protocol import HEARTBEAT_S
from lineup.tests.support.agent_view import FINALS, AgentView
from lineup.tests.support.browser import greeted_in_the_shell
from lineup.tests.support.runtime import CONVERSATION, Runtime
from lineup.tests.support.shell import connect_shell
from lineup.tests.support.tree import attach, audit_rows

from .conftest import ShellPage
from .test_task_dashboard_e2e import GREETING, WAIT_MS, WAIT_S, tabs

RESULT: Final = "lineup.v1.tool.result"
CHOICE: Final = {
    "title": "Lunch",
    "prompt": "What shall we eat?",
    "mode": "single-choice",
    "actions": [{"id": "soup", "label": "Soup"}, {"id": "salad", "label": "Salad"}],
}
CONFIRM: Final = {
    "title": "Deploy",
    "prompt": "Deploy now?",
    "approve_label": "Deploy it",
    "cancel_label": "Not yet",
}
INPUT: Final = {
    "title": "Name",
    "prompt": "Your name?",
    "fields": [{"id": "name", "label": "Name", "type": "text", "required": True}],
}


def card(p: Page, place: str = "timeline") -> Locator:
    return p.locator(f'[data-testid="interaction-card"][data-place="{place}"]')


async def started(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> tuple[Runtime, AgentView, str]:
    return await greeted_in_the_shell(
        nursery, data_dir, page, GREETING, wait_ms=WAIT_MS, chat_alone=True
    )


async def ask(
    agent: AgentView, revision: str, tool: str, arguments: dict[str, Any], call_id: str
) -> None:
    with trio.fail_after(WAIT_S):
        await agent.client.call_tool(CONVERSATION, tool, arguments, revision, call_id=call_id)


async def finals(agent: AgentView, call_id: str) -> list[dict[str, Any]]:
    await agent.settle()
    return agent.of_call(call_id, *FINALS)


async def test_the_agent_asks_the_user_answers_by_keyboard_and_a_double_click_answers_once(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime, agent, revision = await started(nursery, data_dir, page)
    await ask(agent, revision, "interaction.choice", CHOICE, "c-choice")

    def choose(p: Page) -> None:
        choice = card(p).filter(has_text="Lunch")
        expect(choice.get_by_test_id("interaction-option")).to_have_count(2, timeout=WAIT_MS)
        choice.locator('input[data-action-id="soup"]').focus()
        p.keyboard.press("ArrowDown")  # Salad
        p.keyboard.press("Tab")
        p.keyboard.press("Enter")
        expect(choice.get_by_test_id("interaction-outcome")).to_have_text(
            "You chose: Salad", timeout=WAIT_MS
        )

    await page.run(choose)
    result = await agent.terminal("c-choice")
    assert (result["type"], result["payload"]["result"]) == (RESULT, {"action_ids": ["salad"]})

    await ask(agent, revision, "interaction.confirm", CONFIRM, "c-confirm")

    def double_click(p: Page) -> None:
        confirm = card(p).filter(has_text="Deploy now?")
        confirm.get_by_test_id("interaction-approve").dblclick(timeout=WAIT_MS)
        expect(confirm.get_by_test_id("interaction-outcome")).to_have_text(
            "You chose: Deploy it", timeout=WAIT_MS
        )

    await page.run(double_click)
    confirmed = await finals(agent, "c-confirm")
    assert [(m["type"], m["payload"]["result"]) for m in confirmed] == [
        (RESULT, {"approved": True})
    ]
    assert len(await finals(agent, "c-choice")) == 1
    # The Shell sent one answer for the double click: the hostbridge audits each it forwards.
    reader = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "reader")
    rows = await audit_rows(
        reader,
        lambda rows: sum(r.event == "ui.interaction.answer" for r in rows) >= 2,
        peer="user",
    )
    answered = [r.subject_id for r in rows if r.event == "ui.interaction.answer"]
    assert Counter(answered) == Counter(["lu:interaction:c-choice", "lu:interaction:c-confirm"])
    assert page.off_loopback() == [] and page.console_errors == []


async def test_an_input_draft_survives_a_reload_and_its_answer_reaches_the_agent(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime, agent, revision = await started(nursery, data_dir, page)
    await ask(agent, revision, "interaction.input", INPUT, "c-input")

    def type_a_name(p: Page) -> None:
        field = card(p).get_by_test_id("interaction-field")
        expect(field).to_be_editable(timeout=WAIT_MS)
        field.focus()
        p.keyboard.type("Grace")

    await page.run(type_a_name)
    # The hostbridge has the draft once a Shell connecting now is greeted with it.
    with trio.fail_after(WAIT_S):
        while True:
            async with trio.open_nursery() as probe:
                shell = await connect_shell(probe, runtime.shell_url)
                with trio.move_on_after(HEARTBEAT_S * 2):
                    await shell.wait_until(lambda s: _draft_of(s.frames) == "Grace")
                found = _draft_of(shell.frames) == "Grace"
                probe.cancel_scope.cancel()
            if found:
                break

    def reload_and_send(p: Page) -> None:
        p.reload()
        field = card(p).get_by_test_id("interaction-field")
        expect(field).to_have_value("Grace", timeout=WAIT_MS)
        field.focus()
        p.keyboard.type(" Hopper")
        p.keyboard.press("Enter")
        expect(card(p).get_by_test_id("interaction-outcome")).to_have_text(
            "You answered: Name: Grace Hopper", timeout=WAIT_MS
        )

    await page.run(reload_and_send)
    result = await agent.terminal("c-input")
    assert result["payload"]["result"] == {"values": {"name": "Grace Hopper"}}


def _draft_of(frames: list[dict[str, Any]]) -> str | None:
    for frame in frames:
        if frame.get("type") == "shell.drafts":
            for values in frame["drafts"].values():
                return str(values.get("name"))
    return None


async def open_task(agent: AgentView, revision: str, call_id: str = "open-1") -> None:
    await ask(
        agent,
        revision,
        "task-dashboard.open",
        {"task_id": "t1", "title": "Quarterly report"},
        call_id,
    )


async def task_shown(agent: AgentView, revision: str, page: ShellPage) -> None:
    """`open_task`, then the Shell shows the Task Dashboard."""
    await open_task(agent, revision)
    await page.run(
        lambda p: expect(p.get_by_test_id("task-dashboard")).to_be_visible(timeout=WAIT_MS)
    )


async def test_a_question_in_the_apps_sub_session_overlays_it_and_is_answered_from_the_im(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    _runtime, agent, revision = await started(nursery, data_dir, page)
    await task_shown(agent, revision, page)
    context = {"app_session_id": "lu:app_session:task-dashboard:open-1"}
    await ask(
        agent, revision, "interaction.confirm", {**CONFIRM, "app_session_context": context}, "c-in"
    )

    def overlay_then_the_im(p: Page) -> None:
        expect(p.get_by_test_id("interaction-overlay")).to_be_visible(timeout=WAIT_MS)
        expect(card(p, "overlay").get_by_test_id("interaction-approve")).to_have_text("Deploy it")
        expect(tabs(p)).to_have_text(["Chat", "Quarterly report"], timeout=WAIT_MS)
        tabs(p).nth(0).click()
        expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)
        expect(p.get_by_test_id("interaction-overlay")).to_be_hidden()
        group = p.get_by_test_id("app-session-group")
        expect(group).to_have_attribute("data-waiting", "true", timeout=WAIT_MS)
        group.get_by_test_id("app-session-toggle").click()
        card(p, "group").get_by_test_id("interaction-approve").click()
        expect(card(p, "group").get_by_test_id("interaction-outcome")).to_have_text(
            "You chose: Deploy it", timeout=WAIT_MS
        )
        expect(group).to_have_attribute("data-waiting", "false", timeout=WAIT_MS)

    await page.run(overlay_then_the_im)
    answered = await finals(agent, "c-in")
    assert [(m["type"], m["payload"]["result"]) for m in answered] == [(RESULT, {"approved": True})]
    await page.run(lambda p: tabs(p).nth(1).click())
    await page.run(lambda p: expect(p.get_by_test_id("interaction-overlay")).to_be_hidden())


async def test_the_task_dashboard_asks_before_closing_a_task_not_done_and_closes_when_approved(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    _runtime, agent, revision = await started(nursery, data_dir, page)
    await open_task(agent, revision)

    def keep_it_open_then_close(p: Page) -> None:
        expect(p.get_by_test_id("task-dashboard")).to_be_visible(timeout=WAIT_MS)
        p.get_by_test_id("task-close").click()
        asked = card(p, "app")
        expect(asked.get_by_test_id("interaction-cancel")).to_have_text(
            "Keep it open", timeout=WAIT_MS
        )
        expect(p.get_by_test_id("task-close")).to_be_visible()  # no focus change, no overlay
        asked.get_by_test_id("interaction-cancel").click()
        expect(asked.get_by_test_id("interaction-outcome")).to_be_visible(timeout=WAIT_MS)
        expect(p.get_by_test_id("task-dashboard")).to_be_visible()
        p.get_by_test_id("task-close").click()
        again = card(p, "app").filter(has=p.get_by_test_id("interaction-approve"))
        again.get_by_test_id("interaction-approve").click(timeout=WAIT_MS)
        expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)
        expect(p.get_by_test_id("task-dashboard")).to_have_count(0, timeout=WAIT_MS)
        expect(tabs(p)).to_have_count(1, timeout=WAIT_MS)

    await page.run(keep_it_open_then_close)
    closed = await finals(agent, "open-1")
    assert [(m["type"], m["payload"]["result"]) for m in closed] == [
        (RESULT, {"status": "cancelled"})
    ]


async def test_a_stopped_hostbridge_is_shown_disconnected_within_five_seconds(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime, _agent, _revision = await started(nursery, data_dir, page)
    pid = runtime.supervisor.children["hostbridge"].pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        await page.run(
            lambda p: expect(p.get_by_test_id("runtime-state")).to_have_attribute(
                "data-state", "disconnected", timeout=5000
            )
        )
    finally:
        with contextlib.suppress(ProcessLookupError):  # the supervisor may have replaced it
            os.kill(pid, signal.SIGCONT)
    await page.run(
        lambda p: expect(p.get_by_test_id("runtime-state")).to_have_attribute(
            "data-state", "online", timeout=WAIT_MS
        )
    )
