"""A toast never hides the newest of the chat (issue 28, item 4: "the toast overlaps the next
card"), in real Chromium against the fake hostbridge: while a notice's toast or the runtime's
error notice floats over the timeline's foot, the newest card and message are read in full
above it, at a desktop's width and at a phone's; once the toasts are gone, the foot is the
timeline's own again."""

from __future__ import annotations

import time
from typing import Any, Final

from playwright.sync_api import Locator, Page, ViewportSize, expect

from lineup.tests.support.browser import open_shell

from ._fake_hostbridge import FakeHostbridge
from .conftest import ShellPage
from .test_interactions_render import CHOICE, NOTICE, apps, card, interaction, interactions
from .test_shell_render import CHAT, chat_view, item_frames, message

Frame = dict[str, Any]
DESKTOP: Final = ViewportSize(width=1280, height=800)
PHONE: Final = ViewportSize(width=390, height=844)


def history() -> list[Frame]:
    return [message(f"m{n}", "agent", "received", f"Message number {n}") for n in range(30)]


def assert_clear_of(p: Page, newest: Locator, toasts: Locator) -> None:
    """`newest` is shown whole inside the timeline, and no toast covers any of it."""
    expect(newest).to_be_in_viewport(ratio=1)
    box = newest.bounding_box()
    timeline = p.get_by_test_id("timeline").bounding_box()
    assert box is not None and timeline is not None
    assert box["y"] + box["height"] <= timeline["y"] + timeline["height"] + 1
    for n in range(toasts.count()):
        toast = toasts.nth(n).bounding_box()
        assert toast is not None
        across = toast["x"] < box["x"] + box["width"] and box["x"] < toast["x"] + toast["width"]
        assert not across or box["y"] + box["height"] <= toast["y"], (box, toast)


async def test_the_newest_card_is_read_in_full_above_a_notices_toast(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    await page.run(lambda p: p.set_viewport_size(DESKTOP))
    now = time.time()
    connection = await open_shell(page, hostbridge, apps(CHAT, task=False), chat_view(*history()))
    # The notice, then at once the Agent's next question: the card the toast used to cover.
    await connection.send(
        interactions(
            interaction("n1", NOTICE, "completed", result={"acknowledged": False}, created_at=now),
            interaction("c1", CHOICE, created_at=now + 1),
        )
    )

    def clear(p: Page) -> None:
        expect(p.get_by_test_id("toast")).to_be_visible()
        expect(card(p, "c1").get_by_test_id("interaction-submit")).to_be_visible()
        assert_clear_of(p, card(p, "c1"), p.get_by_test_id("toast"))

    await page.run(clear)
    await page.run(lambda p: p.set_viewport_size(PHONE))
    await page.run(clear)

    # The runtime's own error notice stays until dismissed: the newest message clears it too.
    await connection.send({"type": "shell.notice", "level": "error", "text": "Saving failed"})
    await connection.send(item_frames(message("a1", "agent", "received", "Newest"), first=100))

    def clear_of_both(p: Page) -> None:
        toasts = p.locator('[data-testid="notices"] > *')
        expect(toasts).to_have_count(2)
        assert_clear_of(p, p.locator('[data-message-id="a1"]'), toasts)

    await page.run(clear_of_both)

    def dismissed(p: Page) -> None:
        p.get_by_test_id("toast-dismiss").click()
        p.get_by_test_id("notice-dismiss").click()
        expect(p.locator('[data-testid="notices"] > *')).to_have_count(0)
        expect(p.get_by_test_id("chat")).to_have_css("--toast-inset", "0px")

    await page.run(dismissed)
