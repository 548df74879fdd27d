"""The Shell as an MCP Apps host, driven through the published "Get Time" page, unchanged.

The page (`dist/mcp-app.html` of `@modelcontextprotocol/server-basic-vanillajs`, from npm,
pinned) runs as a LineUp Surface of a real runtime in real Chromium (as
test_mcp_app_surface_e2e.py sets it up). Its own buttons make the requests: "Send Message" is
`ui/message`, "Open Link" is `ui/open-link`, "Send Log" is `notifications/message` (read
back with `lineup logs`); `ping` and `ui/request-display-mode`, for which it has no button,
its frame sends as any page's script would. What the Shell said to the page is read from a
recorder the browser puts in every frame before the page's script runs (`HOST_SAID`): the page
itself is the ext-apps `App` class, unchanged, and applies the host context it is given (its
root's `data-theme` and style variables), which is what a user sees.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Final

import trio
from playwright.sync_api import Frame, Page, expect

from lineup.actors.kernel import ActorKind, AuditRecord
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.browser import framed, load_shell
from lineup.tests.support.mcp_time_app import MCP_APP_PACKAGE, TimeApp
from lineup.tests.support.npm import NpmPackage, installed
from lineup.tests.support.runtime import (
    CONVERSATION,
    Runtime,
    agent_client,
    messages_at_agent,
    start_runtime_with_app,
)
from lineup.tests.support.tree import attach, audit_rows

from ._axe import axe_source, violations
from .conftest import ShellPage

WAIT_MS: Final = 15_000
FRAME: Final = '[data-testid="surface-frame"]'
LINK: Final = "https://modelcontextprotocol.io/"  # the page's own default
LOG_WAIT_S: Final = 60.0  # a few runs of `lineup logs`, each a Python start, on a busy machine
# In every frame, before its scripts: what the Shell posts to it, kept for the test to read.
HOST_SAID: Final = """
if (window !== window.top) {
  window.__hostSaid = [];
  window.addEventListener("message", (e) => {
    if (e.source === window.parent) window.__hostSaid.push(e.data);
  });
}
"""

# The Shell answered one more of the page's requests than `before`.
ANSWERED_AFTER: Final = "(before) => window.__hostSaid.filter((m) => 'id' in m).length > before"


def published_page() -> bytes:
    return (installed(NpmPackage(*MCP_APP_PACKAGE)) / "dist" / "mcp-app.html").read_bytes()


async def time_shown(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> tuple[Runtime, AgentView]:
    """The runtime with the Get Time app, the Shell loaded, the Agent's call made and the
    time shown in the page (its handshake done)."""
    web = data_dir / "web"
    web.mkdir(parents=True)
    (web / "index.html").write_bytes(published_page())
    runtime = await start_runtime_with_app(nursery, data_dir, TimeApp, title="Get Time")
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT_MS / 1000)
    revision = await agent.inventory()
    await page.run(lambda p: p.context.add_init_script(HOST_SAID))
    await page.run(load_shell(runtime.shell_url, wait_ms=WAIT_MS))
    await agent.client.call_tool(CONVERSATION, "gettime.get-time", {}, revision, call_id="c-time")
    terminal = await agent.terminal("c-time")
    time = terminal["payload"]["result"]["time"]
    await page.run(lambda p: expect(app(p).locator("#server-time")).to_have_text(time))
    return runtime, agent


def app(p: Page) -> Frame:
    return framed(p, FRAME, wait_ms=WAIT_MS)


def host_said(p: Page) -> list[dict[str, Any]]:
    said: list[dict[str, Any]] = app(p).evaluate("() => window.__hostSaid")
    return said


def answers(p: Page) -> list[dict[str, Any]]:
    """The Shell's answers to the page's requests, in order."""
    return [m for m in host_said(p) if "id" in m and ("result" in m or "error" in m)]


def context_changes(p: Page) -> list[dict[str, Any]]:
    return [
        m["params"]
        for m in host_said(p)
        if m.get("method") == "ui/notifications/host-context-changed"
    ]


def root_style(frame: Frame, name: str) -> str:
    value: str = frame.evaluate(f"() => document.documentElement.style.getPropertyValue({name!r})")
    return value


def shell_property(p: Page, name: str) -> str:
    value: str = p.evaluate(
        f"() => getComputedStyle(document.documentElement).getPropertyValue({name!r}).trim()"
    )
    return value


# ---------------------------------------------------------------- ui/initialize's hostContext


async def test_the_page_is_given_the_shells_real_context_and_told_when_its_theme_or_width_changes(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    await time_shown(nursery, data_dir, page)

    def initialized(p: Page) -> None:
        init = next(m["result"] for m in answers(p) if "hostContext" in m.get("result", {}))
        context, capabilities = init["hostContext"], init["hostCapabilities"]
        assert context["theme"] == "light"
        variables = context["styles"]["variables"]
        assert variables["--color-background-primary"] == shell_property(p, "--surface")
        assert variables["--color-text-primary"] == shell_property(p, "--text")
        assert variables["--color-border-primary"] == shell_property(p, "--border")
        assert "system-ui" in variables["--font-sans"]
        assert context["displayMode"] == "inline"
        assert context["availableDisplayModes"] == ["inline", "fullscreen"]
        width = p.locator(FRAME).evaluate("(f) => f.clientWidth")
        assert context["containerDimensions"] == {"width": width, "maxHeight": 4000}
        assert (context["locale"], context["timeZone"]) == ("en-GB", "UTC")  # the browser's
        assert context["platform"] == "web" and context["userAgent"]
        assert set(context["deviceCapabilities"]) == {"touch", "hover"}
        assert context["safeAreaInsets"] == {"top": 0, "right": 0, "bottom": 0, "left": 0}
        # Only what the Shell and the runtime really offer.
        offered = {"openLinks", "message", "logging", "serverResources", "downloadFile"}
        assert offered | {"updateModelContext", "serverTools"} <= set(capabilities)
        assert capabilities["updateModelContext"] == {"text": {}, "structuredContent": {}}
        assert "sampling" not in capabilities
        # The page applied them: what the user sees in it is the Shell's theme.
        frame = app(p)
        expect(frame.locator("html")).to_have_attribute("data-theme", "light")
        assert root_style(frame, "--color-background-primary") == shell_property(p, "--surface")

        p.emulate_media(color_scheme="dark")
        expect(frame.locator("html")).to_have_attribute("data-theme", "dark")
        dark = shell_property(p, "--surface")
        assert dark != variables["--color-background-primary"]
        assert root_style(frame, "--color-background-primary") == dark
        assert context_changes(p)[-1]["theme"] == "dark"

        p.set_viewport_size({"width": 700, "height": 640})
        narrower = p.locator(FRAME).evaluate("(f) => f.clientWidth")
        assert narrower < width
        frame.wait_for_function(
            """(w) => window.__hostSaid.some((m) =>
                 m.method === "ui/notifications/host-context-changed" &&
                 m.params.containerDimensions && m.params.containerDimensions.width === w)""",
            arg=narrower,
            timeout=WAIT_MS,
        )

    await page.run(initialized)


# ---------------------------------------------------------------- ui/message


def chat_tab(p: Page) -> Any:
    return p.locator('[data-testid="app-tab"][data-app-scope="chat"]')


def app_tab(p: Page) -> Any:
    return p.locator('[data-testid="app-tab"][data-app-scope="gettime"]')


async def texts_at_agent(agent: AgentView) -> list[str]:
    """What the Agent was sent as the user's own messages."""
    return [
        str(m["payload"].get("markdown"))
        for m in await messages_at_agent(agent.client)
        if (m.get("sender") or {}).get("kind") == "user"
    ]


