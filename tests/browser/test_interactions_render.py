"""Standard interactions in the Shell, in real Chromium against the fake hostbridge (contract
§4): the four cards used by keyboard only, one answer per card whatever the clicks, results
and expiry shown, the overlay above the app in front, folded to the IM's "waiting" group when
switching away, ended sub-sessions read-only, an app's own card in its container, and a reload
keeping a pending card with its draft."""

from __future__ import annotations

import time
from typing import Any

import trio
from playwright.sync_api import Locator, Page, expect

from lineup.tests.support.browser import open_shell

from ._fake_hostbridge import FakeHostbridge, ShellConnection
from .conftest import ShellPage
from .test_shell_render import CHAT, chat_view, message

TASK = "task-dashboard:call-1"
SESSION = f"lu:app_session:{TASK}"

Frame = dict[str, Any]

CHOICE = {
    "kind": "choice",
    "title": "What next?",
    "prompt": "Pick one <b>option</b>",
    "mode": "single-choice",
    "actions": [
        {"id": "a", "label": "Plan the week"},
        {"id": "b", "label": "Write the report", "description": "The quarterly one"},
    ],
}
CONFIRM = {
    "kind": "confirm",
    "title": "Close the task?",
    "prompt": "It is not done yet.",
    "approve_label": "Yes, close it",
    "cancel_label": "Keep it open",
}
INPUT = {
    "kind": "input",
    "title": "About you",
    "prompt": "Tell me two things.",
    "fields": [
        {"id": "name", "label": "Name", "type": "text", "required": True, "max_length": 20},
        {"id": "count", "label": "How many", "type": "number", "minimum": 1, "maximum": 10},
        {"id": "notes", "label": "Notes", "type": "textarea", "placeholder": "Anything else"},
    ],
    "submit_label": "Send it",
    "cancel_label": "Not now",
}
NOTICE = {
    "kind": "notice",
    "title": "Heads up",
    "message": "The report is due <script>x()</script> Friday.",
    "acknowledge_label": "Got it",
}


def interaction(
    interaction_id: str, request: Frame, state: str = "presented", **changes: Any
) -> Frame:
    now = time.time()
    return {
        "type": "hostbridge.interaction",
        "interaction_id": interaction_id,
        "kind": request["kind"],
        "state": state,
        "request": request,
        "result": None,
        "terminal_code": None,
        "source": "agent_tool",
        "owner_scope": "agent",
        "instance_id": None,
        "app_session_id": None,
        "call_id": f"call-{interaction_id}",
        "created_at": now,
        "expires_at": None if request["kind"] == "notice" else now + 900,
        **changes,
    }


def interactions(*views: Frame) -> Frame:
    return {"type": "shell.interactions", "interactions": list(views)}


def session(state: str = "open") -> Frame:
    return {
        "type": "shell.app_sessions",
        "sessions": [
            {
                "type": "hostbridge.app_session",
                "app_session_id": SESSION,
                "app_scope": "task-dashboard",
                "instance_id": TASK,
                "state": state,
                "opened_at": time.time() - 60,
                "closed_at": None,
                "previous_app_session_id": None,
            }
        ],
    }


def apps(foreground: str, *, task: bool = True) -> Frame:
    instances = [
        {
            "instance_id": CHAT,
            "app_scope": "chat",
            "title": "Chat",
            "state": "foreground" if foreground == CHAT else "background",
        }
    ]
    if task:
        instances.append(
            {
                "instance_id": TASK,
                "app_scope": "task-dashboard",
                "title": "Task Dashboard",
                "state": "foreground" if foreground == TASK else "background",
            }
        )
    return {"type": "shell.apps", "foreground": foreground, "instances": instances}


def task_view() -> Frame:
    return {
        "type": "shell.view",
        "app_scope": "task-dashboard",
        "instance_id": TASK,
        "view": {
            "kind": "task.dashboard",
            "label": "Quarterly report",
            "task": {"task_id": "t1", "title": "Quarterly report", "progress": 60},
            "actions": ["finish", "close"],
        },
    }


def card(p: Page, interaction_id: str, place: str = "timeline") -> Locator:
    return p.locator(
        f'[data-testid="interaction-card"][data-interaction-id="{interaction_id}"]'
        f'[data-place="{place}"]'
    )


