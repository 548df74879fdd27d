"""A Surface in real Chromium (issue 13): the Shell's bridge and its sandboxed iframe.

The real hostbridge actor serves the real Shell, with a fake bus (tests/hostbridge/
test_surfaces.py `SurfaceBus`) whose focus has one instance in front with an open Surface, its
files the tiny test page `tests/browser/surface_web/` (a JSON-RPC client the test drives from
inside the frame with `frame.evaluate`), or `tests/browser/tracked_web/` (a page on the
runtime's own bridge client, `_lineup/bridge.js`, for its `trackSize()`). Every request the
server sees is recorded, so "the server saw no request" is checked where it matters. Browser
waits are Playwright's `expect`, trio waits `bus.until`; no sleeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Final

import pytest
import trio
from playwright.sync_api import Locator, Page, expect

import lineup.hostbridge._actor as actor_module
from lineup.actors.focus.messages import SurfaceEventRequest
from lineup.hostbridge import HostbridgeActor
from lineup.hostbridge._server import build_app
from lineup.hostbridge.messages import SessionDataUpdatedEvent, ViewUpdatedEvent
from lineup.tests.hostbridge.test_actor import TOKEN, from_peer, start_hostbridge
from lineup.tests.hostbridge.test_surfaces import (
    INSTANCE,
    SCOPE,
    SURFACE,
    SURFACE_WEB,
    SurfaceBus,
    surface_view,
)
from lineup.tests.support.browser import ready_frame

from .conftest import ShellPage

WAIT_MS: Final = 5_000
FRAME: Final = '[data-testid="surface-frame"]'
TRACKED_WEB: Final = Path(__file__).resolve().parent / "tracked_web"


@dataclass
class Served:
    actor: HostbridgeActor
    bus: SurfaceBus
    port: int
    seen: list[str] = field(default_factory=list)  # "http /path" / "websocket /ws", in order

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/#token={TOKEN}"

    def show(self, view: dict[str, Any]) -> None:
        self.actor.on_view(
            *from_peer("focus", ViewUpdatedEvent(app_scope=SCOPE, instance_id=INSTANCE, view=view))
        )


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every request the hostbridge's server is asked, whatever the browser says it sent."""
    seen: list[str] = []
    real = build_app  # the server's, which the actor calls by this name

    def recording(*args: Any, **kwargs: Any) -> Any:
        app = real(*args, **kwargs)

        async def wrapped(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] in ("http", "websocket"):
                seen.append(f"{scope['type']} {scope['path']}")
            await app(scope, receive, send)

        return wrapped

    monkeypatch.setattr(actor_module, "build_app", recording)
    return seen


async def serve(
    nursery: trio.Nursery,
    tmp_path: Path,
    seen: list[str],
    view: dict[str, Any] | None = None,
    web_root: Path = SURFACE_WEB,
    *,
    mcp_app: bool = False,
) -> Served:
    bus = SurfaceBus(web_root=web_root, view=view, mcp_app=mcp_app)
    actor, _bus, port = await start_hostbridge(nursery, tmp_path, bus)
    return Served(actor, bus, port, seen)


surface_frame = partial(ready_frame, ready='body[data-ready="1"]', wait_ms=WAIT_MS)


async def open_surface(page: ShellPage, served: Served) -> None:
    def load(p: Page) -> None:
        p.goto(served.url)
        expect(p.locator(FRAME)).to_have_count(1, timeout=WAIT_MS)
        surface_frame(p)

    await page.run(load)


async def in_frame(page: ShellPage, script: str, arg: Any = None) -> Any:
    return await page.run(lambda p: surface_frame(p).evaluate(script, arg))


