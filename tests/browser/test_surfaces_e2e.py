"""A Surface through the whole runtime in real Chromium (issue 13): the Agent opens the test
app's Surface (tests/support/surface_app), the Shell frames its page from the app's own
`web/`, and from inside that frame (`frame.evaluate`) the bridge does the handshake, sends an
app event that the app's process turns into session data, hears that data and the state the
app derived from it, writes session data itself, is refused a stale write and an event its
entrypoint does not declare, and cannot get out of its sandbox.

The test app's page has no script of its own: the test installs a tiny JSON-RPC client in the
frame with `evaluate` (Playwright's, which no CSP of the page applies to).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import trio
from playwright.sync_api import Frame, Page, expect

from lineup.tests.e2e.test_surfaces import INSTANCE, SID, runtime_with_surface_app
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.browser import load_shell, ready_frame
from lineup.tests.support.runtime import CONVERSATION, Runtime, agent_client

from .conftest import ShellPage
from .test_surface_render import ESCAPES

WAIT_MS: Final = 10_000
FRAME: Final = '[data-testid="surface-frame"]'
CLIENT: Final = """() => {
  if (window.rpc) return;
  let nextId = 1;
  const pending = new Map();
  window.__received = [];
  window.rpc = (method, params) => new Promise((resolve) => {
    const id = nextId++;
    pending.set(id, resolve);
    window.parent.postMessage({ jsonrpc: "2.0", id, method, params }, "*");
  });
  window.notify = (method, params) =>
    window.parent.postMessage({ jsonrpc: "2.0", method, params }, "*");
  window.addEventListener("message", (event) => {
    if (event.source !== window.parent) return;
    window.__received.push(event.data);
    const m = event.data;
    if (m && m.method === undefined && pending.has(m.id)) {
      pending.get(m.id)(m);
      pending.delete(m.id);
    }
  });
}"""


def surface_frame(p: Page) -> Frame:
    frame = ready_frame(p, ready="#surface", wait_ms=WAIT_MS)
    frame.evaluate(CLIENT)
    return frame


async def surfacer_opened(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> tuple[Runtime, AgentView]:
    """The runtime with the Surface test app, the Shell loaded, and the Agent's `surfacer.open`
    (call `s-open`) sent."""
    runtime = await runtime_with_surface_app(nursery, data_dir)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url))
    revision = await agent.inventory()

    await page.run(load_shell(runtime.shell_url, wait_ms=WAIT_MS))
    await agent.client.call_tool(
        CONVERSATION, "surfacer.open", {"mode": "open"}, revision, call_id="s-open"
    )
    return runtime, agent


async def in_frame(page: ShellPage, script: str, arg: Any = None) -> Any:
    return await page.run(lambda p: surface_frame(p).evaluate(script, arg))


async def notified(page: ShellPage, method: str, test: str) -> dict[str, Any]:
    """The newest Host → View `method` notification whose params pass `test` (a JS arrow)."""

    def wait(p: Page) -> dict[str, Any]:
        frame = surface_frame(p)
        script = f"""([m]) => window.__received.filter((x) => x.method === m
            && ({test})(x.params)).at(-1) ?? null"""
        frame.wait_for_function(script, arg=[method], timeout=WAIT_MS)
        found: dict[str, Any] = frame.evaluate(script, [method])
        return found

    return await page.run(wait)


async def test_a_surface_runs_its_bridge_against_the_real_runtime_and_stays_in_its_sandbox(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime, agent = await surfacer_opened(nursery, data_dir, page)

    def mounted(p: Page) -> None:
        surface = p.get_by_test_id("surface")
        expect(surface).to_have_attribute("data-surface-id", SID, timeout=WAIT_MS)
        expect(p.locator(FRAME)).to_have_attribute("sandbox", "allow-scripts")
        expect(p.locator(FRAME)).to_have_attribute("title", "Surfacer (app view)")

    await page.run(mounted)
    with trio.fail_after(WAIT_MS / 1000):
        result = (await agent.terminal("s-open"))["payload"]["result"]
    assert result == {"surface_id": SID, "codes": []}

    hello = await in_frame(
        page, "() => window.rpc('ui/initialize', {protocolVersion: '2026-01-26'})"
    )
    assert hello["result"]["hostContext"]["lineup"]["surface_id"] == SID
    assert hello["result"]["hostContext"]["lineup"]["state"] == {"seen": 0}
    await in_frame(page, "() => window.notify('ui/notifications/initialized', {})")
    tool_input = await notified(page, "ui/notifications/tool-input", "() => true")
    assert tool_input["params"] == {"arguments": {"call": "s-open"}}
    subscribed = await in_frame(page, "() => window.rpc('lineup/session-data/subscribe', {})")
    assert subscribed["result"] == {"data": None, "revision": 0}

    # An event: the app's process writes session data; the Surface hears it, and the state the
    # app derived from it.
    sent = await in_frame(
        page, "() => window.rpc('lineup/event', {name: 'note.add', data: {text: 'hi'}})"
    )
    assert sent["result"] == {}
    data = await notified(page, "lineup/notifications/session-data", "(p) => p.revision >= 1")
    assert data["params"] == {"data": {"notes": ["hi"]}, "revision": 1}
    state = await notified(page, "lineup/notifications/state", "(p) => p.state.seen === 1")
    assert state["params"]["state"] == {"seen": 1}

    # The Surface writes itself; a write on an older revision is refused.
    wrote = await in_frame(
        page,
        "() => window.rpc('lineup/session-data/replace',"
        " {data: {notes: ['hi', 'mine']}, expected_revision: 1})",
    )
    assert wrote["result"] == {"revision": 2}
    stale = await in_frame(
        page,
        "() => window.rpc('lineup/session-data/replace',"
        " {data: {notes: []}, expected_revision: 1})",
    )
    assert stale["error"]["data"] == {"code": "stale_revision"}
    await notified(page, "lineup/notifications/state", "(p) => p.state.seen === 2")
    # An event the entrypoint does not declare: the bridge relays it, focus refuses it.
    undeclared = await in_frame(page, "() => window.rpc('lineup/event', {name: 'note.drop'})")
    assert undeclared["error"]["data"] == {"code": "bridge_method_unknown"}
    got = await in_frame(page, "() => window.rpc('lineup/session-data/get')")
    assert got["result"] == {"data": {"notes": ["hi", "mine"]}, "revision": 2}

    port = int(runtime.shell_url.split(":")[2].split("/")[0])
    url = await page.run(lambda p: p.url)
    escapes = await in_frame(page, ESCAPES, port)
    assert set(escapes.values()) == {"blocked"}, escapes

    def still_here(p: Page) -> None:
        assert p.url == url
        assert len(p.context.pages) == 1
        expect(p.get_by_test_id("surface")).to_have_attribute("data-bridge-rejections", "0")

    await page.run(still_here)
    for path in ("/healthz", "/navigated", "/popup"):
        assert not [r for r in page.requests if path in r], path
    # The beacon: Chromium names it to Playwright as a request, and blocks it by the frame's
    # CSP before it is sent (test_surface_render.py checks the server saw none).
    blocked = [e for e in page.console_errors if "beacon.png" in e]
    assert blocked and all("img-src data: blob:" in e and "blocked" in e for e in blocked)
    assert len([r for r in page.requests if r.startswith("ws://")]) == 1  # the Shell's own
    # The frame's page was asked for under its (encoded) instance's path.
    assert f"/surfaces/{quote(INSTANCE, safe='')}/index.html" in " ".join(page.requests)
