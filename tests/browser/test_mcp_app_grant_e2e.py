"""An MCP App page's declared network domain and device are the user's to grant (issue 30), in
real Chromium against a real runtime.

The app (tests/support/mcp_net_app.py) declares one connect domain, a server of this test on
another loopback port (it answers `pong` to any origin, and counts what it hears), and the
`clipboard_write` permission. The Shell asks for each in the runtime's own prompt before it
frames the page. Denied: the page's `fetch` of that server is a CSP violation and the server
hears nothing; the frame's `allow` is empty. Granted ("Always allow", "Allow once"): the same
`fetch` reaches it, and the frame is allowed the clipboard. Revoked on the permissions page: the
page is framed anew at once, without asking, and its `fetch` is refused again. The audit keeps
the capability and the decision, never the origin or the page's words. No sleeps: every wait is
Playwright's `expect` or a condition with a deadline.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Final

import pytest
import trio
from playwright.sync_api import Page, expect

from lineup.actors.kernel import ActorKind, AuditRecord
from lineup.sdk.manifest import manifest_json
from lineup.sdk.tools import manifest_of
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.browser import load_shell, ready_frame
from lineup.tests.support.mcp_net_app import PAGE, PLACEHOLDER_ORIGIN, NetApp
from lineup.tests.support.runtime import CONVERSATION, Runtime, agent_client, start_runtime
from lineup.tests.support.tree import attach, audit_rows

from .conftest import ShellPage
from .test_mcp_app_host_e2e import HOST_SAID

WAIT_MS: Final = 15_000
TITLE: Final = "Net Tester"
NETWORK: Final = "surface.network"
DEVICES: Final = "surface.devices"

surface_frame = partial(ready_frame, ready='body[data-ready="1"]', wait_ms=WAIT_MS)


class Heard:
    """The paths the test's server was asked for, from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._paths: list[str] = []

    def add(self, path: str) -> None:
        with self._lock:
            self._paths.append(path)

    def paths(self) -> list[str]:
        with self._lock:
            return list(self._paths)


@pytest.fixture
def server() -> Iterator[tuple[str, Heard]]:
    """A real HTTP server on another loopback port: `pong` to any origin (CORS `*`)."""
    heard = Heard()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            heard.add(self.path)
            body = b"pong"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Access-Control-Allow-Origin", "*")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", heard
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def prompt_for(p: Page, capability: str, origin: str | None, answer: str) -> None:
    """The runtime's own prompt for `capability` is up (naming `origin`); `answer` clicked."""
    dialog = p.get_by_test_id("permission-prompt")
    expect(dialog).to_be_visible(timeout=WAIT_MS)
    expect(dialog).to_have_attribute("data-capability", capability)
    expect(p.get_by_test_id("surface-asking")).to_be_visible()  # nothing framed meanwhile
    detail = p.get_by_test_id("permission-detail")
    if origin is not None:  # the runtime's words, from the manifest: where, and what for
        expect(detail).to_have_text(f"Connect to: {origin} (this computer)")
    else:
        expect(detail).to_have_text("Devices: clipboard write")
    expect(dialog).to_have_attribute("data-armed", "true")
    p.get_by_test_id(answer).click()


def approved(p: Page) -> dict[str, object]:
    """What the Shell answers the page's `ui/initialize` it approved of its declared access
    (the spec's `hostCapabilities.sandbox`), the page asking as an MCP App does."""
    frame = surface_frame(p)
    frame.evaluate(
        """() => window.parent.postMessage({jsonrpc: "2.0", id: "t-init", method: "ui/initialize",
             params: {protocolVersion: "2026-01-26", appInfo: {name: "t", version: "1"},
                      appCapabilities: {}}}, "*")"""
    )
    frame.wait_for_function("() => window.__hostSaid.some((m) => m.id === 't-init')")
    said: dict[str, object] = frame.evaluate(
        "() => window.__hostSaid.find((m) => m.id === 't-init').result.hostCapabilities.sandbox"
    )
    return said


def probe(p: Page, url: str) -> tuple[str, list[str], str | None]:
    """The framed page's `fetch(url)`: its outcome, the CSP violations, the frame's `allow`
    (which its document's permissions policy follows)."""
    frame = surface_frame(p)
    outcome: str = frame.evaluate("(u) => window.probe(u)", url)
    violations: list[str] = frame.evaluate("() => window.__cspViolations")
    allow = p.locator('[data-testid="surface-frame"]').get_attribute("allow")
    # What the frame's `allow` gives the page's document (Chromium's permissions policy).
    clipboard = frame.evaluate("() => document.featurePolicy.allowsFeature('clipboard-write')")
    assert clipboard == (allow == "clipboard-write")
    return outcome, violations, allow