async def received(page: ShellPage, method: str, count: int = 1) -> list[dict[str, Any]]:
    """The Host → View messages of `method` the frame got, once it has `count` of them."""

    def wait(p: Page) -> list[dict[str, Any]]:
        frame = surface_frame(p)
        frame.wait_for_function(
            "([m, n]) => window.__received.filter((x) => x.method === m).length >= n",
            arg=[method, count],
            timeout=WAIT_MS,
        )
        got: list[dict[str, Any]] = frame.evaluate(
            "(m) => window.__received.filter((x) => x.method === m)", method
        )
        return got

    return await page.run(wait)


def rejections(p: Page, count: int) -> None:
    expect(p.get_by_test_id("surface")).to_have_attribute(
        "data-bridge-rejections", str(count), timeout=WAIT_MS
    )


# ---------------------------------------------------------------------- the bridge


def _width(element: Locator) -> float:
    box = element.bounding_box()
    assert box is not None, "not visible"
    return box["width"]


async def test_the_frame_takes_the_stages_width(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage, recorded: list[str]
) -> None:
    # Not an iframe's default 300 px: the app's page gets the stage (up to 1000 px).
    served = await serve(nursery, tmp_path, recorded, surface_view())
    await open_surface(page, served)
    frame_width, stage_width = await page.run(
        lambda p: (
            _width(p.locator(FRAME)),
            _width(p.locator(".app-view").first),
        )
    )
    assert frame_width >= min(1000, stage_width - 32) - 2


async def test_the_handshake_state_tool_input_and_session_data_round_trip(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage, recorded: list[str]
) -> None:
    served = await serve(nursery, tmp_path, recorded, surface_view(tool_input={"board_id": "b1"}))
    await open_surface(page, served)
    hello = await in_frame(page, "() => window.handshake()")
    assert hello["result"]["protocolVersion"] == "2026-01-26"
    assert hello["result"]["hostInfo"]["name"] == "lineup"
    assert hello["result"]["hostContext"]["lineup"] == {
        "surface_id": SURFACE,
        "surface_version": 1,
        "state": {"step": 1},
        "state_revision": 0,
        "online": True,  # the Shell's link to the runtime (lineup/notifications/connection)
    }
    methods = hello["result"]["hostCapabilities"]["lineup"]["methods"]
    assert {"lineup/event", "lineup/session-data/subscribe", "ui/initialize"} <= set(methods)
    [tool_input] = await received(page, "ui/notifications/tool-input")
    assert tool_input["params"] == {"arguments": {"board_id": "b1"}}

    # A newer state, and a tool result, reach it as notifications.
    served.show(surface_view(state={"step": 2}, state_revision=1, tool_result={"ok": True}))
    [state] = await received(page, "lineup/notifications/state")
    assert state["params"] == {"state": {"step": 2}, "revision": 1}
    [result] = await received(page, "ui/notifications/tool-result")
    assert result["params"] == {"structuredContent": {"ok": True}}

    subscribed = await in_frame(page, "() => window.rpc('lineup/session-data/subscribe', {})")
    assert subscribed["result"] == {"data": None, "revision": 0}
    replaced = await in_frame(
        page,
        "() => window.rpc('lineup/session-data/replace', {data: {n: 1}, expected_revision: 0})",
    )
    assert replaced["result"] == {"revision": 1}
    served.actor.on_session_data(
        *from_peer(
            "focus",
            SessionDataUpdatedEvent(
                instance_id=INSTANCE, surface_id=SURFACE, data={"n": 1}, revision=1
            ),
        )
    )
    [pushed] = await received(page, "lineup/notifications/session-data")
    assert pushed["params"] == {"data": {"n": 1}, "revision": 1}
    stale = await in_frame(
        page,
        "() => window.rpc('lineup/session-data/replace', {data: {n: 2}, expected_revision: 0})",
    )
    assert stale["error"]["data"] == {"code": "stale_revision"}
    got = await in_frame(page, "() => window.rpc('lineup/session-data/get')")
    assert got["result"] == {"data": {"n": 1}, "revision": 1}
    event = await in_frame(page, "() => window.rpc('lineup/event', {name: 'go', data: {a: 1}})")
    assert event["result"] == {}
    ping = await in_frame(page, "() => window.rpc('ping')")
    assert ping["result"] == {}
    denied = await in_frame(
        page,
        "() => window.rpc('lineup/capabilities/request', {capability: 'net', purpose: 'x'})",
    )
    # Relayed to the gateway (issue 14), whose refusal is a result, not an error.
    assert (denied["result"]["status"], denied["result"]["code"]) == (
        "permission_denied",
        "capability_denied",
    )

    def sizes(p: Page) -> None:
        frame = surface_frame(p)
        # The height asked is the document's (clamped): the frame's border comes on top.
        frame.evaluate("() => window.notify('ui/notifications/size-changed', {height: 9000})")
        frame.wait_for_function("() => innerHeight === 4000", timeout=WAIT_MS)
        frame.evaluate("() => window.notify('ui/notifications/size-changed', {height: 3})")
        frame.wait_for_function("() => innerHeight === 120", timeout=WAIT_MS)
        rejections(p, 0)
        p.locator(FRAME).focus()  # the keyboard reaches it
        expect(p.locator(FRAME)).to_be_focused()

    await page.run(sizes)
    # Opened anew (focus restarted, the app opened it again): its revision starts over; the
    # Surface is told the state, and the bridge renews its subscription.
    served.show(surface_view(state={"step": 0}, state_revision=0))
    states = await received(page, "lineup/notifications/state", 2)
    assert states[-1]["params"] == {"state": {"step": 0}, "revision": 0}
    await served.bus.until(
        lambda: [getattr(r, "op", None) for r in served.bus.requests].count("subscribe") == 2
    )
    names = [r.name for r in served.bus.requests if isinstance(r, SurfaceEventRequest)]
    assert names == ["go"]
    # The frame's own files loaded under its CSP: its style applied (only its own file has it).
    color = await in_frame(page, "() => getComputedStyle(document.querySelector('h1')).color")
    assert color == "rgb(1, 2, 3)"


