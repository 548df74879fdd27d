"""The Shell's generic `card` component (components/card.js), in real Chromium.

A fake hostbridge plays the runtime: it sends `shell.apps` and `shell.view` frames with the view
`lineup.sdk.card` builds, from an installed app's scope (any app may show a card). Every
browser wait is Playwright's auto-waiting `expect` with an explicit timeout. No sleeps.
Set LINEUP_CARD_SCREENSHOT=/path.png to save a picture of the card in front.
"""

from __future__ import annotations

import os
from typing import Any, Final

from playwright.sync_api import Page, expect

from lineup.sdk import card
from lineup.tests.support.browser import open_shell

from ._fake_hostbridge import FakeHostbridge
from .conftest import ShellPage

WAIT_MS: Final = 5_000
CHAT: Final = "chat"
HELLO: Final = "hello-world:call-1"
SCOPE: Final = "hello-world"

Frame = dict[str, Any]


def card_view(view: dict[str, Any]) -> Frame:
    return {"type": "shell.view", "app_scope": SCOPE, "instance_id": HELLO, "view": view}


def apps(foreground: str) -> Frame:
    instances = [
        {"instance_id": CHAT, "app_scope": "chat", "title": "Chat", "state": "background"},
        {"instance_id": HELLO, "app_scope": SCOPE, "title": "Hello (dev)", "state": "foreground"},
    ]
    if foreground == CHAT:
        instances[0]["state"], instances[1]["state"] = "foreground", "background"
    return {"type": "shell.apps", "foreground": foreground, "instances": instances}


GREETING = card(
    title="Hello, Ada!",
    text="It works.\nOn two lines.",
    fields={"Name": "Ada", "Language": "Python"},
    progress=0.4,
)


async def test_a_card_shows_its_title_text_fields_and_progress_as_text(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    await open_shell(page, hostbridge, apps(HELLO), card_view(GREETING))

    def check(p: Page) -> None:
        shown = p.get_by_test_id("card-view")
        expect(shown).to_be_visible(timeout=WAIT_MS)
        expect(shown).to_have_attribute("data-instance-id", HELLO, timeout=WAIT_MS)
        expect(p.get_by_test_id("app-placeholder")).to_be_hidden(timeout=WAIT_MS)
        expect(p.get_by_test_id("composer")).to_be_hidden(timeout=WAIT_MS)
        expect(shown.get_by_role("heading", level=2)).to_have_text("Hello, Ada!", timeout=WAIT_MS)
        expect(shown).to_have_accessible_name("Hello, Ada!", timeout=WAIT_MS)
        expect(shown.get_by_test_id("card-view-text")).to_have_text(
            "It works.\nOn two lines.", timeout=WAIT_MS
        )
        expect(shown.get_by_test_id("card-view-label")).to_have_text(
            ["Name", "Language"], timeout=WAIT_MS
        )
        expect(shown.get_by_test_id("card-view-value")).to_have_text(
            ["Ada", "Python"], timeout=WAIT_MS
        )
        bar = shown.get_by_role("progressbar", name="Progress")
        expect(bar).to_be_visible(timeout=WAIT_MS)
        expect(bar).to_have_js_property("value", 40, timeout=WAIT_MS)
        expect(shown.get_by_test_id("card-view-progress-value")).to_have_text(
            "40%", timeout=WAIT_MS
        )
        assert p.evaluate("window.__cspViolations") == []

    await page.run(check)
    if path := os.environ.get("LINEUP_CARD_SCREENSHOT"):
        await page.run(lambda p: p.screenshot(path=path))


async def test_markup_in_a_card_is_shown_as_text_and_never_runs(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    hostile = "<img src=x onerror=window.__pwned=1><b>bold</b>"
    view = card(title=hostile, text=hostile, fields={hostile: hostile})
    await open_shell(page, hostbridge, apps(HELLO), card_view(view))

    def check(p: Page) -> None:
        shown = p.get_by_test_id("card-view")
        expect(shown.get_by_role("heading", level=2)).to_have_text(hostile, timeout=WAIT_MS)
        expect(shown.get_by_test_id("card-view-text")).to_have_text(hostile, timeout=WAIT_MS)
        expect(shown.get_by_test_id("card-view-value")).to_have_text(hostile, timeout=WAIT_MS)
        assert shown.locator("img, b").count() == 0
        assert p.evaluate("window.__pwned") is None

    await page.run(check)


async def test_an_update_changes_the_card_in_place_and_drops_what_is_misshapen(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, apps(HELLO), card_view(GREETING))

    def remember(p: Page) -> None:
        expect(p.get_by_test_id("card-view-value")).to_have_count(2, timeout=WAIT_MS)
        p.evaluate("window.__card = document.querySelector('[data-testid=card-view]')")

    await page.run(remember)
    # No progress, no text, a field that is not an object, a title that is not a string.
    misshapen = {"kind": "card", "title": 7, "fields": ["x", {"label": "Only", "value": 1}]}
    await connection.send(card_view(misshapen))

    def check(p: Page) -> None:
        shown = p.get_by_test_id("card-view")
        expect(shown.get_by_role("heading", level=2)).to_have_text("Untitled", timeout=WAIT_MS)
        expect(shown.get_by_test_id("card-view-label")).to_have_text(["Only"], timeout=WAIT_MS)
        expect(shown.get_by_test_id("card-view-value")).to_have_text([""], timeout=WAIT_MS)
        expect(shown.get_by_test_id("card-view-text")).to_be_hidden(timeout=WAIT_MS)
        expect(shown.get_by_role("progressbar")).to_be_hidden(timeout=WAIT_MS)
        assert p.evaluate("window.__card === document.querySelector('[data-testid=card-view]')"), (
            "an update changes the card in place"
        )

    await page.run(check)


async def test_the_card_leaves_the_stage_when_the_chat_comes_in_front(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, apps(HELLO), card_view(GREETING))
    await page.run(lambda p: expect(p.get_by_test_id("card-view")).to_be_visible(timeout=WAIT_MS))
    await connection.send(apps(CHAT))
    await page.run(
        lambda p: expect(p.get_by_test_id("card-view")).to_have_count(0, timeout=WAIT_MS)
    )
