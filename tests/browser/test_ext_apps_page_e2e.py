"""A page of our own built on the published ext-apps `App` class (issue 30), in real Chromium
against a real runtime: every host method the class has, called as the class calls it, each
answer checked by the class's own schemas (a host answer that does not conform makes the
class throw, and the test sees the error).

The page (`tests/support/ext_apps_page/`) imports the class from the build npm ships
(`@modelcontextprotocol/ext-apps`, pinned and checked, copied beside the page). The Agent's
call of `extpage.echo` opens it; then the page, through the class: calls its app's tools
(`callServerTool`, one of them the page's alone), lists and reads its resources, proposes a
message, asks to open a link, logs, updates the model context, changes display mode, offers a
file, and answers the teardown when the user closes the app.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Final

import trio
from playwright.sync_api import Frame, Page, expect

from lineup import wire
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.browser import load_shell
from lineup.tests.support.ext_apps_page import EXT_APPS_PACKAGE, WEB, ExtAppsPageApp
from lineup.tests.support.npm import NpmPackage, installed
from lineup.tests.support.runtime import CONVERSATION, agent_client, start_runtime_with_app

from .conftest import ShellPage

WAIT_MS: Final = 15_000
FRAME: Final = '[data-testid="surface-frame"]'


def frame_of(p: Page) -> Frame:
    handle = p.locator(FRAME).element_handle(timeout=WAIT_MS)
    frame = handle.content_frame()
    assert frame is not None
    frame.wait_for_selector('body[data-state="ready"]', timeout=WAIT_MS)
    return frame


def call(frame: Frame, method: str, params: Any = None) -> dict[str, Any]:
    """One `App` method, run in the page: its result, or its error ({message, code})."""
    answer: dict[str, Any] = frame.evaluate("([m, p]) => window.call(m, p)", [method, params])
    return answer


async def page_opened(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> tuple[AgentView, dict[str, Any]]:
    """The runtime with the page's app, the Shell loaded, the Agent's call of `extpage.echo`
    answered and shown by the page: the Agent's view, and what the page saw of the host."""
    web = data_dir / "web"
    shutil.copytree(WEB, web)
    shipped = installed(NpmPackage(*EXT_APPS_PACKAGE)) / "dist" / "src" / "app-with-deps.js"
    shutil.copyfile(shipped, web / "app-with-deps.js")
    runtime = await start_runtime_with_app(nursery, data_dir, ExtAppsPageApp, title="Ext Page")
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT_MS / 1000)
    revision = await agent.inventory()
    [inventory] = [m for m in agent.seen if m["type"] == wire.INVENTORY][-1:]
    methods = {t["method"] for t in inventory["payload"]["tools"]}
    assert "extpage.echo" in methods
    assert "extpage.add" not in methods  # the page's alone
    await page.run(load_shell(runtime.shell_url, wait_ms=WAIT_MS))
    await agent.client.call_tool(
        CONVERSATION, "extpage.echo", {"text": "hello"}, revision, call_id="c-echo"
    )
    terminal = await agent.terminal("c-echo")
    assert terminal["payload"]["result"] == {"echo": "hello"}, terminal

    def opened(p: Page) -> dict[str, Any]:
        frame = frame_of(p)
        expect(frame.locator("#result")).to_have_text('{"echo":"hello"}', timeout=WAIT_MS)
        seen: dict[str, Any] = frame.evaluate("() => window.__seen")
        return seen

    return agent, await page.run(opened)


def page_calls(p: Page) -> dict[str, Any]:
    """The methods the runtime answers without the user, each as the class makes it."""
    frame = frame_of(p)
    return {
        "added": call(frame, "callServerTool", {"name": "add", "arguments": {"a": 2, "b": 3}}),
        "bad": call(frame, "callServerTool", {"name": "add", "arguments": {"a": "two"}}),
        "listed": call(frame, "listServerResources"),
        "read": call(frame, "readServerResource", {"uri": "ui://extpage/ui"}),
        "missing": call(frame, "readServerResource", {"uri": "ui://chat/ui"}),
        "mode": call(frame, "requestDisplayMode", {"mode": "fullscreen"}),
        "back": call(frame, "requestDisplayMode", {"mode": "inline"}),
        "logged": call(frame, "sendLog", {"level": "info", "logger": "page", "data": "a line"}),
    }