# The Shell's window records every size a Surface reports (an init script: it is in place
# before the frame can post anything).
RECORD_SIZES: Final = """
if (window === window.top) {
  window.__sizes = [];
  window.addEventListener("message", (event) => {
    const m = event.data;
    if (m && m.method === "ui/notifications/size-changed") window.__sizes.push(m.params);
  });
}
"""


async def test_track_size_reports_the_pages_size_at_start_and_on_each_change_only(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage, recorded: list[str]
) -> None:
    served = await serve(nursery, tmp_path, recorded, surface_view(), TRACKED_WEB)
    await page.run(lambda p: p.add_init_script(RECORD_SIZES))
    await open_surface(page, served)
    await in_frame(page, "() => window.start()")
    width = await in_frame(
        page, "() => Math.ceil(document.documentElement.getBoundingClientRect().width)"
    )

    def sizes(p: Page, count: int) -> list[dict[str, int]]:
        p.wait_for_function("(n) => window.__sizes.length >= n", arg=count, timeout=WAIT_MS)
        got: list[dict[str, int]] = p.evaluate("() => window.__sizes")
        return got

    def frame_is(p: Page, height: int) -> None:
        surface_frame(p).wait_for_function("(h) => innerHeight === h", arg=height, timeout=WAIT_MS)

    # Once at the start (the observer's first look at the same size is not a second report),
    # and the frame is the page's height.
    assert await page.run(lambda p: sizes(p, 1)) == [{"width": width, "height": 200}]
    await page.run(lambda p: frame_is(p, 200))
    # No change of the page's size: the body narrower inside it, a second trackSize(). Then
    # frames for a report to be posted, before the change that must be the next report.
    await in_frame(
        page,
        """async () => {
          document.body.style.width = "50%";
          window.LineUpBridge.trackSize();
          await window.afterFrames(3);
        }""",
    )
    await in_frame(page, "() => { document.getElementById('box').style.height = '300px'; }")
    assert await page.run(lambda p: sizes(p, 2)) == [
        {"width": width, "height": 200},
        {"width": width, "height": 300},
    ]
    await page.run(lambda p: frame_is(p, 300))
    # Two changes in one task are one report, of the last; the frame shrinks to it.
    await in_frame(
        page,
        """() => {
          const box = document.getElementById('box');
          box.style.height = '500px';
          void document.documentElement.getBoundingClientRect();
          box.style.height = '150px';
        }""",
    )
    await page.run(lambda p: frame_is(p, 150))
    assert (await page.run(lambda p: sizes(p, 3)))[2:] == [{"width": width, "height": 150}]
    await in_frame(page, "() => window.afterFrames(3)")
    assert len(await page.run(lambda p: sizes(p, 3))) == 3
    await page.run(lambda p: rejections(p, 0))


