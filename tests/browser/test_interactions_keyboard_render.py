"""Keyboard use of the standard interactions, in real Chromium against the fake hostbridge
(issue 12: "focus visible, Enter / Escape / Tab order"; "plain defaults when they are absent"):
the focus ring a keyboard user sees on a card's button and on an app's tab, a notice's toast
reached with Tab and dismissed with Enter or Escape, and the default labels of a request that
names none.

Focus is moved with the keyboard only (Tab, arrows), never with `focus()`, so what is checked
is what `:focus-visible` gives a keyboard user."""

from __future__ import annotations

from typing import Any, Final

from playwright.sync_api import Locator, Page, expect

from lineup.tests.support.browser import hold_the_timers, open_shell

from ._fake_hostbridge import FakeHostbridge
from .conftest import ShellPage
from .test_interactions_render import (
    CONFIRM,
    NOTICE,
    apps,
    card,
    interaction,
    interactions,
    task_view,
)
from .test_shell_render import CHAT, chat_view

MAX_TABS: Final = 40  # more than every focusable element of these pages
# What the browser draws around an element: the outline (with its computed width and colour)
# and any box shadow, and whether `:focus-visible` matches it.
RING: Final = """(e) => {
  const s = getComputedStyle(e);
  return {
    style: s.outlineStyle,
    width: parseFloat(s.outlineWidth),
    color: s.outlineColor,
    shadow: s.boxShadow,
    visible: e.matches(":focus-visible"),
  };
}"""
HOLD_AHEAD_S: Final = 5.0  # well inside the 60 s in which a notice still toasts
TRANSPARENT: Final = ("transparent", "rgba(0, 0, 0, 0)")


def tab_to(p: Page, target: Locator, *, key: str = "Tab") -> int:
    """Press `key` until `target` has the keyboard focus; how many presses it took."""
    for presses in range(1, MAX_TABS + 1):
        p.keyboard.press(key)
        if target.evaluate("(e) => e === document.activeElement"):
            return presses
    raise AssertionError(f"{target} not reached with {MAX_TABS} presses of {key}")


def ring(target: Locator) -> dict[str, Any]:
    found: dict[str, Any] = target.evaluate(RING)
    return found


def assert_focus_ring(target: Locator) -> None:
    """`target` has the focus, and a ring a sighted keyboard user can see: a solid outline at
    least 2 px wide in a colour that is not transparent (or a box shadow), absent once the
    focus has moved on."""
    expect(target).to_be_focused()
    shown = ring(target)
    assert shown["visible"], shown
    outlined = (
        shown["style"] not in ("none", "hidden")
        and shown["width"] >= 2
        and shown["color"] not in TRANSPARENT
    )
    assert outlined or shown["shadow"] != "none", shown


def assert_no_ring(target: Locator, focused: dict[str, Any]) -> None:
    """`target` has lost the focus, and with it the ring it had (`focused`)."""
    expect(target).not_to_be_focused()
    unfocused = ring(target)
    assert not unfocused["visible"], unfocused
    assert (unfocused["style"], unfocused["shadow"]) != (focused["style"], focused["shadow"]), (
        unfocused
    )