async def test_an_apps_message_is_only_proposed_and_reaches_the_agent_once_the_user_sends_it(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    _, agent = await time_shown(nursery, data_dir, page)
    proposed = "What time is it in <b>Tokyo</b>?"  # text, never markup
    axe = axe_source()

    def send_message(p: Page) -> int:
        before = len(answers(p))
        frame = app(p)
        frame.locator("#message-text").fill(proposed)
        frame.locator("#send-message-btn").click()
        # Shown, and the page told so (`{}`): a notice says where it waits.
        expect(p.get_by_test_id("proposal-notice")).to_contain_text("Get Time")
        frame.wait_for_function(ANSWERED_AFTER, arg=before)
        assert answers(p)[-1]["result"] == {}
        return before

    await page.run(send_message)
    assert proposed not in await texts_at_agent(agent)  # nothing is said for the user

    def send_it_by_keyboard(p: Page) -> None:
        chat_tab(p).click()
        box = p.get_by_test_id("proposal")
        expect(box).to_be_visible()
        expect(p.get_by_test_id("proposal-from")).to_contain_text("Get Time")
        expect(p.get_by_test_id("proposal-text")).to_have_text(proposed)
        expect(box.locator("b")).to_have_count(0)
        assert violations(p, axe) == []  # WCAG 2.1 A/AA, the proposal shown
        p.get_by_test_id("proposal-send").focus()
        p.keyboard.press("Enter")
        expect(box).to_be_hidden()
        expect(p.get_by_test_id("message").last).to_contain_text(proposed)

    await page.run(send_it_by_keyboard)
    with trio.fail_after(WAIT_MS / 1000):
        while proposed not in await texts_at_agent(agent):
            await agent.client.sync("", timeout_ms=300)  # a bounded long poll, not a sleep


async def test_a_proposal_edited_or_discarded_never_reaches_the_agent_and_bounds_are_refused(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime, agent = await time_shown(nursery, data_dir, page)

    def propose(p: Page, text: str) -> dict[str, Any]:
        before = len(answers(p))
        frame = app(p)
        frame.locator("#message-text").fill(text)
        frame.locator("#send-message-btn").click()
        frame.wait_for_function(ANSWERED_AFTER, arg=before)
        return answers(p)[-1]

    def edit_and_discard(p: Page) -> None:
        assert propose(p, "first")["result"] == {}
        chat_tab(p).click()
        expect(p.get_by_test_id("proposal")).to_be_visible()
        p.get_by_test_id("composer-input").fill("my draft")
        p.get_by_test_id("proposal-edit").focus()
        p.keyboard.press("Enter")
        # Into the box after the user's draft, never over it; sent only if the user does.
        expect(p.get_by_test_id("composer-input")).to_have_value("my draft\n\nfirst")
        expect(p.get_by_test_id("proposal")).to_be_hidden()
        p.get_by_test_id("composer-input").fill("")
        app_tab(p).click()
        expect(p.locator(FRAME)).to_be_visible()
        assert propose(p, "second")["result"] == {}
        chat_tab(p).click()
        expect(p.get_by_test_id("proposal")).to_be_visible()
        expect(p.get_by_test_id("proposal-text")).to_have_text("second")
        p.get_by_test_id("proposal-discard").focus()
        p.keyboard.press("Escape")
        expect(p.get_by_test_id("proposal")).to_be_hidden()
        app_tab(p).click()
        expect(p.locator(FRAME)).to_be_visible()
        refused = propose(p, "x" * 4001)
        assert refused["error"]["code"] == -32000
        assert refused["error"]["data"]["code"] == "proposal_too_long"
        # The third proposal this minute was the long one (refused): one more is taken, then
        # the rate refuses.
        assert propose(p, "third")["result"] == {}
        limited = propose(p, "fourth")
        assert limited["error"]["data"]["code"] == "rate_limited"

    await page.run(edit_and_discard)
    await agent.settle()
    said = await texts_at_agent(agent)
    assert not {"first", "second", "third", "fourth", "my draft\n\nfirst"} & set(said)

    # The refusals are audited by their codes and the instance, never with the text.
    reader = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "reader")

    def both(rows: tuple[AuditRecord, ...]) -> bool:
        return {"proposal_too_long", "rate_limited"} <= {r.code for r in rows}

    rows = await audit_rows(reader, both, event_prefix="hostbridge.surface_rejected")
    assert all(str(r.subject_id).endswith(":gettime:c-time") for r in rows)
    dumped = json.dumps([r.model_dump(mode="json") for r in rows])
    assert "xxxx" not in dumped and "fourth" not in dumped


# ---------------------------------------------------------------- ui/open-link


async def test_a_link_opens_in_a_new_tab_only_after_the_runtimes_own_prompt(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    await time_shown(nursery, data_dir, page)
    axe = axe_source()

    def ask(p: Page, url: str) -> int:
        before = len(answers(p))
        frame = app(p)
        frame.locator("#link-url").fill(url)
        frame.locator("#open-link-btn").click()
        return before

    def answered_after(p: Page, before: int) -> dict[str, Any]:
        app(p).wait_for_function(ANSWERED_AFTER, arg=before)
        return answers(p)[-1]

    def decline_then_open(p: Page) -> None:
        prompt = p.get_by_test_id("link-prompt")
        before = ask(p, LINK)
        expect(prompt).to_be_visible()
        expect(p.get_by_test_id("link-heading")).to_contain_text("Get Time")
        expect(p.get_by_test_id("link-url")).to_have_text(LINK)  # the full URL, as text
        expect(p.get_by_test_id("link-decline")).to_be_focused()  # the safe default
        assert violations(p, axe) == []  # WCAG 2.1 A/AA, the prompt shown
        expect(prompt).to_have_attribute("data-armed", "true")
        p.keyboard.press("Escape")
        expect(prompt).to_be_hidden()
        # Ended, it is unarmed: the next prompt's "armed" is its own, not this one's.
        expect(prompt).to_have_attribute("data-armed", "false")
        # A no is the spec's result for a link not opened, which the page reads (no throw).
        assert answered_after(p, before)["result"] == {"isError": True}
        assert LINK not in page.requests  # nothing was opened
        assert len(p.context.pages) == 1

        before = ask(p, LINK)
        expect(prompt).to_have_attribute("data-armed", "true")
        wanted = lambda request: request.url == LINK  # noqa: E731
        with (
            p.context.expect_event("request", predicate=wanted) as asked_for,
            p.context.expect_page() as opened,
        ):
            p.get_by_test_id("link-open").focus()
            p.keyboard.press("Enter")
        assert asked_for.value.frame.page == opened.value != p  # a new tab, not the Shell
        assert answered_after(p, before)["result"] == {}

        before = ask(p, "javascript:alert(1)")
        refused = answered_after(p, before)
        assert refused["error"]["data"]["code"] == "invalid_arguments"
        expect(prompt).to_be_hidden()

    await page.run(decline_then_open)
    # The one request off 127.0.0.1 is the new tab's, asserted above (it failed in the
    # browser): the fixture's own check then still holds for everything else.
    page.requests[:] = [url for url in page.requests if url != LINK]
    # The page's "Open Link" does not catch an error: the invalid URL's answer is an uncaught
    # rejection that names its code; the user's no threw nothing.
    assert len(page.errors) == 1 and "invalid_arguments" in page.errors[0]
    page.errors.clear()


# ---------------------------------------------------------------- notifications/message


async def lineup_logs(data_dir: Path, scope: str) -> str:
    """`lineup logs SCOPE --data-dir DIR`, as the user runs it."""
    command = [sys.executable, "-m", "lineup", "logs", scope, "--data-dir", str(data_dir)]
    with trio.fail_after(30):
        done = await trio.run_process(command, capture_stdout=True, check=False)
    return done.stdout.decode()


async def test_the_apps_log_line_is_written_where_lineup_logs_shows_the_apps_output(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime, _ = await time_shown(nursery, data_dir, page)
    line = "log line from the view \x1b[31m"

    def send_log(p: Page) -> None:
        frame = app(p)
        frame.locator("#log-text").fill(line)
        frame.locator("#send-log-btn").click()

    await page.run(send_log)
    rt = runtime.supervisor.data_dir
    with trio.fail_after(LOG_WAIT_S):
        # Each try is one run of the CLI (about a second): the relay has no other outside sign.
        while "log line from the view" not in (shown := await lineup_logs(rt, "gettime")):
            pass
    # Marked as the view's, with its level, escaped as the app's own output is.
    assert " view info log line from the view \\x1b[31m" in shown


# ---------------------------------------------------------------- ping, ui/request-display-mode

# The Get Time page has no button for these: its frame sends them as any page's script would
# (from its own window, so the bridge takes them as the Surface's).
ASK: Final = """([id, method, params]) =>
  window.parent.postMessage({ jsonrpc: "2.0", id, method, params }, "*")"""


async def test_fullscreen_takes_the_whole_stage_and_a_mode_request_gets_the_mode_in_force(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    await time_shown(nursery, data_dir, page)

    def ask(p: Page, request_id: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        frame = app(p)
        frame.evaluate(ASK, [request_id, method, params])
        frame.wait_for_function(
            "(id) => window.__hostSaid.some((m) => m.id === id)", arg=request_id
        )
        return next(m for m in host_said(p) if m.get("id") == request_id)

    def modes(p: Page) -> None:
        assert ask(p, "t-ping", "ping", {})["result"] == {}
        surface = p.get_by_test_id("surface")
        stage = p.get_by_test_id("app-view").bounding_box()
        assert stage is not None
        inline = p.locator(FRAME).bounding_box()
        assert inline is not None and inline["height"] < stage["height"] - 40

        assert ask(p, "t-full", "ui/request-display-mode", {"mode": "fullscreen"})["result"] == {
            "mode": "fullscreen"
        }
        expect(surface).to_have_attribute("data-display-mode", "fullscreen")
        assert {"displayMode": "fullscreen"} in context_changes(p)
        full = p.locator(FRAME).bounding_box()
        assert full is not None
        assert abs(full["height"] - stage["height"]) <= 2  # the whole stage
        assert abs(full["width"] - stage["width"]) <= 2
        expect(p.get_by_test_id("app-switcher")).to_be_visible()  # the user can still leave
        # The container, fixed now: told as the stage's height.
        height = round(p.locator(FRAME).evaluate("(f) => f.clientHeight"))
        app(p).wait_for_function(
            """(h) => window.__hostSaid.some((m) =>
                 m.method === "ui/notifications/host-context-changed" &&
                 m.params.containerDimensions && m.params.containerDimensions.height === h)""",
            arg=height,
        )

        # Not offered: answered with the mode in force, nothing changes.
        assert ask(p, "t-pip", "ui/request-display-mode", {"mode": "pip"})["result"] == {
            "mode": "fullscreen"
        }
        assert ask(p, "t-in", "ui/request-display-mode", {"mode": "inline"})["result"] == {
            "mode": "inline"
        }
        expect(surface).to_have_attribute("data-display-mode", "inline")
        refused = ask(p, "t-bad", "ui/request-display-mode", {"mode": "huge"})
        assert refused["error"]["data"]["code"] == "bridge_params_invalid"

    await page.run(modes)
