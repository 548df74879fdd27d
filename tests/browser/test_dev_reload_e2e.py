"""Reload on save as the developer sees it in the Shell, in real Chromium against the real
runtime (`--dev-app`, the sandboxed app process): an edit shows `<title> reloaded` (a status
notice) while the app's tab stays; a broken edit shows the terminal's line as an error notice
(an alert, kept until dismissed, Escape dismisses it), and the app keeps answering. Browser
waits are Playwright's auto-waiting `expect`; runtime waits are bounded. No sleeps."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Page, expect

from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.reload_app import BROKEN, REWORDED, TITLE, write_dev_app
from lineup.tests.support.runtime import CONVERSATION, agent_client, start_runtime

from .conftest import ShellPage

WAIT_MS: Final = 15_000  # a real runtime: processes, an HTTP AppServer, a manifest subprocess


async def test_the_shell_shows_a_reload_and_a_broken_edit_with_its_line(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    folder = write_dev_app(data_dir / "apps" / "hello_dev")
    runtime = await start_runtime(nursery, data_dir / "rt", demo_agent=False, dev_apps=(folder,))
    agent = AgentView(await agent_client(nursery, runtime.appserver_url))
    revision = await agent.inventory()
    await agent.client.call_tool(CONVERSATION, "hello.greet", {"name": "a"}, revision, call_id="1")
    assert (await agent.terminal("1"))["payload"]["result"] == {"text": "hello a"}

    def shell_with_the_app(p: Page) -> None:
        p.goto(runtime.shell_url)
        expect(p.get_by_test_id("runtime-state")).to_have_attribute(
            "data-state", "online", timeout=WAIT_MS
        )
        expect(p.get_by_test_id("app-tab").filter(has_text=TITLE)).to_have_count(1)

    await page.run(shell_with_the_app)

    write_dev_app(folder, REWORDED)

    def reloaded(p: Page) -> None:
        notice = p.get_by_test_id("notice").filter(has_text=f"{TITLE} reloaded")
        expect(notice).to_have_attribute("data-level", "info", timeout=WAIT_MS)
        expect(notice).to_have_attribute("role", "status")
        expect(p.get_by_test_id("app-tab").filter(has_text=TITLE)).to_have_count(1)

    await page.run(reloaded)  # one notice: a locator of two would fail
    await agent.client.call_tool(CONVERSATION, "hello.greet", {"name": "b"}, revision, call_id="2")
    assert (await agent.terminal("2"))["payload"]["result"] == {"text": "hi b"}

    write_dev_app(folder, BROKEN)
    line = f"lineup: dev app {folder}: app_import_failed hello_dev: SyntaxError"

    def refused(p: Page) -> None:
        notice = p.get_by_test_id("notice").filter(has_text=line)
        expect(notice).to_have_attribute("data-level", "error", timeout=WAIT_MS)
        expect(notice).to_have_attribute("role", "alert")
        expect(notice).to_contain_text("__init__.py, line")
        # Both instances (one per `launch` call) live on.
        expect(p.get_by_test_id("app-tab").filter(has_text=TITLE)).to_have_count(2)
        notice.get_by_test_id("notice-dismiss").focus()  # Tab reaches it; Escape on it
        p.keyboard.press("Escape")
        expect(notice).to_have_count(0)

    await page.run(refused)
    # The version before still answers.
    await agent.client.call_tool(CONVERSATION, "hello.greet", {"name": "c"}, revision, call_id="3")
    assert (await agent.terminal("3"))["payload"]["result"] == {"text": "hi c"}
    assert page.console_errors == []
