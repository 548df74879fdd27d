"""The demo Agent plays Draw-and-Guess with the user, in real Chromium against `lineup run`'s
embedded default with its demo Agent and the catalog (issue 17: "the loop is visible without a
model").

The user opens the App Registry with the start target (`&open=app-registry`), installs the game
from "Available", and writes `/play draw-and-guess` in the chat. The demo Agent starts a round;
the game comes in front with the word; the user draws; the Agent looks at the drawing and
guesses the first word of its own list, which the game shows. Unless that guess was right (the
game picks its word at random), the user gives up. Either way the round's outcome is the demo
Agent's line in the chat, which is back in front. No sleeps: every wait is Playwright's `expect`
with a deadline; the Agent's own pace (a look every few seconds) is what takes the time.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import trio
from playwright.sync_api import Page, expect

from lineup.ops.agent._play import WORDS
from lineup.tests.support.browser import load_shell
from lineup.tests.support.runtime import start_runtime

from .conftest import ShellPage
from .test_app_registry_e2e import WAIT_MS
from .test_draw_and_guess_e2e import (
    catalog,
    chat_in_front,
    close_the_registry,
    draw,
    game,
    game_body,
    game_in_front,
    give_up_with_the_keyboard,
    install_from_the_catalog,
)

__all__ = ["catalog"]  # the module's catalog fixture, built once here too


def open_the_registry_at_start(url: str) -> Callable[[Page], None]:
    return load_shell(f"{url}&open=app-registry", wait_ms=WAIT_MS)


def ask_to_play(p: Page) -> None:
    composer = p.get_by_test_id("composer-input")
    composer.fill("/play draw-and-guess")
    composer.press("Enter")


def the_agent_guessed(p: Page) -> str:
    """The Agent looked at the drawing and guessed its first word; the game shows the guess.
    Answers the game's phase after it."""
    body = game_body(p)
    expect(body).to_have_attribute("data-guesses", "1", timeout=WAIT_MS)
    expect(game(p).locator("#guesses li").first).to_contain_text(WORDS[0])
    return str(body.get_attribute("data-phase"))


def said(text: str) -> Callable[[Page], None]:
    def check(p: Page) -> None:
        expect(p.get_by_test_id("chat").get_by_text(text)).to_have_count(1, timeout=WAIT_MS)

    return check


async def test_the_demo_agent_plays_a_round_the_user_draws(
    nursery: trio.Nursery, data_dir: Path, catalog: Path, page: ShellPage
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=True, catalog=catalog)
    await page.run(open_the_registry_at_start(runtime.shell_url))
    await page.run(install_from_the_catalog)
    await page.run(close_the_registry)

    await page.run(ask_to_play)
    word = await page.run(game_in_front)
    await page.run(draw)
    await page.run(said(f"I see 2 strokes: I guess {WORDS[0]}."))
    if word == WORDS[0]:  # the Agent's first word was the one: the round is won, the game ends
        await page.run(said(f"{WORDS[0]} is right!"))
        outcome = "won"
    else:  # the game shows the wrong guess and plays on, until the user gives up
        assert await page.run(the_agent_guessed) == "playing"
        await page.run(said(f"Not {WORDS[0]}: 4 tries left."))
        await page.run(give_up_with_the_keyboard)
        outcome = "gave_up"
    await page.run(chat_in_front)
    await page.run(
        said(f"The round is over: {outcome}. The word was {word}; the guesses: {WORDS[0]}.")
    )
    assert page.errors == []