OFFERED: Final = {
    "contents": [
        {
            "type": "resource",
            "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "notes"},
        }
    ]
}


def asks_the_user(p: Page) -> dict[str, Any]:
    """The methods the user answers: a proposed message, a link, a file to save."""
    frame = frame_of(p)
    message = {"role": "user", "content": [{"type": "text", "text": "proposed by the page"}]}
    proposed = call(frame, "sendMessage", message)
    # Above the chat's message box, for the user to send, edit or discard; the chat is
    # behind, so a notice says so.
    expect(p.get_by_test_id("proposal-text")).to_have_text("proposed by the page")
    expect(p.get_by_test_id("proposal-notice")).to_contain_text("Ext Page")

    link = {"url": "https://example.com/"}
    frame.evaluate("(l) => { window.__link = window.call('openLink', l); }", link)
    expect(p.get_by_test_id("link-url")).to_have_text("https://example.com/")
    p.get_by_test_id("link-decline").click(timeout=WAIT_MS)
    declined = frame.evaluate("() => window.__link")

    with p.expect_download(timeout=WAIT_MS) as downloading:
        frame.evaluate("(o) => { window.__saved = window.call('downloadFile', o); }", OFFERED)
        p.get_by_test_id("permission-allow-once").click(timeout=WAIT_MS)
    return {
        "proposed": proposed,
        "declined": declined,
        "saved": frame.evaluate("() => window.__saved"),
        "name": downloading.value.suggested_filename,
    }


def closed(p: Page) -> str:
    """Close the app from its tab: the page's teardown handler says it answered."""
    with p.expect_console_message(lambda m: m.text == "teardown answered", timeout=WAIT_MS) as said:
        p.get_by_role("button", name="Close Ext Page").click()
    text: str = said.value.text
    return text


async def test_every_host_method_of_the_ext_apps_app_class_works_against_lineup(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    agent, seen = await page_opened(nursery, data_dir, page)
    host = seen["host"]
    assert host["version"]["name"]  # the class took `hostInfo`
    offered = {"serverTools", "serverResources", "openLinks", "logging", "downloadFile"}
    assert offered <= set(host["capabilities"])
    assert host["context"]["toolInfo"]["id"] == "c-echo"
    assert host["context"]["toolInfo"]["tool"]["name"] == "extpage.echo"
    assert host["context"]["displayMode"] == "inline"
    assert [i["arguments"] for i in seen["toolinput"]] == [{"text": "hello"}]
    [result] = seen["toolresult"]
    assert (result["structuredContent"], result["isError"]) == ({"echo": "hello"}, False)

    got = await page.run(page_calls)
    assert got["added"]["result"]["structuredContent"] == {"sum": 5}, got["added"]
    assert "error" in got["bad"]  # the input refused, as a JSON-RPC error the class throws
    assert "result" in got["listed"], got["listed"]
    [resource] = got["listed"]["result"]["resources"]
    assert resource["uri"] == "ui://extpage/ui"
    [content] = got["read"]["result"]["contents"]
    assert content["text"] == (WEB / "index.html").read_text()
    assert got["missing"]["error"]["code"] == -32002
    assert got["mode"]["result"]["mode"] == "fullscreen"
    assert got["back"]["result"]["mode"] == "inline"
    assert got["logged"] == {"result": None}

    context = {"content": [{"type": "text", "text": "the page's context"}]}
    answer = await page.run(lambda p: call(frame_of(p), "updateModelContext", context))
    assert answer == {"result": {}}, answer
    told = await agent.pull(wire.APP_SESSION_CONTEXT)
    assert told["payload"]["app_scope"] == "extpage"

    asked = await page.run(asks_the_user)
    assert asked["proposed"]["result"] == {}, asked
    assert asked["declined"]["result"]["isError"] is True, asked
    assert asked["saved"] == {"result": {}}, asked
    assert asked["name"] == "notes.txt"

    assert await page.run(closed) == "teardown answered"
    assert page.console_errors == []