async def runtime_with_net_app(nursery: trio.Nursery, data_dir: Path, origin: str) -> Runtime:
    """The runtime with the app whose page declares `origin` and the clipboard."""
    web = data_dir / "web"
    web.mkdir(parents=True)
    (web / "index.html").write_bytes(PAGE)
    manifest = data_dir / "mcpnet.json"
    manifest.write_text(manifest_json(manifest_of(NetApp)).replace(PLACEHOLDER_ORIGIN, origin))
    config = {
        "app_scope": "mcpnet",
        "manifest": str(manifest),
        "entry": f"{NetApp.__module__}:{NetApp.__qualname__}",
        "title": TITLE,
    }
    return await start_runtime(
        nursery,
        data_dir / "rt",
        demo_agent=False,
        extra_apps=(config,),
        capabilities={"prompt_quiet_s": 0},  # a Deny, then asked again on the next open
    )


async def test_a_declared_domain_is_reached_only_while_the_user_grants_it(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage, server: tuple[str, Heard]
) -> None:
    """About ten seconds by what it proves: one page framed three times (denied, granted,
    revoked on the Permissions page), each after the runtime's own prompts, with a real
    fetch from the page to a real server each time."""
    origin, heard = server
    runtime = await runtime_with_net_app(nursery, data_dir, origin)
    reader = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "reader")
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT_MS / 1000)
    revision = await agent.inventory()
    await page.run(lambda p: p.context.add_init_script(HOST_SAID))
    await page.run(load_shell(runtime.shell_url, wait_ms=WAIT_MS))

    # Denied: framed with the spec's default, no network, no device.
    await agent.client.call_tool(CONVERSATION, "mcpnet.open", {}, revision, call_id="c-1")
    await page.run(lambda p: prompt_for(p, NETWORK, origin, "permission-deny"))
    await page.run(lambda p: prompt_for(p, DEVICES, None, "permission-deny"))
    outcome, violations, allow = await page.run(lambda p: probe(p, f"{origin}/denied"))
    assert outcome == "blocked:TypeError"
    assert f"connect-src {origin}/denied" in violations
    assert allow == ""
    assert heard.paths() == []
    assert await page.run(approved) == {}  # and the page is told nothing was approved

    # Closed, opened again, and granted in the prompt: the page reaches its server.
    def close(p: Page) -> None:
        p.get_by_test_id("app-close").click()
        expect(p.locator('[data-testid="surface-frame"]')).to_have_count(0, timeout=WAIT_MS)

    await page.run(close)
    await agent.client.call_tool(CONVERSATION, "mcpnet.open", {}, revision, call_id="c-2")
    await page.run(lambda p: prompt_for(p, NETWORK, origin, "permission-allow-always"))
    await page.run(lambda p: prompt_for(p, DEVICES, None, "permission-allow-once"))
    outcome, violations, allow = await page.run(lambda p: probe(p, f"{origin}/granted"))
    assert (outcome, violations, allow) == ("ok:pong", [], "clipboard-write")
    assert heard.paths() == ["/granted"]
    assert await page.run(approved) == {
        "csp": {"connectDomains": [origin]},
        "permissions": {"clipboardWrite": {}},
    }

    # Revoked on the permissions page: framed anew at once, without a prompt, and refused.
    def revoke(p: Page) -> None:
        p.get_by_test_id("permissions-button").click()
        row = p.locator(
            f'[data-testid="grant-row"][data-app-scope="mcpnet"][data-capability="{NETWORK}"]'
        )
        expect(row).to_have_attribute("data-policy", "allow", timeout=WAIT_MS)
        row.get_by_test_id("grant-revoke").click()
        expect(row).to_have_attribute("data-policy", "ask", timeout=WAIT_MS)
        p.keyboard.press("Escape")
        expect(p.get_by_test_id("permission-prompt")).to_be_hidden()

    await page.run(revoke)
    outcome, violations, allow = await page.run(lambda p: probe(p, f"{origin}/revoked"))
    assert outcome == "blocked:TypeError"
    assert violations == [f"connect-src {origin}/revoked"]
    assert allow == ""
    assert await page.run(approved) == {}
    assert heard.paths() == ["/granted"]

    def decided(rows: tuple[AuditRecord, ...]) -> bool:
        answered = [r.code for r in rows if r.event == "gateway.capability.answered"]
        return answered.count("deny") == 2 and "allow_always" in answered

    rows = await audit_rows(reader, decided, event_prefix="gateway.capability")
    assert {r.message_type for r in rows} == {NETWORK, DEVICES}
    dumped = json.dumps([r.model_dump(mode="json") for r in rows])
    for secret in (origin, "network access its manifest", "clipboard write"):
        assert secret not in dumped
