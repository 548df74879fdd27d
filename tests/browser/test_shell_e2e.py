"""The whole runtime in real Chromium: the printed Shell URL, the chat, the AppServer, the Agent.

Each test starts the real tree (`start_runtime`: every actor its own process, the embedded
reference AppServer and, unless told otherwise, the demo Agent), opens the Shell URL the runtime
prints and checks what the user sees against what the AppServer recorded. Browser waits are
Playwright's auto-waiting `expect` with `WAIT_MS`; trio waits run under `fail_after(WAIT_S)`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import trio
from playwright.sync_api import Locator, Page, expect

from lineup.ops.agent import AgentClient
from lineup.tests.support.browser import load_shell
from lineup.tests.support.runtime import (
    CONVERSATION,
    Runtime,
    agent_client,
    messages_at_agent,
    start_runtime,
)

from .conftest import ShellPage

WAIT_MS: Final = 10_000  # a real runtime: processes, an HTTP AppServer, a long-polling Agent
WAIT_S: Final = WAIT_MS / 1000
GREETING: Final = "Welcome to LineUp"
XSS_MARKDOWN: Final = (
    "Look: <script>window.__xss=1</script>\n"
    "\n"
    '<img src=x onerror="window.__xss=2">\n'
    "\n"
    "and [click me](javascript:alert(1)) please"
)


def messages(p: Page, author: str | None = None) -> Locator:
    selector = '[data-testid="message"]'
    if author is not None:
        selector += f'[data-author="{author}"]'
    return p.get_by_test_id("timeline").locator(selector)


async def open_shell(page: ShellPage, runtime: Runtime, *, greeted: bool = True) -> None:
    """Open the printed URL; wait until the runtime is online and the chat can be used."""

    def load(p: Page) -> None:
        load_shell(runtime.shell_url, wait_ms=WAIT_MS)(p)
        expect(p.get_by_test_id("composer-input")).to_be_enabled(timeout=WAIT_MS)
        if greeted:
            greeting = messages(p, "agent").filter(has_text=GREETING)
            expect(greeting).to_have_count(1, timeout=WAIT_MS)

    await page.run(load)


# Records every state the user's message with this text shows, in order. A MutationObserver
# runs after each task, so it sees every snapshot the Shell rendered, however brief.
WATCH_STATES: Final = """text => {
  window.__states = [];
  const timeline = document.querySelector('[data-testid="timeline"]');
  const record = () => {
    for (const el of timeline.querySelectorAll('[data-testid="message"][data-author="user"]')) {
      const body = el.querySelector('[data-testid="message-body"]');
      if (body.textContent !== text || window.__states.at(-1) === el.dataset.state) continue;
      window.__states.push(el.dataset.state);
    }
  };
  const options = { subtree: true, childList: true, attributes: true };
  new MutationObserver(record).observe(timeline, options);
}"""


async def send_from_composer(page: ShellPage, text: str) -> None:
    """Type `text` and press Enter; the user's message shows at once, then reaches `sent`."""

    def type_and_send(p: Page) -> None:
        box = p.get_by_test_id("composer-input")
        p.evaluate(WATCH_STATES, text)
        box.click()
        box.press_sequentially(text)
        box.press("Enter")
        expect(box).to_have_value("", timeout=WAIT_MS)
        mine = messages(p, "user").filter(has_text=text)
        expect(mine).to_have_count(1, timeout=WAIT_MS)
        expect(mine).to_have_attribute("data-state", "sent", timeout=WAIT_MS)
        expect(mine.get_by_test_id("message-status")).to_have_count(0, timeout=WAIT_MS)
        # The local echo, `pending` until the AppServer took it, then `sent`, and nothing
        # else. The echo may never be painted when the AppServer takes the message before the
        # Shell's next render (views are snapshots: a newer one replaces one not yet shown),
        # so `pending` is not required here: test_im_link proves a message stays `pending`
        # while the AppServer is down, and test_shell_render how a `pending` one looks.
        assert p.evaluate("window.__states") in (["pending", "sent"], ["sent"])

    await page.run(type_and_send)


async def user_texts_at_agent(client: AgentClient, text: str) -> list[dict[str, Any]]:
    with trio.fail_after(WAIT_S):
        recorded = await messages_at_agent(client)
    return [
        m
        for m in recorded
        if (m.get("sender") or {}).get("kind") == "user"
        and (m.get("payload") or {}).get("markdown") == text
    ]


def assert_stayed_on_loopback_without_errors(page: ShellPage) -> None:
    assert page.off_loopback() == [], "a request left 127.0.0.1"
    assert page.console_errors == []


def timeline_items(p: Page) -> list[tuple[str, str, str]]:
    """(id, author, state) of every message in the timeline, top to bottom."""
    items: list[list[str]] = messages(p).evaluate_all(
        "els => els.map(e => [e.dataset.messageId, e.dataset.author, e.dataset.state])"
    )
    return [(message_id, author, state) for message_id, author, state in items]