async def test_a_focused_card_button_and_a_focused_tab_show_a_visible_focus_ring(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    await open_shell(
        page,
        hostbridge,
        apps(CHAT),
        chat_view(),
        task_view(),
        interactions(interaction("k1", CONFIRM)),
    )

    def rings(p: Page) -> None:
        approve = card(p, "k1").get_by_test_id("interaction-approve")
        cancel = card(p, "k1").get_by_test_id("interaction-cancel")
        expect(approve).to_be_visible()
        chat_tab, task_tab = p.get_by_test_id("app-tab").nth(0), p.get_by_test_id("app-tab").nth(1)
        # The tabs come before the timeline: Tab reaches the chat's (in front) first.
        tab_to(p, chat_tab)
        assert_focus_ring(chat_tab)
        focused = ring(chat_tab)
        p.keyboard.press("ArrowRight")  # the switcher's arrow keys move between its tabs
        assert_focus_ring(task_tab)
        assert_no_ring(chat_tab, focused)
        tab_to(p, approve)
        assert_focus_ring(approve)
        focused = ring(approve)
        p.keyboard.press("Tab")
        assert_focus_ring(cancel)
        assert_no_ring(approve, focused)
        p.keyboard.press("Shift+Tab")
        assert_focus_ring(approve)

    await page.run(rings)


async def test_a_notices_toast_is_reached_with_tab_and_dismissed_with_enter_or_escape(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    # A toast goes by itself after a while: the page's timers are held from the start (a fake
    # clock, paused a little ahead of now before the page loads), so a slow machine cannot take
    # it away before the keys below reach it.
    await page.run(lambda p: hold_the_timers(p, HOLD_AHEAD_S))
    connection = await open_shell(page, hostbridge, apps(CHAT, task=False), chat_view())
    await page.run(lambda p: expect(p.get_by_test_id("composer-input")).to_be_enabled())
    second = {**NOTICE, "title": "Second", "message": "Another one."}
    await connection.send(
        interactions(
            interaction("n1", NOTICE, "completed", result={"acknowledged": False}),
            interaction("n2", second, "completed", result={"acknowledged": False}),
        )
    )

    def dismiss_by_keyboard(p: Page) -> None:
        toasts = p.get_by_test_id("toast")
        expect(toasts).to_have_count(2)
        first = toasts.filter(has_text="Heads up").get_by_test_id("toast-dismiss")
        expect(first).to_have_accessible_name("Got it")
        tab_to(p, first)
        assert_focus_ring(first)
        p.keyboard.press("Enter")
        expect(toasts).to_have_count(1)
        expect(toasts).to_contain_text("Second")
        # The next Tab goes on from where the dismissed toast was: to the other one.
        other = toasts.get_by_test_id("toast-dismiss")
        p.keyboard.press("Tab")
        assert_focus_ring(other)
        p.keyboard.press("Escape")
        expect(toasts).to_have_count(0)
        # A toast is never the only place a notice shows: both cards stay in the timeline.
        expect(card(p, "n1").get_by_test_id("interaction-title")).to_have_text("Heads up")
        expect(card(p, "n2").get_by_test_id("interaction-title")).to_have_text("Second")

    await page.run(dismiss_by_keyboard)


BARE_CONFIRM: Final = {"kind": "confirm", "title": "Proceed?", "prompt": "Shall I go on?"}
BARE_INPUT: Final = {
    "kind": "input",
    "title": "A name",
    "prompt": "What is it called?",
    "fields": [{"id": "name", "label": "Name", "type": "text"}],
}
BARE_CHOICE: Final = {
    "kind": "choice",
    "title": "Pick",
    "prompt": "Which one?",
    "mode": "single-choice",
    "actions": [{"id": "x", "label": "This"}, {"id": "y", "label": "That"}],
}
BARE_NOTICE: Final = {"kind": "notice", "title": "FYI", "message": "Nothing to do."}


async def test_a_request_without_labels_shows_the_plain_defaults(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    confirm = interaction("k1", BARE_CONFIRM)
    connection = await open_shell(
        page,
        hostbridge,
        apps(CHAT, task=False),
        chat_view(),
        interactions(
            confirm,
            interaction("i1", BARE_INPUT),
            interaction("c1", BARE_CHOICE),
            interaction("n1", BARE_NOTICE, "completed", result={"acknowledged": False}),
        ),
    )

    def defaults(p: Page) -> None:
        expect(card(p, "k1").locator("button")).to_have_text(["Approve", "Cancel"])
        expect(card(p, "i1").locator("button")).to_have_text(["Submit", "Cancel"])
        expect(card(p, "c1").locator("button")).to_have_text(["Submit"])
        # A notice's card is read-only; its toast's button is the plain dismiss.
        expect(card(p, "n1").locator("button")).to_have_count(0)
        dismiss = p.get_by_test_id("toast").get_by_test_id("toast-dismiss")
        expect(dismiss).to_have_text("×")
        expect(dismiss).to_have_accessible_name("Dismiss notification")
        # The default label is what Enter on the focused button says and sends.
        tab_to(p, card(p, "k1").get_by_test_id("interaction-cancel"))
        p.keyboard.press("Enter")

    await page.run(defaults)
    frame = await connection.expect("interaction.answer")
    assert frame == {
        "type": "interaction.answer",
        "interaction_id": "k1",
        "answer": {"approved": False},
    }
    await connection.send(
        interactions(
            {**confirm, "state": "completed", "result": {"approved": False}},
            interaction(
                "k2", BARE_CONFIRM, "completed", result={"approved": True}, call_id="call-k2"
            ),
        )
    )

    def results(p: Page) -> None:
        expect(card(p, "k1").get_by_test_id("interaction-outcome")).to_have_text(
            "You chose: Cancel"
        )
        expect(card(p, "k2").get_by_test_id("interaction-outcome")).to_have_text(
            "You chose: Approve"
        )

    await page.run(results)