async def test_rejected_messages_are_dropped_counted_answered_and_audited(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage, recorded: list[str]
) -> None:
    served = await serve(nursery, tmp_path, recorded)
    await open_surface(page, served)
    early = await in_frame(page, "() => window.rpc('ping')")
    await in_frame(page, "() => window.notify('lineup/event', {name: 'x'})")
    assert early["error"]["code"] == -32600
    assert early["error"]["data"] == {"code": "bridge_not_initialized"}
    await in_frame(page, "() => window.handshake()")
    unknown = await in_frame(page, "() => window.rpc('lineup/open-window', {})")
    assert (unknown["error"]["code"], unknown["error"]["data"]) == (
        -32601,
        {"code": "bridge_method_unknown"},
    )
    invalid = await in_frame(
        page, "() => window.rpc('lineup/session-data/replace', {data: 1, expected_revision: 0})"
    )
    assert (invalid["error"]["code"], invalid["error"]["data"]) == (
        -32602,
        {"code": "bridge_params_invalid"},
    )
    big = await in_frame(
        page, "() => window.rpc('lineup/event', {name: 'x', data: {t: 'é'.repeat(40000)}})"
    )
    assert big["error"]["data"] == {"code": "bridge_message_too_large"}

    def foreign(p: Page) -> None:
        # The Shell's own window, with a valid-looking body: dropped, never answered.
        p.evaluate("() => window.postMessage({jsonrpc: '2.0', id: 99, method: 'ping'}, '*')")
        rejections(p, 6)
        # A second frame of the very same page, not the mounted Surface's: likewise.
        p.evaluate(
            """(url) => {
              const f = document.createElement('iframe');
              f.setAttribute('sandbox', 'allow-scripts');
              f.setAttribute('data-testid', 'intruder');
              f.src = url;
              document.body.append(f);
            }""",
            f"/surfaces/{INSTANCE}/index.html",
        )
        handle = p.get_by_test_id("intruder").element_handle(timeout=WAIT_MS)
        intruder = handle.content_frame()
        assert intruder is not None
        intruder.wait_for_selector('body[data-ready="1"]', timeout=WAIT_MS)
        intruder.evaluate("() => { window.rpc('ping'); }")
        rejections(p, 7)
        assert intruder.evaluate("() => window.__received.length") == 0

    await page.run(foreign)
    expected = {
        "bridge_not_initialized": 2,
        "bridge_method_unknown": 1,
        "bridge_params_invalid": 1,
        "bridge_message_too_large": 1,
        "bridge_source_invalid": 2,
    }

    def reported() -> dict[str, int]:
        counts: dict[str, int] = {}
        for a in served.bus.audits:
            if a.event == "hostbridge.surface_rejected" and a.code and a.subject_id:
                count, _, instance = a.subject_id.partition(":")
                assert instance == INSTANCE
                counts[a.code] = counts.get(a.code, 0) + int(count)
        return counts

    await served.bus.until(lambda: reported() == expected)
    # Nothing of a rejected message reached the runtime.
    assert not [r for r in served.bus.requests if isinstance(r, SurfaceEventRequest)]


