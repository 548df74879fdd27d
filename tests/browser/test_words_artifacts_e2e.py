"""The Whiteboard's artifacts as a user meets them, in real Chromium against a real `lineup run`
(issue 28, item 8): named from the board's title and the action that made them, a thumbnail on
an image's card, and the "Saving …" toast gone once the save has ended.

The user opens the Whiteboard by its deep link (its board is titled "Whiteboard"), draws a
stroke, exports it (Allow once in the runtime's prompt: the download starts), then submits it
and approves. In the chat (the ended Whiteboard's group, unfolded), the export's card and the
submit's two cards each say which action made them, the two PNGs show a thumbnail that loaded,
and no toast says "Saving" any more.
The demo Agent's tour ends with a Whiteboard: once it is submitted, the Agent's thank-you names
the picture by that name, never by a raw artifact id.
Browser waits are Playwright's auto-waiting `expect`; no sleeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Locator, Page, expect

from lineup.tests.support.browser import load_shell
from lineup.tests.support.runtime import start_runtime

from .conftest import ShellPage
from .test_whiteboard_e2e import DRAW, board_body, board_frame, card, expect_saved

WAIT_MS: Final = 15_000  # a real runtime: processes, an HTTP AppServer
EXPORTED: Final = "Whiteboard - exported.png"
SUBMITTED: Final = ("Whiteboard - submitted.png", "Whiteboard - submitted.json")
GONE_MS: Final = 3_000  # after the app has the save's outcome: the toast is down by then
MENU_PROMPT: Final = "What would you like to try?"
TOUR_PICTURE: Final = "Try the Whiteboard - submitted.png"  # the tour's board, as submitted
LOADED: Final = "img => img.complete && img.naturalWidth > 0"


def artifact_cards(p: Page) -> Locator:
    return p.get_by_test_id("chat").get_by_test_id("artifact-card")


def named(p: Page, name: str) -> Locator:
    return artifact_cards(p).filter(has=p.get_by_test_id("artifact-name").get_by_text(name))


async def test_exported_and_submitted_boards_are_named_by_title_and_action_with_thumbnails(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)

    def draw_and_export(p: Page) -> None:
        p.goto(runtime.shell_url + "&open=whiteboard")
        expect(p.get_by_test_id("runtime-state")).to_have_attribute(
            "data-state", "online", timeout=WAIT_MS
        )
        board_frame(p).evaluate(DRAW, {"points": [[200, 200], [900, 600]], "up": True})
        expect_saved(p, 1)
        body = board_body(p)
        with p.expect_download(timeout=WAIT_MS) as downloading:
            body.locator("#export").click(timeout=WAIT_MS)
            p.get_by_test_id("permission-allow-once").click(timeout=WAIT_MS)
        assert downloading.value.suggested_filename == EXPORTED
        expect(body).to_have_attribute("data-export", "completed", timeout=WAIT_MS)
        # The save has ended: the toast that said it was on its way is gone with it, well
        # before an info notice would go by itself (notices.js INFO_NOTICE_MS, 8 s).
        expect(p.get_by_test_id("capability-saved")).to_have_count(0, timeout=GONE_MS)

    await page.run(draw_and_export)

    def submit(p: Page) -> None:
        board_body(p).locator("#submit").click(timeout=WAIT_MS)
        approve = card(p, "app").get_by_test_id("interaction-approve")
        approve.click(timeout=WAIT_MS)
        expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)

    await page.run(submit)

    def cards_as_seen(p: Page) -> None:
        expect(artifact_cards(p)).to_have_count(3, timeout=WAIT_MS)
        # The Whiteboard has ended: its group is folded, the cards inside; the user unfolds it.
        p.get_by_test_id("app-session-toggle").click(timeout=WAIT_MS)
        names = p.get_by_test_id("chat").get_by_test_id("artifact-name")
        shown = sorted(names.all_inner_texts())
        assert shown == sorted([EXPORTED, *SUBMITTED])
        for name in (EXPORTED, SUBMITTED[0]):
            thumbnail = named(p, name).get_by_test_id("artifact-thumbnail")
            expect(thumbnail).to_have_count(1)
            expect(thumbnail).to_have_attribute("alt", f"Preview of {name}")
            expect(thumbnail).to_be_visible()
            p.wait_for_function(LOADED, arg=thumbnail.element_handle(), timeout=WAIT_MS)
        # A JSON has no picture to show.
        expect(named(p, SUBMITTED[1]).get_by_test_id("artifact-thumbnail")).to_have_count(0)
        expect(p.get_by_test_id("capability-saved")).to_have_count(0)

    await page.run(cards_as_seen)
    assert page.console_errors == []


def take_the_tour_to_the_whiteboard(p: Page) -> None:
    """The demo Agent's tour: the Task Dashboard from the menu, its question answered, the
    task finished and closed; the Agent then opens a Whiteboard, which comes in front."""
    menu = card(p, "timeline").filter(has_text=MENU_PROMPT)
    menu.locator('[data-action-id="dashboard"]').click(timeout=WAIT_MS)
    asked = card(p, "overlay")
    asked.get_by_test_id("interaction-option").first.click(timeout=WAIT_MS)
    asked.get_by_test_id("interaction-submit").click(timeout=WAIT_MS)
    expect(asked).to_have_count(0, timeout=WAIT_MS)
    p.get_by_test_id("task-finish").click(timeout=WAIT_MS)
    p.get_by_test_id("task-close").click(timeout=WAIT_MS)
    board_frame(p).evaluate(DRAW, {"points": [[300, 300], [800, 700]], "up": True})
    expect_saved(p, 1)


async def test_the_agent_thanks_for_the_board_by_the_name_of_its_picture(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=True)
    await page.run(load_shell(runtime.shell_url, wait_ms=WAIT_MS))
    await page.run(take_the_tour_to_the_whiteboard)

    def thanked(p: Page) -> None:
        board_body(p).locator("#submit").click(timeout=WAIT_MS)
        card(p, "app").get_by_test_id("interaction-approve").click(timeout=WAIT_MS)
        thanks = p.get_by_test_id("message").filter(has_text="Thank you for the board")
        expect(thanks).to_have_count(1, timeout=WAIT_MS)
        expect(thanks).to_contain_text(f"I have it as a picture, {TOUR_PICTURE}.")
        expect(thanks).not_to_contain_text("art_")  # never a raw artifact id

    await page.run(thanked)
    assert page.errors == []
