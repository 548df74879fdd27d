"""The Shell (hostbridge/web/) in real Chromium against a fake hostbridge.

Every wait is Playwright's auto-waiting `expect` (5 s) or a trio wait under `fail_after`.
Set LINEUP_SHELL_SCREENSHOT=/path.png to save a picture of a rendered timeline.
"""

from __future__ import annotations

import itertools
import os
import re
from typing import Any

import trio
from playwright.sync_api import Page, expect

from lineup.hostbridge._markdown import markdown_tree
from lineup.tests.support.browser import COUNT_SOCKETS, hold_the_timers, open_shell

from ._fake_hostbridge import FRAME_TIMEOUT_S, TOKEN_REFUSED, FakeHostbridge
from .conftest import ShellPage

CHAT = "inst-chat-1"
BOARD = "inst-board-7"
AT = 1_760_000_000.0

Frame = dict[str, Any]
REVS = itertools.count(1)  # focus's stamps: each frame's items are newer than the last's


def message(
    message_id: str, author: str, state: str, markdown: str, *, tree: object = None
) -> Frame:
    return {
        "id": message_id,
        "author": author,
        "state": state,
        "tree": markdown_tree(markdown) if tree is None else tree,
        "at": AT,
    }


def chat_view(*items: Frame, enabled: bool = True, more: bool = False) -> list[Frame]:
    """The chat's view, then its items (in this order), then the page end: what the
    hostbridge sends a Shell for a timeline."""
    view = {
        "type": "shell.view",
        "app_scope": "chat",
        "instance_id": CHAT,
        "view": {"kind": "chat.timeline", "composer": {"enabled": enabled}},
    }
    return [view, *item_frames(*items), {"type": "shell.page", "instance_id": CHAT, "more": more}]


def item_frames(*items: Frame, first: int = 1) -> list[Frame]:
    """`items` as the hostbridge batches them: one `shell.items` frame (none for no items)."""
    if not items:
        return []
    ordered = [
        {"order": item.get("order", first + n), "rev": next(REVS), **item}
        for n, item in enumerate(items)
    ]
    return [{"type": "shell.items", "app_scope": "chat", "instance_id": CHAT, "items": ordered}]


def apps(foreground: str = CHAT, *, board: bool = False) -> Frame:
    instances = [{"instance_id": CHAT, "app_scope": "chat", "title": "Chat", "state": "foreground"}]
    if board:
        state = "foreground" if foreground == BOARD else "background"
        instances.append(
            {"instance_id": BOARD, "app_scope": "whiteboard", "title": "Whiteboard", "state": state}
        )
    return {"type": "shell.apps", "foreground": foreground, "instances": instances}