async def test_the_printed_shell_url_shows_the_demo_agents_greeting_and_goes_online(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime = await start_runtime(nursery, data_dir)
    await open_shell(page, runtime)

    def check(p: Page) -> None:
        greeting = messages(p, "agent").filter(has_text=GREETING)
        expect(greeting).to_have_attribute("data-state", "received", timeout=WAIT_MS)
        expect(greeting.locator("strong")).to_have_text("Welcome to LineUp!", timeout=WAIT_MS)
        expect(p.get_by_test_id("runtime-state")).to_have_text("Online", timeout=WAIT_MS)
        expect(p.get_by_test_id("connection-banner")).to_be_hidden(timeout=WAIT_MS)
        assert "token" not in p.url, "the token is stripped from the address bar"
        assert p.evaluate("window.__cspViolations") == []

    await page.run(check)
    assert_stayed_on_loopback_without_errors(page)


async def test_a_message_sent_with_enter_echoes_is_sent_answered_and_reaches_the_appserver_once(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime = await start_runtime(nursery, data_dir)
    agent = await agent_client(nursery, runtime.appserver_url)
    await open_shell(page, runtime)
    text = "Plan my week, please"
    await send_from_composer(page, text)

    def check_answer(p: Page) -> None:
        reply = messages(p, "agent").filter(has_text="You said")
        expect(reply).to_have_count(1, timeout=WAIT_MS)
        expect(reply.locator("blockquote")).to_have_text(text, timeout=WAIT_MS)
        # Greeting, the user's message, the answer: in that order.
        expect(messages(p)).to_have_count(3, timeout=WAIT_MS)
        expect(messages(p).nth(0)).to_contain_text(GREETING, timeout=WAIT_MS)
        expect(messages(p).nth(1)).to_have_attribute("data-author", "user", timeout=WAIT_MS)
        expect(messages(p).nth(2)).to_contain_text("You said", timeout=WAIT_MS)

    await page.run(check_answer)
    recorded = await user_texts_at_agent(agent, text)
    assert len(recorded) == 1
    assert recorded[0]["conversation_id"] == CONVERSATION
    assert_stayed_on_loopback_without_errors(page)


async def test_html_and_javascript_links_from_the_agent_render_as_inert_text(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime = await start_runtime(nursery, data_dir)
    agent = await agent_client(nursery, runtime.appserver_url)
    await open_shell(page, runtime)
    with trio.fail_after(WAIT_S):
        await agent.say(CONVERSATION, XSS_MARKDOWN)

    def check(p: Page) -> None:
        hostile = messages(p, "agent").filter(has_text="click me")
        expect(hostile).to_have_count(1, timeout=WAIT_MS)
        expect(hostile).to_contain_text("<script>window.__xss=1</script>", timeout=WAIT_MS)
        expect(hostile).to_contain_text('<img src=x onerror="window.__xss=2">', timeout=WAIT_MS)
        timeline = p.get_by_test_id("timeline")
        expect(timeline.locator("script, img, iframe, [onerror]")).to_have_count(0, timeout=WAIT_MS)
        expect(p.locator("a[href^=javascript], a[href^=JAVASCRIPT]")).to_have_count(
            0, timeout=WAIT_MS
        )
        expect(hostile.locator("a")).to_have_count(0, timeout=WAIT_MS)
        assert p.evaluate("typeof window.__xss") == "undefined"
        assert p.evaluate("window.__cspViolations") == []

    await page.run(check)
    assert_stayed_on_loopback_without_errors(page)


async def test_a_reload_shows_the_same_timeline_without_the_token_again(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime = await start_runtime(nursery, data_dir)
    await open_shell(page, runtime)
    await send_from_composer(page, "remember me")

    def settled(p: Page) -> list[tuple[str, str, str]]:
        expect(messages(p, "agent").filter(has_text="You said")).to_have_count(1, timeout=WAIT_MS)
        expect(messages(p)).to_have_count(3, timeout=WAIT_MS)
        assert "token" not in p.url
        return timeline_items(p)

    before = await page.run(settled)
    assert [author for _, author, _ in before] == ["agent", "user", "agent"]

    def reload_and_check(p: Page) -> None:
        p.reload()
        expect(p.get_by_test_id("runtime-state")).to_have_attribute(
            "data-state", "online", timeout=WAIT_MS
        )
        expect(messages(p)).to_have_count(len(before), timeout=WAIT_MS)
        for index, (message_id, author, state) in enumerate(before):
            item = messages(p).nth(index)
            expect(item).to_have_attribute("data-message-id", message_id, timeout=WAIT_MS)
            expect(item).to_have_attribute("data-author", author, timeout=WAIT_MS)
            expect(item).to_have_attribute("data-state", state, timeout=WAIT_MS)
        expect(p.get_by_test_id("connection-banner")).to_be_hidden(timeout=WAIT_MS)
        expect(p.get_by_test_id("composer-input")).to_be_enabled(timeout=WAIT_MS)

    await page.run(reload_and_check)
    sockets = [url for url in page.requests if url.startswith("ws://")]
    assert len(sockets) == 2, "one socket per load, the second with the stored token"
    assert sockets[0] == sockets[1]
    assert_stayed_on_loopback_without_errors(page)


async def test_without_the_demo_agent_the_composer_still_reaches_the_appserver(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    assert "demo-agent" not in [child.name for child in runtime.supervisor.status().children]
    await open_shell(page, runtime, greeted=False)
    text = "anyone there?"
    await send_from_composer(page, text)
    agent = await agent_client(nursery, runtime.appserver_url)
    recorded = await user_texts_at_agent(agent, text)
    assert len(recorded) == 1
    # The Agent side is free for another program: this one answers, and the Shell shows it.
    with trio.fail_after(WAIT_S):
        await agent.say(CONVERSATION, "**Another** agent here")

    def check(p: Page) -> None:
        answer = messages(p, "agent")
        expect(answer).to_have_count(1, timeout=WAIT_MS)
        expect(answer.locator("strong")).to_have_text("Another", timeout=WAIT_MS)
        expect(messages(p, "agent").filter(has_text=GREETING)).to_have_count(0, timeout=WAIT_MS)

    await page.run(check)
    assert_stayed_on_loopback_without_errors(page)
