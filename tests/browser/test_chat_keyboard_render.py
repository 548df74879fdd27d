"""Keyboard (issue 28, item 11), in real Chromium: after the user answers a question card, focus
goes where they will want it next (the next open question, else the composer, and on to the
Agent's follow-up question when it comes while the focus still rests there), never left on the
answered card; the runtime's permission dialog opened after a mouse click shows a visible focus
ring on the button it focused. The cards run against the fake hostbridge, the dialog against
the real hostbridge and a fake gateway (as test_capabilities_render.py)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Page, expect

from lineup.hostbridge.messages import CapabilityPromptEvent
from lineup.tests.hostbridge.test_actor import TOKEN, start_hostbridge
from lineup.tests.hostbridge.test_capabilities import CapabilityBus, no_env, prompt_view
from lineup.tests.support.browser import open_shell

from ._fake_hostbridge import FakeHostbridge, ShellConnection
from .conftest import ShellPage
from .test_interactions_keyboard_render import RING, TRANSPARENT, tab_to
from .test_interactions_render import CHOICE, CONFIRM, apps, card, interaction, interactions
from .test_shell_render import CHAT, chat_view, message

FIRST_CONTROL: Final = "input, textarea, button"


async def answered(connection: ShellConnection, interaction_id: str) -> None:
    """The next frames up to the answer to `interaction_id`, which the Shell must send."""
    while True:
        frame = await connection.receive()
        if frame.get("type") == "interaction.answer":
            assert frame["interaction_id"] == interaction_id, frame
            return


async def test_after_an_answer_focus_goes_to_the_next_open_question_else_the_composer(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    now = time.time()
    connection = await open_shell(
        page,
        hostbridge,
        apps(CHAT, task=False),
        chat_view(message("m1", "agent", "received", "Two questions for you")),
        interactions(
            interaction("k1", CONFIRM, created_at=now - 2),
            interaction("c1", CHOICE, created_at=now - 1),
        ),
    )

    def answer_the_first(p: Page) -> None:
        approve = card(p, "k1").get_by_test_id("interaction-approve")
        tab_to(p, approve)
        p.keyboard.press("Enter")
        expect(card(p, "k1").get_by_test_id("interaction-sending")).to_be_visible()
        # On to the next open question, on its first control: no extra Tabs.
        expect(card(p, "c1").locator(FIRST_CONTROL).first).to_be_focused()

    await page.run(answer_the_first)
    await answered(connection, "k1")

    def answer_the_last(p: Page) -> None:
        p.keyboard.press("Space")  # the focused first option
        p.keyboard.press("Tab")
        expect(card(p, "c1").get_by_test_id("interaction-submit")).to_be_focused()
        p.keyboard.press("Enter")
        expect(p.get_by_test_id("composer-input")).to_be_focused()  # no question left

    await page.run(answer_the_last)
    await answered(connection, "c1")
    # The Agent's follow-up comes a moment later: the focus, resting in the composer, goes on.
    await connection.send(interactions(interaction("k2", CONFIRM)))
    await page.run(
        lambda p: expect(card(p, "k2").get_by_test_id("interaction-approve")).to_be_focused()
    )

    def answer_then_type(p: Page) -> None:
        p.keyboard.press("Enter")
        expect(p.get_by_test_id("composer-input")).to_be_focused()
        p.keyboard.type("I am writing")

    await page.run(answer_then_type)
    await answered(connection, "k2")
    # A question that comes while the user types takes nothing from them.
    await connection.send(interactions(interaction("k3", CONFIRM)))

    def typing_kept(p: Page) -> None:
        expect(card(p, "k3").get_by_test_id("interaction-approve")).to_be_visible()
        expect(p.get_by_test_id("composer-input")).to_be_focused()
        expect(p.get_by_test_id("composer-input")).to_have_value("I am writing")

    await page.run(typing_kept)


async def test_the_permission_dialog_opened_after_a_mouse_click_shows_its_focus_ring(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage
) -> None:
    actor, _bus, port = await start_hostbridge(nursery, tmp_path, CapabilityBus())

    def click_with_the_mouse(p: Page) -> None:
        p.goto(f"http://127.0.0.1:{port}/#token={TOKEN}")
        expect(p.get_by_test_id("runtime-state")).to_have_attribute("data-state", "online")
        # A click (as on Export in a Surface), not a key, is the user's last input.
        p.get_by_test_id("apps-button").click()
        expect(p.get_by_test_id("apps-menu")).to_be_visible()

    await page.run(click_with_the_mouse)
    actor.on_capability_prompt(CapabilityPromptEvent(prompt=prompt_view("p1")), no_env())

    def ring(p: Page) -> None:
        expect(p.get_by_test_id("permission-prompt")).to_have_attribute("data-prompt-id", "p1")
        deny = p.get_by_test_id("permission-deny")
        expect(deny).to_be_focused()
        # As `assert_focus_ring`, but whatever `:focus-visible` says: after a mouse click the
        # browser's heuristic says no, and the ring must show all the same.
        shown = deny.evaluate(RING)
        outlined = (
            shown["style"] not in ("none", "hidden")
            and shown["width"] >= 2
            and shown["color"] not in TRANSPARENT
        )
        assert outlined or shown["shadow"] != "none", shown

    await page.run(ring)