async def test_the_timeline_renders_agent_and_user_messages_with_their_states(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    await open_shell(
        page,
        hostbridge,
        apps(),
        chat_view(
            message("m1", "agent", "received", "Hello! **How** can I help?"),
            message("m2", "user", "sent", "Plan my week"),
            message("m3", "user", "pending", "and next week"),
            message("m4", "user", "failed", "this one failed"),
        ),
    )

    def check(p: Page) -> None:
        messages = p.get_by_test_id("message")
        expect(messages).to_have_count(4)
        expected = [
            ("m1", "agent", "received"),
            ("m2", "user", "sent"),
            ("m3", "user", "pending"),
            ("m4", "user", "failed"),
        ]
        for index, (message_id, author, state) in enumerate(expected):
            item = messages.nth(index)
            expect(item).to_have_attribute("data-message-id", message_id)
            expect(item).to_have_attribute("data-author", author)
            expect(item).to_have_attribute("data-state", state)
        expect(messages.nth(0).locator("strong")).to_have_text("How")
        expect(messages.nth(2).get_by_test_id("message-status")).to_have_text("sending…")
        expect(messages.nth(3).get_by_test_id("retry")).to_be_visible()
        expect(p.get_by_test_id("retry")).to_have_count(1)
        expect(p.get_by_test_id("timeline-empty")).to_be_hidden()
        agent_box = messages.nth(0).get_by_test_id("message-body").bounding_box()
        user_box = messages.nth(1).get_by_test_id("message-body").bounding_box()
        assert agent_box is not None and user_box is not None
        assert agent_box["x"] < user_box["x"], "agent on the left, user on the right"
        assert p.evaluate("window.__cspViolations") == []

    await page.run(check)
    if path := os.environ.get("LINEUP_SHELL_SCREENSHOT"):
        await page.run(lambda p: p.screenshot(path=path))


async def test_an_item_frame_changes_its_message_in_place_and_the_others_stay(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(
        page,
        hostbridge,
        chat_view(message("m1", "agent", "received", "one"), message("m2", "user", "pending", "x")),
    )
    await page.run(lambda p: expect(p.get_by_test_id("message")).to_have_count(2))
    await connection.send(item_frames(message("m2", "user", "sent", "x"), first=2))

    def check(p: Page) -> None:
        messages = p.get_by_test_id("message")
        expect(messages).to_have_count(2)
        expect(messages.nth(0)).to_have_attribute("data-message-id", "m1")
        expect(messages.nth(1)).to_have_attribute("data-state", "sent")
        expect(p.get_by_test_id("message-status")).to_have_count(0)

    await page.run(check)


async def test_an_older_version_of_a_message_arriving_late_does_not_replace_the_newer(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, chat_view())
    newer = {**message("m1", "user", "sent", "hi"), "order": 1, "rev": 20}
    older = {**message("m1", "user", "pending", "hi"), "order": 1, "rev": 10}
    await connection.send(item_frames(newer))
    await connection.send(item_frames(older))  # e.g. a greeting's page built before the change
    await connection.send({"type": "shell.notice", "level": "info", "text": "after"})

    def check(p: Page) -> None:
        expect(p.get_by_test_id("notice")).to_have_count(1)  # every frame above was read
        expect(p.get_by_test_id("message")).to_have_attribute("data-state", "sent")

    await page.run(check)


async def test_items_show_by_their_order_whatever_order_their_frames_came_in(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, chat_view())
    late = {**message("m3", "agent", "received", "third"), "order": 30}
    early = {**message("m1", "agent", "received", "first"), "order": 10}
    middle = {**message("m2", "agent", "received", "second"), "order": 20}
    await connection.send(item_frames(late, early, middle))

    def check(p: Page) -> None:
        expect(p.get_by_test_id("message-body")).to_have_text(["first", "second", "third"])

    await page.run(check)


async def test_show_earlier_asks_for_the_page_before_the_oldest_message_and_shows_it_on_top(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    newest = [
        {**message("m5", "agent", "received", "five"), "order": 5},
        {**message("m6", "agent", "received", "six"), "order": 6},
    ]
    connection = await open_shell(page, hostbridge, apps(), chat_view(*newest, more=True))
    await page.run(lambda p: p.get_by_test_id("timeline-earlier").click())
    frame = await connection.expect("ui.event")
    assert frame == {
        "type": "ui.event",
        "app_scope": "chat",
        "instance_id": CHAT,
        "event": {"kind": "timeline.earlier", "before_order": 5, "before_id": "m5"},
    }
    older = [
        {**message("m3", "agent", "received", "three"), "order": 3},
        {**message("m4", "agent", "received", "four"), "order": 4},
    ]
    await connection.send(
        [*item_frames(*older), {"type": "shell.page", "instance_id": CHAT, "more": False}]
    )

    def check(p: Page) -> None:
        expect(p.get_by_test_id("message-body")).to_have_text(["three", "four", "five", "six"])
        expect(p.get_by_test_id("timeline-earlier")).to_be_hidden()

    await page.run(check)


async def test_html_in_markdown_renders_as_inert_text(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    script = "<script>window.__xss=1</script>"
    image = "<img src=x onerror=window.__xss=2>"
    # And trees no honest hostbridge sends: the Shell must not trust them either.
    forged = [
        {"t": "script", "c": [{"t": "text", "v": "window.__xss=3"}]},
        {"t": "img", "src": "x", "onerror": "window.__xss=4", "c": []},
        {"t": "p", "onclick": "window.__xss=5", "c": [{"t": "text", "v": "forged"}]},
    ]
    await open_shell(
        page,
        hostbridge,
        chat_view(
            message("m1", "agent", "received", f"before {script} after"),
            message("m2", "agent", "received", image),
            message("m3", "agent", "received", f"{script}\n\n{image}"),
            message("m4", "agent", "received", "", tree=forged),
        ),
    )

    def check(p: Page) -> None:
        timeline = p.get_by_test_id("timeline")
        expect(p.get_by_test_id("message")).to_have_count(4)
        expect(p.get_by_test_id("message").nth(0)).to_contain_text(f"before {script} after")
        expect(p.get_by_test_id("message").nth(1)).to_contain_text(image)
        expect(p.get_by_test_id("message").nth(3)).to_contain_text("forged")
        expect(timeline.locator("script, img, iframe, [onerror], [onclick]")).to_have_count(0)
        assert p.evaluate("typeof window.__xss") == "undefined"

    await page.run(check)
    assert "/x" not in hostbridge.http_paths  # the img never loaded


async def test_a_javascript_link_is_not_a_link_and_http_links_open_safely(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    forged = [{"t": "a", "href": "javascript:window.__xss=1", "c": [{"t": "text", "v": "forged"}]}]
    await open_shell(
        page,
        hostbridge,
        chat_view(
            message(
                "m1",
                "agent",
                "received",
                "[bad](javascript:window.__xss=1) and [ok](https://example.test/a?b=1)",
            ),
            message("m2", "agent", "received", "", tree=forged),
        ),
    )

    def check(p: Page) -> None:
        links = p.get_by_test_id("timeline").locator("a")
        expect(links).to_have_count(1)
        expect(links).to_have_text("ok")
        expect(links).to_have_attribute("href", "https://example.test/a?b=1")
        expect(links).to_have_attribute("rel", "noopener noreferrer")
        expect(links).to_have_attribute("target", "_blank")
        expect(p.get_by_test_id("message").nth(0)).to_contain_text("[bad](javascript:")
        expect(p.get_by_test_id("message").nth(1)).to_have_text(re.compile("forged"))
        assert p.evaluate("typeof window.__xss") == "undefined"

    await page.run(check)


async def test_enter_sends_a_composer_submit_and_clears_the_input(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, apps(), chat_view())

    def type_and_send(p: Page) -> None:
        box = p.get_by_test_id("composer-input")
        expect(box).to_be_enabled()
        box.click()
        box.press_sequentially("first line")
        box.press("Shift+Enter")
        box.press_sequentially("second line")
        expect(box).to_have_value("first line\nsecond line")
        box.press("Enter")
        expect(box).to_have_value("")

    await page.run(type_and_send)
    frame = await connection.expect("ui.event")
    first_id = frame["event"].pop("client_id")
    assert frame == {
        "type": "ui.event",
        "app_scope": "chat",
        "instance_id": CHAT,
        "event": {"kind": "composer.submit", "text": "first line\nsecond line"},
    }

    def click_send(p: Page) -> None:
        p.get_by_test_id("composer-input").fill("via the button")
        p.get_by_test_id("composer-send").click()
        expect(p.get_by_test_id("composer-input")).to_have_value("")

    await page.run(click_send)
    frame = await connection.expect("ui.event")
    second_id = frame["event"].pop("client_id")
    assert frame["event"] == {"kind": "composer.submit", "text": "via the button"}
    # Each submit carries its own id, which the chat makes its message id: a resubmit of the
    # same id after a lost connection is one message, two typed messages are two.
    assert re.fullmatch(r"[0-9a-f-]{36}", first_id) and re.fullmatch(r"[0-9a-f-]{36}", second_id)
    assert first_id != second_id


async def test_blank_text_is_not_sent_and_a_disabled_composer_sends_nothing(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, chat_view())

    def press_enter_on_blank_then_on_text(p: Page) -> None:
        box = p.get_by_test_id("composer-input")
        box.fill("  \n ")
        box.press("Enter")
        expect(box).to_have_value("  \n ")
        box.fill("real")
        box.press("Enter")
        expect(box).to_have_value("")

    await page.run(press_enter_on_blank_then_on_text)
    # The socket keeps order: had the blank text gone out, it would come first.
    assert (await connection.expect("ui.event"))["event"]["text"] == "real"
    await connection.send(chat_view(enabled=False))

    def check(p: Page) -> None:
        expect(p.get_by_test_id("composer-input")).to_be_disabled()
        expect(p.get_by_test_id("composer-send")).to_be_disabled()

    await page.run(check)
    assert connection.pending() == []


async def test_a_message_too_long_to_send_stays_in_the_box(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, chat_view())
    long_text = "é" * 40_000  # 80 KB of UTF-8: over hostbridge's 64 KiB frame limit

    def try_to_send(p: Page) -> None:
        box = p.get_by_test_id("composer-input")
        box.fill(long_text)
        box.press("Enter")
        expect(p.get_by_test_id("notice")).to_have_attribute("data-level", "error")
        expect(box).to_have_value(long_text)

    await page.run(try_to_send)
    assert connection.pending() == []


async def test_retry_on_a_failed_message_sends_message_retry(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(
        page,
        hostbridge,
        chat_view(
            message("m1", "user", "sent", "fine"),
            message("m2", "user", "failed", "did not go"),
        ),
    )

    def click_retry(p: Page) -> None:
        failed = p.locator('[data-testid="message"][data-state="failed"]')
        expect(failed).to_have_attribute("data-message-id", "m2")
        failed.get_by_test_id("retry").click()

    await page.run(click_retry)
    frame = await connection.expect("ui.event")
    assert frame == {
        "type": "ui.event",
        "app_scope": "chat",
        "instance_id": CHAT,
        "event": {"kind": "message.retry", "message_id": "m2"},
    }
    await connection.send(
        chat_view(message("m1", "user", "sent", "fine"), message("m2", "user", "pending", "x"))
    )
    await page.run(lambda p: expect(p.get_by_test_id("retry")).to_have_count(0))


async def test_the_runtime_badge_follows_shell_runtime(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    hostbridge.runtime_state = "synchronizing"
    connection = await open_shell(page, hostbridge, chat_view())
    badge_states = [
        ("online", "Online"),
        ("reconnecting", "Reconnecting"),
        ("offline_degraded", "Offline — messages will be sent when the connection returns"),
        ("stopped", "Stopped"),
    ]
    await page.run(
        lambda p: expect(p.get_by_test_id("runtime-state")).to_have_attribute(
            "data-state", "synchronizing"
        )
    )
    for state, text in badge_states:
        await connection.send({"type": "shell.runtime", "state": state})

        def check(p: Page, state: str = state, text: str = text) -> None:
            badge = p.get_by_test_id("runtime-state")
            expect(badge).to_have_attribute("data-state", state)
            expect(badge).to_contain_text(text)

        await page.run(check)


async def test_a_reload_reconnects_with_the_stored_token_and_renders_the_next_snapshot(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    first = await open_shell(page, hostbridge, chat_view(message("a", "agent", "received", "A")))

    def check_first(p: Page) -> None:
        expect(p.get_by_test_id("message-body")).to_have_text("A")
        assert "token" not in p.url, "the token is stripped from the address bar"
        assert p.evaluate("sessionStorage.getItem('lineup.token')") == hostbridge.token

    await page.run(check_first)
    hostbridge.on_ready = [chat_view(message("b", "agent", "received", "B"))]
    await page.run(lambda p: p.reload())
    second = await hostbridge.next_connection()
    await second.expect("shell.ready")
    with trio.fail_after(FRAME_TIMEOUT_S):
        await first.closed.wait()

    def check_second(p: Page) -> None:
        expect(p.get_by_test_id("message")).to_have_count(1)
        expect(p.get_by_test_id("message")).to_have_attribute("data-message-id", "b")

    await page.run(check_second)
    assert hostbridge.refused == []


async def test_a_dropped_socket_shows_disconnected_and_reconnects(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    first = await open_shell(page, hostbridge, chat_view(message("a", "agent", "received", "A")))
    await page.run(lambda p: expect(p.get_by_test_id("composer-send")).to_be_attached())
    await first.close()

    def check_disconnected(p: Page) -> None:
        banner = p.get_by_test_id("connection-banner")
        expect(banner).to_contain_text("Disconnected from the runtime")
        expect(p.get_by_test_id("runtime-state")).to_have_attribute("data-state", "disconnected")
        expect(p.get_by_test_id("composer-send")).to_be_disabled()
        expect(p.get_by_test_id("message-body")).to_have_text("A")  # the last snapshot stays

    await page.run(check_disconnected)
    second = await hostbridge.next_connection()
    await second.expect("shell.ready")

    def check_back(p: Page) -> None:
        expect(p.get_by_test_id("connection-banner")).to_be_hidden()
        expect(p.get_by_test_id("runtime-state")).to_have_attribute("data-state", "online")

    await page.run(check_back)


async def test_a_refused_token_stops_reconnecting_and_says_why(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    """Counted by this page's own sockets: the fake's port is an ephemeral one, which an earlier
    test's tab, reconnecting as its context closed, may have knocked on too (with its own token,
    so refused there as well). The page's timers are held until the refusal shows: on a loaded
    machine its silence watchdog (4 s) took the slow refused handshake for a dead socket, and
    its retry was a second socket (seen once in CI). Then every timer it has is fired: a Shell
    still retrying would open a socket."""

    def refused(p: Page) -> int:
        p.add_init_script(COUNT_SOCKETS)
        hold_the_timers(p, ahead_s=5.0)  # far enough that a slow call cannot pause in the past
        p.goto(hostbridge.shell_url(token="wrong"))
        banner = p.get_by_test_id("connection-banner")
        expect(banner).to_contain_text("refused")
        p.clock.run_for(60_000)
        expect(banner).to_contain_text("refused")
        opened: int = p.evaluate("window.__lineupSockets")
        return opened

    assert await page.run(refused) == 1
    assert TOKEN_REFUSED in hostbridge.refused


async def test_without_a_token_the_shell_does_not_connect(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    await page.run(lambda p: p.goto(hostbridge.url + "/"))
    await page.run(
        lambda p: expect(p.get_by_test_id("connection-banner")).to_contain_text("No access token")
    )
    assert not any(url.startswith("ws") for url in page.requests)


async def test_the_app_switcher_focuses_and_closes_instances(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    connection = await open_shell(page, hostbridge, apps(BOARD, board=True), chat_view())

    def check_board_in_front(p: Page) -> None:
        switcher = p.get_by_test_id("app-switcher")
        expect(switcher.get_by_test_id("app-tab")).to_have_count(2)
        expect(switcher.locator('[aria-current="page"]')).to_have_text("Whiteboard")
        expect(switcher.get_by_test_id("app-close")).to_have_count(1)  # chat cannot be closed
        expect(p.get_by_test_id("app-placeholder")).to_be_visible()
        expect(p.get_by_test_id("chat")).to_be_hidden()
        switcher.get_by_role("button", name="Chat").click()

    await page.run(check_board_in_front)
    assert await connection.expect("ui.intent") == {
        "type": "ui.intent",
        "intent": "focus",
        "instance_id": CHAT,
    }
    await connection.send(apps(CHAT, board=True))

    def close_board(p: Page) -> None:
        expect(p.get_by_test_id("chat")).to_be_visible()
        p.get_by_role("button", name="Close Whiteboard").click()

    await page.run(close_board)
    assert await connection.expect("ui.intent") == {
        "type": "ui.intent",
        "intent": "close",
        "instance_id": BOARD,
    }


async def test_notices_are_shown_by_level(page: ShellPage, hostbridge: FakeHostbridge) -> None:
    connection = await open_shell(page, hostbridge, chat_view())
    await connection.send({"type": "shell.notice", "level": "error", "text": "<b>Disk</b> full"})
    await connection.send({"type": "shell.notice", "level": "info", "text": "Saved"})

    def check(p: Page) -> None:
        notices = p.get_by_test_id("notice")
        expect(notices).to_have_count(2)
        expect(notices.nth(0)).to_have_attribute("data-level", "error")
        expect(notices.nth(0)).to_have_attribute("role", "alert")
        expect(notices.nth(0)).to_contain_text("<b>Disk</b> full")
        expect(notices.nth(1)).to_have_attribute("data-level", "info")
        notices.nth(0).get_by_role("button", name="Dismiss notification").click()
        expect(notices).to_have_count(1)

    await page.run(check)


async def test_a_request_off_loopback_fails_in_the_browser_and_is_seen(page: ShellPage) -> None:
    """The guard every browser test runs under (conftest's `CHROMIUM_ARGS`): a request off
    127.0.0.1, by name or by address, fails at a proxy that is not there, so it never reaches
    the network, and the test sees it asked for."""
    off = ["http://example.test/a", "http://192.0.2.1/b"]  # reserved: never a real host

    def ask(p: Page) -> tuple[list[str], list[tuple[str, str | None]]]:
        failed: list[tuple[str, str | None]] = []
        p.on("requestfailed", lambda request: failed.append((request.url, request.failure)))
        settled = p.evaluate(
            "(urls) => Promise.allSettled(urls.map((u) => fetch(u))).then("
            "(all) => all.map((one) => one.status))",
            off,
        )
        return settled, failed

    settled, failed = await page.run(ask)
    assert settled == ["rejected", "rejected"]
    assert sorted(failed) == [(url, "net::ERR_PROXY_CONNECTION_FAILED") for url in sorted(off)]
    assert sorted(page.off_loopback()) == sorted(off)
    page.requests.clear()  # seen, as they must be: the fixture's own check is for the Shell


async def test_no_request_leaves_loopback(page: ShellPage, hostbridge: FakeHostbridge) -> None:
    await open_shell(
        page,
        hostbridge,
        chat_view(
            message(
                "m1",
                "agent",
                "received",
                "![remote](https://img.example.test/a.png) [site](https://example.test) "
                "<img src=https://img.example.test/b.png>",
            )
        ),
    )
    await page.run(lambda p: expect(p.get_by_test_id("message")).to_contain_text("[image: remote]"))
    assert page.requests, "the listener saw the Shell's own requests"
    assert any(url.startswith("ws://127.0.0.1") for url in page.requests)
    assert page.off_loopback() == []
