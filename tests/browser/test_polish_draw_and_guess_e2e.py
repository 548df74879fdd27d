"""Draw-and-Guess as the drawer plays it (issue 28, item 6), in real Chromium against the real
runtime with the game as a `--dev-app` and an Agent on the embedded AppServer.

The Agent's guesses are where the drawer looks while drawing: beside the canvas on a wide
screen, just above it on a phone, both in view at once, never under the canvas. Closing the
game's tab with a round in play asks first (the runtime's `confirm`, from the app, which the
runtime told of the close instead of closing: `app.close_requested`): "Keep playing", reached
with Tab and taken with Enter, keeps the round playing and tells the Agent nothing; closing
again and approving, by keyboard too, closes the game, the chat comes back, and the round's
call ends `app_closed`, as any close ends it. With the question shown, axe-core finds no WCAG
2.1 A/AA violation in the Shell nor in the game's frame.

Browser waits are Playwright's `expect`; waits on the AppServer run under `fail_after`. No
sleeps.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import FloatRect, Locator, Page, ViewportSize, expect

from lineup.tests.support.agent_view import FINALS
from lineup.tests.support.browser import greeted_in_the_shell
from lineup.tests.support.runtime import CONVERSATION

from ._axe import axe_source, violations
from .conftest import ShellPage
from .test_app_registry_e2e import GREETING, WAIT_MS, WAIT_S
from .test_draw_and_guess_e2e import (
    EXAMPLES,
    FRAME,
    START,
    WRONG,
    call,
    chat_in_front,
    draw,
    game,
    game_body,
    tabs,
)
from .test_interactions_keyboard_render import tab_to

FOLDER: Final = EXAMPLES / "draw_and_guess"
TITLE: Final = "Draw and Guess (dev)"  # a --dev-app's title says so
WIDE: Final[ViewportSize] = {"width": 1280, "height": 800}
PHONE: Final[ViewportSize] = {"width": 390, "height": 844}
ERROR: Final = "lineup.v1.tool.error"


def game_playing(p: Page) -> None:
    body = game_body(p)
    expect(body).to_have_attribute("data-state", "ready", timeout=WAIT_MS)
    expect(body).to_have_attribute("data-phase", "playing", timeout=WAIT_MS)
    expect(tabs(p).and_(p.locator('[data-app-scope="draw-and-guess"]'))).to_have_text(TITLE)


def boxes(p: Page) -> tuple[FloatRect, FloatRect]:
    """The canvas's and the guesses' boxes, in the Shell's own coordinates."""
    canvas = game(p).locator("#canvas").bounding_box(timeout=WAIT_MS)
    guesses = game(p).locator("section.guesses").bounding_box(timeout=WAIT_MS)
    assert canvas is not None and guesses is not None
    return canvas, guesses


def the_guess_is_shown(p: Page) -> None:
    expect(game_body(p)).to_have_attribute("data-guesses", "1", timeout=WAIT_MS)
    expect(game(p).locator("#guesses li")).to_have_text([f"{WRONG} — wrong"])


def in_view(p: Page, box: FloatRect) -> bool:
    size = p.viewport_size
    assert size is not None
    return (
        box["y"] >= 0
        and box["y"] + box["height"] <= size["height"]
        and box["x"] >= 0
        and box["x"] + box["width"] <= size["width"]
    )


def guesses_beside_the_canvas(p: Page) -> None:
    p.set_viewport_size(WIDE)
    the_guess_is_shown(p)
    game(p).locator("#canvas").scroll_into_view_if_needed()
    canvas, guesses = boxes(p)
    assert guesses["x"] >= canvas["x"] + canvas["width"], (canvas, guesses)  # on its right
    assert canvas["y"] <= guesses["y"] < canvas["y"] + canvas["height"], (canvas, guesses)
    assert in_view(p, canvas) and in_view(p, guesses), (canvas, guesses)


def guesses_just_above_the_canvas(p: Page) -> None:
    p.set_viewport_size(PHONE)
    the_guess_is_shown(p)
    game(p).locator("#canvas").scroll_into_view_if_needed()
    canvas, guesses = boxes(p)
    assert guesses["y"] + guesses["height"] <= canvas["y"], (canvas, guesses)  # above it
    assert canvas["y"] - (guesses["y"] + guesses["height"]) <= 16, (canvas, guesses)  # just
    assert guesses["height"] <= 80, guesses  # a line or two, not a column
    assert in_view(p, guesses), guesses
    p.set_viewport_size(WIDE)


def close_button(p: Page) -> Locator:
    return p.get_by_role("button", name=f"Close {TITLE}")