async def test_a_surface_past_its_rate_is_refused_with_its_code(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage, recorded: list[str]
) -> None:
    served = await serve(nursery, tmp_path, recorded)
    await open_surface(page, served)
    await in_frame(page, "() => window.handshake()")
    answers = await in_frame(
        page, "() => Promise.all(Array.from({length: 250}, () => window.rpc('ping')))"
    )
    limited = [a for a in answers if "error" in a]
    assert all(a["error"]["data"] == {"code": "bridge_rate_limited"} for a in limited)
    # A burst of 120 (the handshake took 1), and what refilled while the 250 were posted.
    assert 100 <= len(limited) <= 135, len(limited)


# ---------------------------------------------------------------------- the sandbox

ESCAPES: Final = """async (port) => {
  const r = {};
  const attempt = (name, fn) => {
    try { fn(); r[name] = "allowed"; } catch (e) { r[name] = "blocked"; }
  };
  attempt("parent.document", () => parent.document.title);
  attempt("top.document", () => top.document.body.innerHTML);
  attempt("parent.location", () => parent.location.href);
  attempt("parent.storage", () => parent.sessionStorage.getItem("lineup.token"));
  attempt("cookie", () => document.cookie);
  attempt("localStorage", () => localStorage.getItem("x"));
  attempt("sessionStorage", () => sessionStorage.getItem("lineup.token"));
  try { await fetch("/healthz"); r.fetch = "allowed"; } catch (e) { r.fetch = "blocked"; }
  try {
    await fetch(`http://localhost:${port}/healthz`); r.fetch_other = "allowed";
  } catch (e) { r.fetch_other = "blocked"; }
  r.websocket = await new Promise((resolve) => {
    try {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/ws?token=x`);
      ws.onopen = () => resolve("allowed");
      ws.onerror = () => resolve("blocked");
    } catch (e) { resolve("blocked"); }
  });
  r.image = await new Promise((resolve) => {
    const img = new Image();
    img.onload = () => resolve("allowed");
    img.onerror = () => resolve("blocked");
    img.src = `http://127.0.0.1:${port}/beacon.png?leak=1`;
  });
  attempt("top.navigate", () => { top.location = `http://127.0.0.1:${port}/navigated`; });
  let opened = null;
  try { opened = window.open(`http://127.0.0.1:${port}/popup`); } catch (e) {}
  r.open = opened === null ? "blocked" : "allowed";
  return r;
}"""


async def test_every_escape_from_the_sandboxed_frame_fails(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage, recorded: list[str]
) -> None:
    served = await serve(nursery, tmp_path, recorded)
    await open_surface(page, served)
    url = await page.run(lambda p: p.url)
    results = await in_frame(page, ESCAPES, served.port)
    assert results == dict.fromkeys(
        [
            "parent.document",
            "top.document",
            "parent.location",
            "parent.storage",
            "cookie",
            "localStorage",
            "sessionStorage",
            "fetch",
            "fetch_other",
            "websocket",
            "image",
            "top.navigate",
            "open",
        ],
        "blocked",
    )

    def still_here(p: Page) -> None:
        assert p.url == url  # `top` was not navigated
        assert len(p.context.pages) == 1  # no window opened
        expect(p.locator(FRAME)).to_have_count(1)

    await page.run(still_here)
    # The server never saw any of it: only the Shell, its socket and the Surface's own files.
    assert [s for s in served.seen if not s.startswith("http /surfaces/")] == [
        s
        for s in served.seen
        if s in {"http /", "websocket /ws", "http /favicon.svg", "http /shell.css"}
        or s.startswith("http /js/")
    ]
    assert served.seen.count("websocket /ws") == 1
    for path in ("/beacon.png", "/healthz", "/navigated", "/popup"):
        assert not [s for s in served.seen if path in s], path
    # Chromium names a CSP-blocked image to Playwright as a request, but says it blocked it.
    assert any("img-src data: blob:" in e and "blocked" in e for e in page.console_errors)