async def answers(connection: ShellConnection, page_sync: Any) -> list[Frame]:
    """Every `interaction.answer` the Shell sent until now: a notice round trip first, so
    every frame the Shell sent before it has arrived."""
    await connection.send({"type": "shell.notice", "level": "info", "text": "sync"})
    await page_sync(lambda p: expect(p.get_by_text("sync")).to_be_visible())
    return [f for f in connection.pending() if f.get("type") == "interaction.answer"]


def four() -> Frame:
    """One card of each kind, created now (a notice toasts only while it is recent: a frame
    built when the module was imported would be minutes old later in a long run)."""
    return interactions(
        interaction("n1", NOTICE, "completed", result={"acknowledged": False}),
        interaction("c1", CHOICE),
        interaction("k1", CONFIRM),
        interaction("i1", INPUT),
    )


async def test_each_card_has_its_requests_own_labels_and_a_notice_is_read_only_with_a_toast(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    hello = chat_view(message("m1", "agent", "received", "Hello"))
    connection = await open_shell(page, hostbridge, apps(CHAT, task=False), hello, four())

    def notice_and_labels(p: Page) -> None:
        notice = card(p, "n1")
        expect(notice.get_by_test_id("interaction-title")).to_have_text("Heads up")
        expect(notice.get_by_test_id("interaction-prompt")).to_have_text(NOTICE["message"])
        expect(notice.locator("button")).to_have_count(0)  # read-only
        expect(notice.locator("script")).to_have_count(0)
        expect(p.get_by_test_id("toast")).to_contain_text("Heads up")  # and never alone
        expect(p.get_by_test_id("toast-dismiss")).to_have_text("Got it")
        expect(card(p, "c1").get_by_test_id("interaction-prompt")).to_have_text(
            "Pick one <b>option</b>"
        )
        expect(card(p, "k1").get_by_test_id("interaction-approve")).to_have_text("Yes, close it")
        expect(card(p, "k1").get_by_test_id("interaction-cancel")).to_have_text("Keep it open")
        expect(card(p, "i1").get_by_test_id("interaction-submit")).to_have_text("Send it")
        expect(card(p, "i1").get_by_test_id("interaction-cancel")).to_have_text("Not now")
        expect(card(p, "i1").get_by_test_id("interaction-hint")).to_have_text(
            ["Up to 20 characters", "A number from 1 to 10"]
        )

    await page.run(notice_and_labels)
    # A notice not yet answered by the runtime is read-only too: nothing to answer on its card.
    await connection.send(interactions(interaction("n2", {**NOTICE, "title": "Second"})))

    def pending_notice(p: Page) -> None:
        expect(card(p, "n2").get_by_test_id("interaction-title")).to_have_text("Second")
        expect(card(p, "n2").locator("button, input")).to_have_count(0)
        expect(p.get_by_test_id("toast")).to_have_count(2)

    await page.run(pending_notice)


async def test_the_choice_confirm_and_input_cards_are_answered_by_keyboard_alone(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, apps(CHAT, task=False), chat_view(), four())

    def choose_by_keyboard(p: Page) -> None:
        choice = card(p, "c1")
        choice.locator('input[data-action-id="a"]').focus()
        p.keyboard.press("Space")  # selects the focused radio
        p.keyboard.press("ArrowDown")  # moves to, and selects, the next one
        p.keyboard.press("Tab")
        expect(choice.get_by_test_id("interaction-submit")).to_be_focused()
        p.keyboard.press("Enter")

    await page.run(choose_by_keyboard)
    frame = await connection.expect("interaction.answer")
    assert frame == {
        "type": "interaction.answer",
        "interaction_id": "c1",
        "answer": {"action_ids": ["b"]},
    }

    def decline_by_keyboard(p: Page) -> None:
        confirm = card(p, "k1")
        confirm.get_by_test_id("interaction-approve").focus()
        p.keyboard.press("Tab")
        expect(confirm.get_by_test_id("interaction-cancel")).to_be_focused()
        p.keyboard.press("Enter")

    await page.run(decline_by_keyboard)
    frame = await connection.expect("interaction.answer")
    assert frame["interaction_id"] == "k1" and frame["answer"] == {"approved": False}

    def fill_by_keyboard(p: Page) -> None:
        form = card(p, "i1")
        fields = form.get_by_test_id("interaction-field")
        fields.nth(0).focus()
        p.keyboard.type("Ada")
        p.keyboard.press("Tab")
        expect(fields.nth(1)).to_be_focused()
        p.keyboard.type("42")
        p.keyboard.press("Enter")  # out of bounds: said here, nothing sent
        expect(form.get_by_test_id("interaction-field-error").nth(1)).to_have_text("At most 10.")
        expect(fields.nth(1)).to_be_focused()
        p.keyboard.press("Backspace")
        p.keyboard.press("Backspace")
        p.keyboard.type("7")
        p.keyboard.press("Enter")

    await page.run(fill_by_keyboard)
    frame = await _next_answer(connection)
    assert frame["interaction_id"] == "i1"
    assert frame["answer"] == {"values": {"name": "Ada", "count": 7}}


async def _next_answer(connection: ShellConnection) -> Frame:
    """The next `interaction.answer`, past the drafts the Shell saves while typing."""
    while True:
        frame = await connection.receive()
        if frame.get("type") == "interaction.answer":
            return frame
        assert frame.get("type") == "interaction.draft", frame


async def test_a_double_click_answers_once_and_the_card_then_shows_its_result(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    pending = interaction("k1", CONFIRM)
    connection = await open_shell(
        page, hostbridge, apps(CHAT, task=False), chat_view(), interactions(pending)
    )

    def double_click(p: Page) -> None:
        card(p, "k1").get_by_test_id("interaction-approve").dblclick()
        expect(card(p, "k1").get_by_test_id("interaction-sending")).to_have_text("Sending…")
        expect(card(p, "k1").get_by_test_id("interaction-approve")).to_be_disabled()

    await page.run(double_click)
    sent = await answers(connection, page.run)
    assert sent == [
        {"type": "interaction.answer", "interaction_id": "k1", "answer": {"approved": True}}
    ]
    await connection.send(
        interactions({**pending, "state": "submitted", "result": {"approved": True}})
    )
    await page.run(
        lambda p: expect(card(p, "k1").get_by_test_id("interaction-outcome")).to_have_text(
            "You chose: Yes, close it"
        )
    )
    await connection.send(
        interactions({**pending, "state": "completed", "result": {"approved": True}})
    )
    await page.run(lambda p: expect(card(p, "k1").locator("button")).to_have_count(0))


async def test_expired_and_dismissed_cards_say_so_and_a_card_past_its_expiry_shows_expired(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    soon = interaction("s1", CONFIRM, expires_at=time.time() + 1.0)
    connection = await open_shell(
        page,
        hostbridge,
        apps(CHAT, task=False),
        chat_view(),
        interactions(interaction("c1", CHOICE), interaction("k1", CONFIRM), soon),
    )
    await connection.send(
        interactions(
            interaction("c1", CHOICE, "expired", terminal_code="interaction_expired"),
            interaction("k1", CONFIRM, "cancelled", terminal_code="interaction_dismissed"),
        )
    )

    def check(p: Page) -> None:
        expect(card(p, "c1")).to_have_attribute("data-outcome", "expired")
        expect(card(p, "c1").get_by_test_id("interaction-outcome")).to_have_text("Expired")
        expect(card(p, "k1").get_by_test_id("interaction-outcome")).to_have_text("Dismissed")
        expect(card(p, "c1").locator("input, button")).to_have_count(0)
        # No frame said so: its time passed, and the Shell stops offering an answer.
        expect(card(p, "s1").get_by_test_id("interaction-outcome")).to_have_text("Expired")
        expect(card(p, "s1").locator("button")).to_have_count(0)

    await page.run(check)
    # A late view of a final interaction, older than it, never reopens the card.
    await connection.send(interactions(interaction("c1", CHOICE)))
    await answers(connection, page.run)  # every frame before it was read
    await page.run(lambda p: expect(card(p, "c1")).to_have_attribute("data-outcome", "expired"))


async def test_the_overlay_shows_above_the_app_folds_when_switching_and_the_im_answers_it(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    asked = interaction("k1", CONFIRM, app_session_id=SESSION)
    connection = await open_shell(
        page,
        hostbridge,
        apps(TASK),
        chat_view(),
        task_view(),
        session(),
        interactions(asked),
    )

    def overlay_above_the_dashboard(p: Page) -> None:
        overlay = p.get_by_test_id("interaction-overlay")
        expect(overlay).to_be_visible()
        expect(p.get_by_test_id("task-dashboard")).to_be_visible()
        expect(card(p, "k1", "overlay").get_by_test_id("interaction-approve")).to_be_visible()
        # Escape folds it to a bar, which unfolds it again.
        card(p, "k1", "overlay").get_by_test_id("interaction-cancel").focus()
        p.keyboard.press("Escape")
        expect(p.get_by_test_id("overlay-bar")).to_be_visible()
        expect(p.get_by_test_id("overlay-show")).to_be_focused()
        expect(card(p, "k1", "overlay")).to_be_hidden()
        p.keyboard.press("Enter")
        expect(card(p, "k1", "overlay")).to_be_visible()
        # The task's label is its tab's.
        expect(p.get_by_test_id("app-tab")).to_have_text(["Chat", "Quarterly report"])

    await page.run(overlay_above_the_dashboard)
    await connection.send(apps(CHAT))

    def folded_into_the_waiting_group(p: Page) -> None:
        expect(p.get_by_test_id("interaction-overlay")).to_be_hidden()
        group = p.get_by_test_id("app-session-group")
        expect(group).to_have_attribute("data-waiting", "true")
        expect(group.get_by_test_id("app-session-waiting")).to_have_text("waiting for your answer")
        expect(group.get_by_test_id("app-session-title")).to_have_text("Quarterly report")
        expect(card(p, "k1", "group")).to_be_hidden()  # folded
        group.get_by_test_id("app-session-toggle").focus()
        p.keyboard.press("Enter")
        expect(group.get_by_test_id("app-session-toggle")).to_have_attribute(
            "aria-expanded", "true"
        )
        approve = card(p, "k1", "group").get_by_test_id("interaction-approve")
        approve.focus()
        p.keyboard.press("Enter")
        expect(card(p, "k1", "group").get_by_test_id("interaction-sending")).to_be_visible()

    await page.run(folded_into_the_waiting_group)
    frame = await connection.expect("interaction.answer")
    assert frame == {
        "type": "interaction.answer",
        "interaction_id": "k1",
        "answer": {"approved": True},
    }
    await connection.send(
        interactions({**asked, "state": "submitted", "result": {"approved": True}})
    )

    def answered(p: Page) -> None:
        group = p.get_by_test_id("app-session-group")
        expect(group).to_have_attribute("data-waiting", "false")
        expect(card(p, "k1", "group").get_by_test_id("interaction-outcome")).to_have_text(
            "You chose: Yes, close it"
        )

    await page.run(answered)
    await connection.send(apps(TASK))
    await page.run(lambda p: expect(p.get_by_test_id("interaction-overlay")).to_be_hidden())
    assert await answers(connection, page.run) == []


async def test_the_overlay_answers_in_the_app_and_only_once(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    asked = interaction("k1", CONFIRM, app_session_id=SESSION)
    connection = await open_shell(
        page, hostbridge, apps(TASK), chat_view(), task_view(), session(), interactions(asked)
    )
    await page.run(
        lambda p: card(p, "k1", "overlay").get_by_test_id("interaction-cancel").dblclick()
    )
    sent = await answers(connection, page.run)
    assert [f["answer"] for f in sent] == [{"approved": False}]


async def test_an_ended_sub_session_unfolds_read_only_and_its_open_question_stays_in_the_im(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    done = interaction(
        "k1", CONFIRM, "completed", app_session_id=SESSION, result={"approved": True}
    )
    still = interaction("i1", INPUT, app_session_id=SESSION)
    await open_shell(
        page,
        hostbridge,
        apps(CHAT, task=False),
        chat_view(),
        session("closed"),
        interactions(done, still),
    )

    def check(p: Page) -> None:
        group = p.get_by_test_id("app-session-group")
        expect(group).to_have_attribute("data-state", "closed")
        expect(group).to_have_attribute("data-waiting", "false")
        group.get_by_test_id("app-session-toggle").focus()
        p.keyboard.press("Enter")
        expect(group.get_by_test_id("app-session-note")).to_contain_text("read-only")
        expect(card(p, "k1", "group").get_by_test_id("interaction-outcome")).to_have_text(
            "You chose: Yes, close it"
        )
        # Nothing in it answers anything: its only other button continues in a new instance.
        expect(
            group.locator("button:not(.app-session-toggle, .app-session-continue), input")
        ).to_have_count(0)
        expect(card(p, "i1", "group")).to_have_count(0)
        expect(card(p, "i1").get_by_test_id("interaction-submit")).to_be_enabled()

    await page.run(check)


async def test_continue_on_an_ended_sub_session_is_asked_once_by_keyboard(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(
        page, hostbridge, apps(CHAT, task=False), chat_view(), session("closed")
    )

    def continue_twice(p: Page) -> None:
        group = p.get_by_test_id("app-session-group")
        expect(group.get_by_test_id("app-session-continue")).to_be_hidden()  # folded
        group.get_by_test_id("app-session-toggle").focus()
        p.keyboard.press("Enter")
        button = group.get_by_test_id("app-session-continue")
        expect(button).to_be_visible()
        p.keyboard.press("Tab")
        expect(button).to_be_focused()
        p.keyboard.press("Enter")
        p.keyboard.press("Enter")
        expect(button).to_be_disabled()

    await page.run(continue_twice)
    frame = await connection.expect("app_session.continue")
    assert frame == {"type": "app_session.continue", "app_session_id": SESSION}
    await connection.send({"type": "shell.notice", "level": "info", "text": "sync"})
    await page.run(lambda p: expect(p.get_by_text("sync")).to_be_visible())
    assert [f for f in connection.pending() if f.get("type") == "app_session.continue"] == []


async def test_an_open_sub_session_offers_no_continue(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    await open_shell(page, hostbridge, apps(CHAT), chat_view(), task_view(), session("open"))

    def check(p: Page) -> None:
        group = p.get_by_test_id("app-session-group")
        group.get_by_test_id("app-session-toggle").click()
        expect(group.get_by_test_id("app-session-body")).to_be_visible()
        expect(group.get_by_test_id("app-session-continue")).to_be_hidden()

    await page.run(check)


async def test_an_apps_own_question_shows_in_its_container_without_moving_focus(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, apps(TASK), chat_view(), task_view())

    def focus_the_dashboard(p: Page) -> None:
        p.get_by_test_id("task-finish").focus()
        expect(p.get_by_test_id("task-finish")).to_be_focused()

    await page.run(focus_the_dashboard)
    own = interaction(
        "m1", CONFIRM, source="miniapp", owner_scope="task-dashboard", instance_id=TASK
    )
    await connection.send(interactions(own))

    def check(p: Page) -> None:
        expect(card(p, "m1", "app")).to_be_visible()
        expect(p.get_by_test_id("app-interactions")).to_be_visible()
        expect(p.get_by_test_id("task-finish")).to_be_focused()
        expect(p.get_by_test_id("interaction-overlay")).to_be_hidden()
        expect(card(p, "m1", "timeline")).to_have_count(0)

    await page.run(check)
    assert [f for f in connection.pending() if f.get("type") == "ui.intent"] == []


async def test_an_apps_own_question_asked_while_it_is_behind_marks_its_tab_as_waiting(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, apps(CHAT), chat_view(), task_view())
    own = interaction(
        "m1", CONFIRM, source="miniapp", owner_scope="task-dashboard", instance_id=TASK
    )
    await connection.send(interactions(own))

    def waiting(p: Page) -> None:
        expect(p.get_by_test_id("app-tab-waiting")).to_have_count(1)
        expect(card(p, "m1", "timeline")).to_have_count(0)  # it is the app's, not the IM's

    await page.run(waiting)
    await connection.send(interactions({**own, "state": "submitted", "result": {"approved": True}}))
    await page.run(lambda p: expect(p.get_by_test_id("app-tab-waiting")).to_have_count(0))


async def test_a_reload_keeps_a_pending_card_and_what_was_typed_into_it(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    pending = interactions(interaction("i1", INPUT))
    connection = await open_shell(page, hostbridge, apps(CHAT, task=False), chat_view(), pending)

    def type_a_name(p: Page) -> None:
        card(p, "i1").get_by_test_id("interaction-field").nth(0).focus()
        p.keyboard.type("Grace")

    await page.run(type_a_name)
    draft = await connection.expect("interaction.draft")
    while draft["values"]["name"] != "Grace":  # saved as typed, the last one whole
        draft = await connection.expect("interaction.draft")
    assert draft == {
        "type": "interaction.draft",
        "interaction_id": "i1",
        "values": {"name": "Grace", "count": "", "notes": ""},
    }
    # What the hostbridge greets a reloaded Shell with: the card, and the draft it kept.
    kept = {"type": "shell.drafts", "drafts": {"i1": draft["values"]}}
    hostbridge.on_ready = [apps(CHAT, task=False), chat_view(), pending, kept]
    await page.run(lambda p: p.reload())
    second = await hostbridge.next_connection()
    await second.expect("shell.ready")

    def check(p: Page) -> None:
        fields = card(p, "i1").get_by_test_id("interaction-field")
        expect(fields.nth(0)).to_have_value("Grace")
        expect(card(p, "i1").get_by_test_id("interaction-submit")).to_be_enabled()

    await page.run(check)
    with trio.fail_after(5):
        await connection.closed.wait()
