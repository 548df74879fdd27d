"""The runtime owns the lifecycle of a tool linked to an MCP App's page (issue 30), in real
Chromium against a real runtime, with the published "Get Time" page unchanged.

The app (`tests/support/mcp_time_app.py`) is a plain tool linked to its page (`ui`): it never
opens its Surface nor relays anything. The Agent's call opens the page, which is told the
call (`hostContext.toolInfo`), its input, and then its real result as the spec's
CallToolResult, or `tool-cancelled` when the call ends without one. What the Shell posted to
the page is read from the recorder test_mcp_app_host_e2e.py puts in every frame.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import trio
from playwright.sync_api import Page, expect

from lineup.sdk import MiniApp
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.browser import load_shell
from lineup.tests.support.mcp_time_app import SlowTimeApp, TimeApp
from lineup.tests.support.runtime import CONVERSATION, agent_client, start_runtime_with_app

from .conftest import ShellPage
from .test_mcp_app_host_e2e import HOST_SAID, app, host_said, published_page

WAIT_MS: Final = 15_000


async def called(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage, app_class: type[MiniApp]
) -> AgentView:
    """The runtime with the Get Time page, the Shell loaded (recording what it posts to a
    frame), and the Agent's call `c-time` of `gettime.get-time` made."""
    web = data_dir / "web"
    web.mkdir(parents=True)
    (web / "index.html").write_bytes(published_page())
    runtime = await start_runtime_with_app(nursery, data_dir, app_class, title="Get Time")
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT_MS / 1000)
    revision = await agent.inventory()
    await page.run(lambda p: p.context.add_init_script(HOST_SAID))
    await page.run(load_shell(runtime.shell_url, wait_ms=WAIT_MS))
    await agent.client.call_tool(CONVERSATION, "gettime.get-time", {}, revision, call_id="c-time")
    return agent


def notified(p: Page, method: str) -> list[dict[str, Any]]:
    return [m.get("params", {}) for m in host_said(p) if m.get("method") == method]


async def test_the_agents_call_opens_the_page_which_gets_the_call_and_its_real_result(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    agent = await called(nursery, data_dir, page, TimeApp)
    terminal = await agent.terminal("c-time")
    assert terminal["type"] == "lineup.v1.tool.result", terminal
    result = terminal["payload"]["result"]

    def told(p: Page) -> None:
        expect(app(p).locator("#server-time")).to_have_text(result["time"], timeout=WAIT_MS)
        init = next(m["result"] for m in host_said(p) if "hostContext" in m.get("result", {}))
        info = init["hostContext"]["toolInfo"]
        assert info["id"] == "c-time"
        assert info["tool"]["name"] == "gettime.get-time"
        assert info["tool"]["inputSchema"]["type"] == "object"
        assert notified(p, "ui/notifications/tool-input") == [{"arguments": {}}]
        [shown] = notified(p, "ui/notifications/tool-result")
        assert shown["isError"] is False
        assert shown["structuredContent"] == result
        assert json.loads(shown["content"][0]["text"]) == result  # the whole result as text
        assert notified(p, "ui/notifications/tool-cancelled") == []

    await page.run(told)


async def test_a_call_that_expires_is_told_to_its_page_as_cancelled(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    agent = await called(nursery, data_dir, page, SlowTimeApp)
    terminal = await agent.terminal("c-time")  # its app never answers: its deadline ends it
    code = terminal["payload"]["code"]
    assert code == "operation_expired", terminal

    def told(p: Page) -> None:
        frame = app(p)
        frame.wait_for_function(
            "() => window.__hostSaid.some((m) => m.method === 'ui/notifications/tool-cancelled')",
            timeout=WAIT_MS,
        )
        assert notified(p, "ui/notifications/tool-input") == [{"arguments": {}}]
        assert notified(p, "ui/notifications/tool-cancelled") == [{"reason": code}]
        assert notified(p, "ui/notifications/tool-result") == []
        expect(frame.locator("#server-time")).to_have_text("Loading...")

    await page.run(told)