HOSTILE_MCP_PAGE: Final = """<!DOCTYPE html><html><head><script>
window.report = { main: typeof RTCPeerConnection, child: [] };
window.addEventListener("message", (e) => {
  if (e.data && e.data.child) report.child.push(e.data.child);
});
</script></head><body><script>
const f = document.createElement("iframe");
f.srcdoc = "<script>parent.postMessage({child: 'inline ran'}, '*')</scr" + "ipt>"
  + "<script src='late.js'></scr" + "ipt>";
document.body.append(f);
document.body.dataset.ready = "1";
</script></body></html>"""
LATE_JS: Final = "parent.postMessage({child: 'served ran, RTC ' + typeof RTCPeerConnection}, '*');"


async def test_an_mcp_apps_inline_code_runs_guarded_and_no_realm_it_makes_runs_inline_code(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage, recorded: list[str]
) -> None:
    # The page's own inline scripts run, moved out and guarded (no WebRTC in its realm). A
    # srcdoc child it makes is a realm of its own, where an inline script would run with
    # WebRTC afresh: there the CSP refuses it, and only a served (guarded) script runs.
    web = tmp_path / "web"
    web.mkdir()
    (web / "index.html").write_text(HOSTILE_MCP_PAGE)
    (web / "late.js").write_text(LATE_JS)
    served = await serve(nursery, tmp_path, recorded, web_root=web, mcp_app=True)
    await open_surface(page, served)

    def report(p: Page) -> Any:
        frame = surface_frame(p)
        frame.wait_for_function("() => window.report.child.length >= 1", timeout=WAIT_MS)
        return frame.evaluate("() => window.report")

    assert await page.run(report) == {"main": "undefined", "child": ["served ran, RTC undefined"]}


# ---------------------------------------------------------------------- versions, teardown


async def test_an_unsupported_surface_version_is_not_mounted_and_is_reported(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage, recorded: list[str]
) -> None:
    served = await serve(nursery, tmp_path, recorded, surface_view(surface_version=2))

    def load(p: Page) -> None:
        p.goto(served.url)
        notice = p.get_by_test_id("surface-unavailable")
        expect(notice).to_have_text("This app's view needs a newer LineUp.", timeout=WAIT_MS)
        expect(p.locator("iframe")).to_have_count(0)

    await page.run(load)
    await served.bus.until(
        lambda: any(a.event == "hostbridge.surface_unavailable" for a in served.bus.audits)
    )
    [row] = [a for a in served.bus.audits if a.event == "hostbridge.surface_unavailable"]
    assert (row.code, row.subject_id) == ("surface_unavailable", INSTANCE)
    assert not [s for s in served.seen if s.startswith("http /surfaces/")]


@pytest.mark.parametrize("answers", [True, False], ids=["answered", "silent"])
async def test_a_surface_that_goes_is_told_to_tear_down_before_its_frame_is_removed(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage, recorded: list[str], answers: bool
) -> None:
    served = await serve(nursery, tmp_path, recorded)
    logged: list[str] = []
    await page.run(lambda p: p.on("console", lambda m: logged.append(m.text)))
    await open_surface(page, served)
    await in_frame(
        page, "(hold) => { window.__holdTeardown = hold; return window.handshake(); }", not answers
    )
    served.show({"kind": "placeholder"})  # the app closed its Surface

    def gone(p: Page) -> None:
        expect(p.locator("iframe")).to_have_count(0, timeout=WAIT_MS)
        expect(p.get_by_test_id("app-placeholder")).to_be_visible()

    await page.run(gone)
    assert "surface-teardown:unmounted" in logged
