"""The runtime owns the lifecycle of a tool linked to an MCP App's page (issue 30), in real
Chromium against a real runtime, with the published "Get Time" page unchanged.

The app (`tests/support/mcp_time_app.py`) is a plain tool linked to its page (`ui`): it never
opens its Surface nor relays anything. The Agent's call opens the page, which is told the
call (`hostContext.toolInfo`), its input, and then its real result as the spec's
CallToolResult, or `tool-cancelled` when the call ends without one. The page's own "Get Server
Time" button calls the tool too (`tools/call` `get-time`, the spec's bare name), as a local UI
action the runtime checks and has the app run. What the Shell posted to the page is read from
the recorder test_mcp_app_host_e2e.py puts in every frame.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import trio
from playwright.sync_api import Page, expect

from lineup.actors.kernel import ActorKind, AuditRecord
from lineup.sdk import MiniApp
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.browser import load_shell
from lineup.tests.support.mcp_progress_app import PAGE, CountApp
from lineup.tests.support.mcp_time_app import (
    HeldTimeApp,
    ModelOnlyTimeApp,
    SlowTimeApp,
    TimeApp,
)
from lineup.tests.support.runtime import (
    CONVERSATION,
    Runtime,
    agent_client,
    start_runtime_with_app,
)
from lineup.tests.support.tree import attach, audit_rows

from .conftest import ShellPage
from .test_mcp_app_host_e2e import HOST_SAID, app, host_said, published_page

WAIT_MS: Final = 15_000


async def called(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage, app_class: type[MiniApp]
) -> tuple[Runtime, AgentView]:
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
    return runtime, agent


def notified(p: Page, method: str) -> list[dict[str, Any]]:
    return [m.get("params", {}) for m in host_said(p) if m.get("method") == method]


async def test_the_agents_call_opens_the_page_which_gets_the_call_and_its_real_result(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    _, agent = await called(nursery, data_dir, page, TimeApp)
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
    _, agent = await called(nursery, data_dir, page, SlowTimeApp)
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


async def test_closing_the_app_while_its_call_runs_tells_the_page_cancelled_before_teardown(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    _, agent = await called(nursery, data_dir, page, HeldTimeApp)

    def closed(p: Page) -> str:
        app(p).wait_for_function(
            "() => window.__hostSaid.some((m) => m.method === 'ui/notifications/tool-input')",
            timeout=WAIT_MS,
        )
        with p.expect_console_message(
            lambda m: m.text.startswith("Tool call cancelled:"), timeout=WAIT_MS
        ) as seen:
            p.get_by_role("button", name="Close Get Time").click()
        text: str = seen.value.text
        return text

    assert await page.run(closed) == "Tool call cancelled: app_closed"  # the page's own log
    terminal = await agent.terminal("c-time")
    assert terminal["payload"]["code"] == "app_closed", terminal


def answers_to_the_button(p: Page, before: int) -> list[dict[str, Any]]:
    """Click the page's "Get Server Time" and return the Shell's answers that came after."""
    frame = app(p)
    frame.locator("#get-time-btn").click()
    frame.wait_for_function(
        "(before) => window.__hostSaid.filter((m) => 'id' in m).length > before",
        arg=before,
        timeout=WAIT_MS,
    )
    return [m for m in host_said(p) if "id" in m][before:]


async def test_the_pages_own_button_calls_its_apps_tool_and_shows_the_new_time(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime, agent = await called(nursery, data_dir, page, TimeApp)
    first = (await agent.terminal("c-time"))["payload"]["result"]["time"]

    def clicked(p: Page) -> dict[str, Any]:
        expect(app(p).locator("#server-time")).to_have_text(first, timeout=WAIT_MS)
        before = len([m for m in host_said(p) if "id" in m])
        [answer] = answers_to_the_button(p, before)
        result: dict[str, Any] = answer["result"]
        expect(app(p).locator("#server-time")).to_have_text(
            result["structuredContent"]["time"], timeout=WAIT_MS
        )
        return result

    result = await page.run(clicked)
    assert result["isError"] is False
    assert result["structuredContent"]["time"] != first  # run again, for the page
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    reader = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "reader")

    def called_once(rows: tuple[AuditRecord, ...]) -> bool:
        return len(rows) == 1

    [row] = await audit_rows(reader, called_once, event_prefix="focus.surface_tool_called")
    assert (row.code, row.message_type) == (None, "gettime.get-time")
    assert first not in json.dumps(row.model_dump(mode="json"))  # never the result


async def test_the_pages_call_of_a_tool_only_the_agent_may_call_is_refused_with_its_code(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime, agent = await called(nursery, data_dir, page, ModelOnlyTimeApp)
    first = (await agent.terminal("c-time"))["payload"]["result"]["time"]

    def clicked(p: Page) -> dict[str, Any]:
        expect(app(p).locator("#server-time")).to_have_text(first, timeout=WAIT_MS)
        before = len([m for m in host_said(p) if "id" in m])
        [answer] = answers_to_the_button(p, before)
        expect(app(p).locator("#server-time")).to_have_text("[ERROR]", timeout=WAIT_MS)
        error: dict[str, Any] = answer["error"]
        return error

    error = await page.run(clicked)
    assert (error["code"], error["data"]["code"]) == (-32000, "tool_not_visible")
    reader = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "reader")

    def refused(rows: tuple[AuditRecord, ...]) -> bool:
        return any(r.code == "tool_not_visible" for r in rows)

    rows = await audit_rows(reader, refused, event_prefix="focus.surface_refused")
    assert any(r.message_type == "focus.ui.surface.tool_call" for r in rows)


async def test_a_pages_own_call_gets_the_tools_progress_before_its_result(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    web = data_dir / "web"
    web.mkdir(parents=True)
    (web / "index.html").write_text(PAGE)
    runtime = await start_runtime_with_app(nursery, data_dir, CountApp, title="Counter")
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT_MS / 1000)
    revision = await agent.inventory()
    await page.run(load_shell(runtime.shell_url, wait_ms=WAIT_MS))
    await agent.client.call_tool(CONVERSATION, "counter.count", {}, revision, call_id="c-count")
    assert (await agent.terminal("c-count"))["payload"]["result"] == {"counted": 2}

    def counted(p: Page) -> list[dict[str, Any]]:
        frame = app(p)
        # The frame may still hold the document before the page's (no `__said` yet).
        frame.wait_for_function(
            "() => window.__said?.some((m) => m.method === 'ui/notifications/tool-result')",
            timeout=WAIT_MS,
        )
        asked = frame.evaluate("() => window.count()")
        frame.wait_for_function(
            "(id) => window.__said.some((m) => m.id === id)", arg=asked, timeout=WAIT_MS
        )
        said: list[dict[str, Any]] = frame.evaluate("() => window.__said")
        shown = next(i for i, m in enumerate(said) if "tool-result" in str(m.get("method")))
        return said[shown + 1 :]

    after = await page.run(counted)
    progress = [m["params"] for m in after if m.get("method") == "notifications/progress"]
    assert progress == [
        {"progressToken": "tok", "progress": 1, "total": 2, "message": "step 1"},
        {"progressToken": "tok", "progress": 2, "total": 2, "message": "step 2"},
    ]
    [answer] = [m for m in after if "id" in m]
    assert answer["result"]["structuredContent"] == {"counted": 2}
    told = [i for i, m in enumerate(after) if m.get("method") == "notifications/progress"]
    assert after.index(answer) > max(told)  # the progress came first
