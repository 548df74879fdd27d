"""The chat follows the conversation (issue 28, item 3), in real Chromium against the fake
hostbridge: at the newest it stays there; scrolled up, new items keep the user's place and a
"New messages" button (keyboard reachable, announced politely) takes them to the newest and
goes once they are there; sending while scrolled up goes to the newest, so the answer arrives
in sight."""

from __future__ import annotations

from typing import Any, Final

from playwright.sync_api import Locator, Page, expect

from lineup.tests.support.browser import open_shell

from ._fake_hostbridge import FakeHostbridge, ShellConnection
from .conftest import ShellPage
from .test_interactions_render import TASK, apps, task_view
from .test_shell_render import CHAT, chat_view, item_frames, message

Frame = dict[str, Any]
HISTORY: Final = 40  # messages: several screens of them
AT_NEWEST: Final = "(t) => t.scrollHeight - t.scrollTop - t.clientHeight < 2"


def history() -> list[Frame]:
    return [
        message(f"m{n}", "agent" if n % 2 else "user", "sent", f"Message number {n}")
        for n in range(HISTORY)
    ]


def newest(p: Page, message_id: str) -> Locator:
    return p.locator(f'[data-testid="message"][data-message-id="{message_id}"]')


def scrolled_up(p: Page) -> int:
    """Scroll the timeline to its top, as a reader of older messages; its scrollTop."""
    timeline = p.get_by_test_id("timeline")
    expect(newest(p, f"m{HISTORY - 1}")).to_be_attached()
    timeline.evaluate("(t) => { t.scrollTop = 0; }")
    expect(timeline).to_have_js_property("scrollTop", 0)
    assert not timeline.evaluate(AT_NEWEST)
    return 0


async def arrives(connection: ShellConnection, message_id: str, order: int) -> None:
    await connection.send(
        item_frames(message(message_id, "agent", "received", f"Answer {message_id}"), first=order)
    )


async def test_new_items_keep_the_place_of_a_user_scrolled_up_and_a_button_takes_them_down(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, chat_view(*history()))

    def at_newest_from_the_start(p: Page) -> None:
        timeline = p.get_by_test_id("timeline")
        expect(newest(p, f"m{HISTORY - 1}")).to_be_in_viewport()
        assert timeline.evaluate(AT_NEWEST)
        expect(p.get_by_test_id("timeline-newer")).to_be_hidden()

    await page.run(at_newest_from_the_start)
    # At the newest, the newest stays in sight as items arrive, with no button.
    await arrives(connection, "a1", HISTORY + 1)
    await page.run(lambda p: expect(newest(p, "a1")).to_be_in_viewport())
    await page.run(lambda p: expect(p.get_by_test_id("timeline-newer")).to_be_hidden())

    top = await page.run(scrolled_up)
    await arrives(connection, "a2", HISTORY + 2)

    def kept_with_a_button(p: Page) -> None:
        button = p.get_by_test_id("timeline-newer")
        expect(button).to_be_visible()
        expect(button).to_have_accessible_name("New messages: go to the newest")
        expect(p.get_by_test_id("timeline-newer-status")).to_have_text("New messages below")
        expect(p.get_by_test_id("timeline-newer-status")).to_have_attribute("role", "status")
        expect(p.get_by_test_id("timeline")).to_have_js_property("scrollTop", top)
        expect(newest(p, "a2")).not_to_be_in_viewport()

    await page.run(kept_with_a_button)

    def by_keyboard(p: Page) -> None:
        # From the composer, one Shift+Tab back: the button sits between it and the timeline.
        p.get_by_test_id("composer-input").focus()
        p.keyboard.press("Shift+Tab")
        expect(p.get_by_test_id("timeline-newer")).to_be_focused()
        p.keyboard.press("Enter")
        expect(newest(p, "a2")).to_be_in_viewport()
        assert p.get_by_test_id("timeline").evaluate(AT_NEWEST)
        expect(p.get_by_test_id("timeline-newer")).to_be_hidden()
        expect(p.get_by_test_id("timeline-newer-status")).to_have_text("")
        expect(p.get_by_test_id("composer-input")).to_be_focused()  # not lost to the page

    await page.run(by_keyboard)

    # Scrolled up again, then down by hand: once at the newest, the button goes by itself.
    await page.run(scrolled_up)
    await arrives(connection, "a3", HISTORY + 3)
    await page.run(lambda p: expect(p.get_by_test_id("timeline-newer")).to_be_visible())

    def down_by_hand(p: Page) -> None:
        timeline = p.get_by_test_id("timeline")
        timeline.hover()
        for _ in range(HISTORY):
            p.mouse.wheel(0, 2000)
            if timeline.evaluate(AT_NEWEST):
                break
        expect(p.get_by_test_id("timeline-newer")).to_be_hidden()

    await page.run(down_by_hand)