def the_close_asks_first(p: Page) -> Locator:
    """Enter on the game's close button: the game stays, a question asks; answers the
    question's card."""
    close_button(p).focus(timeout=WAIT_MS)
    p.keyboard.press("Enter")
    question = p.get_by_test_id("app-interactions").locator(
        '[data-testid="interaction-card"][data-outcome="open"]'
    )
    expect(question).to_have_count(1, timeout=WAIT_MS)
    expect(question).to_contain_text("End this round?")
    expect(question.get_by_test_id("interaction-approve")).to_have_text("Close the game")
    expect(question.get_by_test_id("interaction-cancel")).to_have_text("Keep playing")
    expect(p.locator(FRAME)).to_be_visible()
    expect(game_body(p)).to_have_attribute("data-phase", "playing")
    expect(close_button(p)).to_have_count(1)
    return question


def accessible(axe: str) -> Callable[[Page], None]:
    """No WCAG 2.1 A/AA violation in the Shell, the question shown, nor in the game's frame."""

    def check(p: Page) -> None:
        frame = p.locator(FRAME).element_handle(timeout=WAIT_MS).content_frame()
        assert frame is not None
        assert violations(p, axe) == []
        assert violations(frame, axe) == []

    return check


def keep_playing_with_the_keyboard(p: Page) -> None:
    question = the_close_asks_first(p)
    accessible(axe_source())(p)
    asked = question.get_attribute("data-interaction-id")
    tab_to(p, question.get_by_test_id("interaction-cancel"))
    p.keyboard.press("Enter")
    answered = p.locator(f'[data-testid="interaction-card"][data-interaction-id="{asked}"]')
    expect(answered).to_have_attribute("data-outcome", "answered", timeout=WAIT_MS)
    expect(game_body(p)).to_have_attribute("data-phase", "playing")
    expect(tabs(p)).to_have_count(2)
    expect(p.locator(FRAME)).to_be_visible()


def close_the_game_with_the_keyboard(p: Page) -> None:
    question = the_close_asks_first(p)
    tab_to(p, question.get_by_test_id("interaction-approve"))
    p.keyboard.press("Enter")
    chat_in_front(p)


async def test_guesses_sit_where_the_drawer_looks_and_closing_a_round_asks_first(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    _, agent, revision = await greeted_in_the_shell(
        nursery, data_dir, page, GREETING, wait_ms=WAIT_MS, dev_apps=(FOLDER,)
    )
    await page.run(lambda p: p.set_viewport_size(WIDE))
    with trio.fail_after(WAIT_S):
        await agent.client.call_tool(CONVERSATION, START, {}, revision, call_id="round-1")
    await page.run(game_playing)
    await page.run(draw)
    wrong = await call(agent, revision, "draw-and-guess.guess", {"word": WRONG}, "guess-1")
    assert wrong == {"correct": False, "tries_left": 4, "outcome": "playing"}
    await page.run(guesses_beside_the_canvas)
    await page.run(guesses_just_above_the_canvas)

    # Closing asks; keeping the round changes nothing the Agent sees.
    await page.run(keep_playing_with_the_keyboard)
    await agent.settle()
    assert agent.of_call("round-1", *FINALS) == []

    # Closing again, approved: the game goes, and the round's call ends as a close ends it.
    await page.run(close_the_game_with_the_keyboard)
    final = await agent.terminal("round-1")
    assert (final["type"], final["payload"]["code"]) == (ERROR, "app_closed")
    await agent.settle()
    assert [m["type"] for m in agent.of_call("round-1", *FINALS)] == [ERROR]
    assert page.errors == []


def closing_again_while_it_asks_closes_at_once(p: Page) -> None:
    """The user closes the tab again while the game's "End this round?" is still open: the
    close is theirs to insist on (no app keeps its tab by asking), and the game goes."""
    the_close_asks_first(p)
    close_button(p).focus(timeout=WAIT_MS)
    p.keyboard.press("Enter")
    chat_in_front(p)


async def test_a_close_the_user_repeats_while_the_game_asks_is_not_held_back(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    _, agent, revision = await greeted_in_the_shell(
        nursery, data_dir, page, GREETING, wait_ms=WAIT_MS, dev_apps=(FOLDER,)
    )
    with trio.fail_after(WAIT_S):
        await agent.client.call_tool(CONVERSATION, START, {}, revision, call_id="round-1")
    await page.run(game_playing)
    await page.run(closing_again_while_it_asks_closes_at_once)
    final = await agent.terminal("round-1")
    assert (final["type"], final["payload"]["code"]) == (ERROR, "app_closed")
    assert page.errors == []