async def test_sending_while_scrolled_up_goes_to_the_newest_and_the_answer_arrives_in_sight(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, chat_view(*history()))
    await page.run(scrolled_up)

    def send(p: Page) -> None:
        p.get_by_test_id("composer-input").fill("What about Friday?")
        p.keyboard.press("Enter")
        assert p.get_by_test_id("timeline").evaluate(AT_NEWEST)

    await page.run(send)
    submitted = await connection.expect("ui.event")
    assert submitted["event"]["kind"] == "composer.submit"
    echo = message("u1", "user", "pending", "What about Friday?")
    await connection.send(item_frames(echo, first=HISTORY + 1))
    await page.run(lambda p: expect(newest(p, "u1")).to_be_in_viewport())
    await arrives(connection, "a1", HISTORY + 2)

    def answered_in_sight(p: Page) -> None:
        expect(newest(p, "a1")).to_be_in_viewport()
        expect(p.get_by_test_id("timeline-newer")).to_be_hidden()

    await page.run(answered_in_sight)


async def test_what_came_while_another_app_was_in_front_is_new_when_the_chat_is_back(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, apps(CHAT), chat_view(*history()), task_view())
    top = await page.run(scrolled_up)
    await connection.send(apps(TASK))
    await page.run(lambda p: expect(p.get_by_test_id("task-dashboard")).to_be_visible())
    await arrives(connection, "a1", HISTORY + 1)
    await connection.send(apps(CHAT))

    def back_where_it_was_with_the_button(p: Page) -> None:
        expect(p.get_by_test_id("chat")).to_be_visible()
        expect(p.get_by_test_id("timeline-newer")).to_be_visible()
        expect(p.get_by_test_id("timeline")).to_have_js_property("scrollTop", top)
        p.get_by_test_id("timeline-newer").click()
        expect(newest(p, "a1")).to_be_in_viewport()
        expect(p.get_by_test_id("timeline-newer")).to_be_hidden()

    await page.run(back_where_it_was_with_the_button)


GROW_NEWEST: Final = (
    "(t) => { const grown = document.createElement('div');"
    " grown.style.height = '300px'; t.lastElementChild.append(grown); }"
)
TWO_FRAMES: Final = (
    "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"
)
SETTLED_AT_NEWEST: Final = (
    "() => { const t = document.querySelector('[data-testid=\"timeline\"]');"
    " return t.scrollHeight - t.scrollTop - t.clientHeight < 2; }"
)


async def test_a_row_that_grows_after_its_render_is_followed_at_the_newest_and_only_there(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    # A card filled in, a line that wraps anew: the newest row grows with no render after it.
    await open_shell(page, hostbridge, chat_view(*history()))

    def followed_at_the_newest(p: Page) -> None:
        timeline = p.get_by_test_id("timeline")
        expect(newest(p, f"m{HISTORY - 1}")).to_be_in_viewport()
        assert timeline.evaluate(AT_NEWEST)
        timeline.evaluate(GROW_NEWEST)
        p.wait_for_function(SETTLED_AT_NEWEST, timeout=5000)
        expect(p.get_by_test_id("timeline-newer")).to_be_hidden()

    await page.run(followed_at_the_newest)

    def kept_in_place_when_scrolled_up(p: Page) -> None:
        timeline = p.get_by_test_id("timeline")
        top = scrolled_up(p)
        timeline.evaluate(GROW_NEWEST)
        # One frame for the observer to have had its say, then the reader's place is theirs.
        p.evaluate(TWO_FRAMES)
        expect(timeline).to_have_js_property("scrollTop", top)

    await page.run(kept_in_place_when_scrolled_up)
