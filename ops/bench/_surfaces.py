"""The Whiteboard's Surface in real Chromium against the real runtime (issue 13): a Surface
opened → its iframe's `ui/notifications/initialized`, and a patch's round trip from the iframe
through the app's process to the session data revision that says the op was applied.

The whole tree runs as `lineup run` builds it (embedded AppServer, no demo Agent) in this
process's trio loop; Debian's Chromium is driven by Playwright's sync API on one worker thread
(`trio.to_thread.run_sync`), which reaches the Agent (an `AgentClient`, in the trio loop) with
`trio.from_thread.run`. Nothing in the Shell or the Whiteboard is changed for the bench: the
bench adds its own listeners to the Shell page (`OBSERVE`, outside the page's CSP, as
Playwright's init scripts are) and, in the Surface's frame, posts its own JSON-RPC requests to
the Shell as the board's script would (`PATCHES`).

- open → initialized: a first board is opened and kept (the app's process stays up). Each
  sample is a new `whiteboard.open` (a new instance, its own board id): the Shell page records
  with a MutationObserver when the Surface's `<iframe>` is inserted and, with a `message`
  listener, when that iframe's `ui/notifications/initialized` arrives (`performance.now()`
  both). The Agent's call sent → initialized falls out of the same samples (wall clocks: the
  page's `timeOrigin + now()` against `time.time()`, one machine). The instance is then closed
  from its tab, outside the clock; the kept board comes back to the front, its Surface mounted
  again (a new iframe, a new handshake): timed the same way, a third figure.
- the same for the ext-apps project's published "Get Time" MCP App, unchanged (its npm page,
  fetched pinned as the tests fetch it; the test app `tests/support/mcp_time_app.py`): each
  sample is the Agent's call of its tool, which opens a new instance's Surface.
- the floor of both, in the same Chromium run: a bare `<iframe>` with a Surface's sandbox and
  `allow`, its document served by the hostbridge under a Surface's headers (CSP and guard
  included: it is a file of the MCP App's own web folder), whose one script posts one message
  to the Shell. What a Surface's open costs beyond it is LineUp's (focus, the Shell's mount,
  the bridge's handshake) and the page's own start.
- patch round trip: in the kept board's frame, a `lineup/event` `board.patch` of one two-point
  stroke with a fresh op id, timed until the frame hears `lineup/notifications/session-data`
  whose `applied` holds that op id; one at a time, spaced to stay inside the bridge's rate
  limit (60 messages/s a Surface) outside the clock. Each stroke is undone after its sample
  (untimed): the app rewrites, and the Surface receives, the whole board on each revision, so
  the round trip grows with the board (about 2.5× from 10 to 300 strokes on one run here);
  the figure is that of a near-empty board.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import trio

from lineup import wire
from lineup.ops.agent import AgentClient
from lineup.sdk.manifest import manifest_json
from lineup.sdk.tools import manifest_of
from lineup.tests.support.mcp_time_app import MCP_APP_PACKAGE, TimeApp
from lineup.tests.support.npm import NpmPackage, installed

from ._linked import start_embedded

__all__ = ["CHROMIUM", "SurfaceTimes", "surface_latencies"]

CHROMIUM: Final = Path("/usr/bin/chromium")
CHROMIUM_ARGS: Final = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
AGENT, SECRET, CONVERSATION = "demo-agent", "demo-secret", "conv-demo"
TIME_TOOL: Final = "gettime.get-time"
WAIT_S: Final = 30.0
WAIT_MS: Final = int(WAIT_S * 1000)
FRAME: Final = '[data-testid="surface-frame"]'
TABS: Final = '[data-testid="app-switcher"] [data-testid="app-tab"]'
PATCH_WARM_UP: Final = 10
PATCH_SPACING_MS: Final = 25  # ≤ 40 patches/s: well inside the bridge's 60/s a Surface

# The bench's listeners in the Shell page: each Surface iframe inserted, and its handshake.
OBSERVE: Final = """
(() => {
  const FLOOR_METHOD = "bench/floor";
  const frames = [];  // {iframe, instance, inserted, initialized}
  window.__benchFrames = frames;
  const seen = (node, at) => {
    if (!(node instanceof HTMLIFrameElement)) return;
    if (node.dataset.testid !== "surface-frame" && node.dataset.testid !== "bench-floor") return;
    if (frames.some((f) => f.iframe === node)) return;
    const m = /\\/surfaces\\/([^/]+)\\//.exec(node.getAttribute("src") || "");
    frames.push({
      iframe: node,
      instance: m ? decodeURIComponent(m[1]) : null,
      inserted: at,
      initialized: null,
    });
  };
  new MutationObserver((records) => {
    const at = performance.now();
    for (const r of records) {
      for (const node of r.addedNodes) {
        if (node instanceof Element) {
          [node, ...node.querySelectorAll("iframe")].forEach((x) => seen(x, at));
        }
      }
    }
  }).observe(document, { childList: true, subtree: true });
  window.addEventListener("message", (event) => {
    const m = event.data;
    if (!m || (m.method !== "ui/notifications/initialized" && m.method !== FLOOR_METHOD)) return;
    const at = performance.now();
    const f = frames.find((x) => x.iframe.contentWindow === event.source);
    if (f && f.initialized === null) f.initialized = at;
  }, true);
})();
"""
# The sample of instance `instance`, once its iframe is initialized: [inserted, initialized]
# (page clock, ms) and the page's wall clock offset (`timeOrigin`).
OPENED: Final = """(instance) => {
  const f = (window.__benchFrames || []).find(
    (x) => x.instance === instance && x.initialized !== null);
  return f ? [f.inserted, f.initialized, performance.timeOrigin] : null;
}"""
NEWEST_INSTANCE: Final = """(known) => {
  const f = (window.__benchFrames || []).filter((x) => !known.includes(x.instance)).at(-1);
  return f && f.initialized !== null ? f.instance : null;
}"""
# The handshakes of `instance`'s Surface mounted again (every iframe of it but the first), ms.
REMOUNTS: Final = """(instance) => (window.__benchFrames || [])
  .filter((f) => f.instance === instance && f.initialized !== null)
  .slice(1).map((f) => f.initialized - f.inserted)"""
# Every Surface iframe still in the page has done its handshake (nothing mounting).
SETTLED: Final = """() => (window.__benchFrames || []).every(
  (f) => !f.iframe.isConnected || f.initialized !== null)"""
# The floor's document and its one script (a file: a Surface's CSP allows no inline script).
FLOOR_HTML: Final = b'<!doctype html><meta charset="utf-8"><script src="floor.js"></script>\n'
FLOOR_JS: Final = b'window.parent.postMessage({jsonrpc: "2.0", method: "bench/floor"}, "*");\n'
# In the Shell page: `count` bare frames one at a time, each with a Surface's sandbox and
# `allow`, its document the floor's under `instance`'s Surface path, removed once it posted;
# each timed as a Surface is (OBSERVE: inserted → its message), ms.
FLOORS: Final = """async ({instance, count}) => {
  const times = [];
  for (let n = 0; n < count; n++) {
    const iframe = document.createElement("iframe");
    iframe.dataset.testid = "bench-floor";
    iframe.setAttribute("sandbox", "allow-scripts");
    iframe.setAttribute("allow", "");
    iframe.style.cssText = "position:fixed;left:0;top:0;width:600px;height:400px;border:0";
    iframe.src = `/surfaces/${encodeURIComponent(instance)}/floor.html?n=${n}`;
    document.body.append(iframe);
    const f = await new Promise((resolve, reject) => {
      const started = performance.now();
      const look = () => {
        const found = window.__benchFrames.find((x) => x.iframe === iframe);
        if (found && found.initialized !== null) resolve(found);
        else if (performance.now() - started > 10000) reject(new Error("no floor message"));
        else setTimeout(look, 5);
      };
      look();
    });
    times.push(f.initialized - f.inserted);
    iframe.remove();
  }
  return times;
}"""
# In the Surface's frame: `count` patches one at a time, each timed (ms) from the post to the
# session data revision that lists its op id in `applied`. Each stroke is then undone (its
# own patch, outside the clock), so every sample meets the same, near-empty board.
PATCHES: Final = """async ({prefix, count, spacing}) => {
  let last = -Infinity;
  const patch = async (op) => {
    const wait = last + spacing - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const id = `bench-${op.op_id}`;
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => done(reject, new Error(`no revision for ${op.op_id}`)), 10000);
      const on = (event) => {
        if (event.source !== window.parent) return;
        const m = event.data;
        if (!m || typeof m !== "object") return;
        if (m.id === id && m.error) {
          done(reject, new Error(`refused: ${JSON.stringify(m.error.data || m.error)}`));
        } else if (m.method === "lineup/notifications/session-data"
            && m.params && m.params.data && Array.isArray(m.params.data.applied)
            && m.params.data.applied.includes(op.op_id)) {
          done(resolve, performance.now() - started);
        }
      };
      const done = (fn, value) => {
        clearTimeout(timer);
        window.removeEventListener("message", on);
        fn(value);
      };
      window.addEventListener("message", on);
      const started = performance.now();
      last = started;
      window.parent.postMessage({jsonrpc: "2.0", id, method: "lineup/event",
        params: {name: "board.patch", data: {ops: [op]}}}, "*");
    });
  };
  const times = [];
  for (let n = 0; n < count; n++) {
    const opId = `${prefix}-${n}`;
    const x = 100 + (n % 50) * 20, y = 100 + (Math.floor(n / 50) % 40) * 20;
    times.push(await patch({op_id: opId, kind: "stroke", mode: "pen", colour: "#1f2328",
                            width: 4, points: [x, y, x + 10, y + 10]}));
    await patch({op_id: `${opId}-u`, kind: "undo", target: opId});
  }
  return times;
}"""


@dataclass
class SurfaceTimes:
    """Seconds, one entry a sample."""

    opened: list[float] = field(default_factory=list)  # iframe inserted → initialized
    from_call: list[float] = field(default_factory=list)  # Agent call sent → initialized
    # The kept board's Surface mounted again (in front once more after another closed) →
    # initialized.
    refronted: list[float] = field(default_factory=list)
    patches: list[float] = field(default_factory=list)  # patch posted → applied revision
    mcp_opened: list[float] = field(default_factory=list)  # the MCP App's: inserted → initialized
    floor: list[float] = field(default_factory=list)  # a bare frame: inserted → its message


def _time_app(folder: Path) -> dict[str, str]:
    """The Get Time MCP App as `--dev-app` adds one, in `folder`: its manifest, and its web
    folder holding the published page, unchanged, and the floor."""
    web = folder / "web"
    web.mkdir(parents=True)
    page = installed(NpmPackage(*MCP_APP_PACKAGE)) / "dist" / "mcp-app.html"
    (web / "index.html").write_bytes(page.read_bytes())
    (web / "floor.html").write_bytes(FLOOR_HTML)
    (web / "floor.js").write_bytes(FLOOR_JS)
    manifest = manifest_of(TimeApp)
    path = folder / f"{manifest.app_scope}.json"
    path.write_text(manifest_json(manifest))
    return {
        "app_scope": manifest.app_scope,
        "manifest": str(path),
        "entry": f"{TimeApp.__module__}:{TimeApp.__qualname__}",
        "title": "Get Time",
    }


async def surface_latencies(opens: int, patches: int) -> SurfaceTimes:
    """`opens` Surfaces opened of each kind, as many floors, and `patches` patches, against
    one real runtime."""
    with tempfile.TemporaryDirectory(prefix="lineup-bench-surfaces-") as tmp:
        data_dir = Path(tmp) / "rt"
        data_dir.mkdir(mode=0o700)
        app = await trio.to_thread.run_sync(_time_app, Path(tmp) / "gettime")
        async with trio.open_nursery() as nursery:
            plan = await start_embedded(nursery, data_dir, extra_apps=(app,))
            try:
                async with AgentClient(plan.appserver_url) as client:
                    await client.login(AGENT, SECRET)
                    agent = _Agent(client, await _revision(client))
                    return await trio.to_thread.run_sync(
                        _in_browser, plan.shell_url, agent, opens, patches
                    )
            finally:
                nursery.cancel_scope.cancel()


@dataclass
class _Agent:
    client: AgentClient
    revision: str

    def open_board(self, board_id: str) -> float:
        """From the browser's thread: `whiteboard.open` sent; returns when (wall clock, s) the
        call was about to be sent."""
        board = {"board_id": board_id, "title": f"Bench {board_id}"}
        return self.call("whiteboard.open", board, f"open-{board_id}")

    def call(self, tool: str, arguments: dict[str, Any], call_id: str) -> float:
        """From the browser's thread: the Agent's call of `tool` sent; returns when (wall
        clock, s) it was about to be sent."""

        async def call() -> float:
            with trio.fail_after(WAIT_S):
                sent = time.time()
                await self.client.call_tool(
                    CONVERSATION, tool, arguments, self.revision, call_id=call_id
                )
                return sent

        return trio.from_thread.run(call)


async def _revision(client: AgentClient) -> str:
    """The inventory revision the Agent has been sent (waiting for it if need be)."""
    cursor, revision = "", None
    with trio.fail_after(WAIT_S):
        while True:
            page, cursor = await client.sync(cursor, timeout_ms=500 if revision is None else 0)
            for message in page:
                if message.get("type") == wire.INVENTORY:
                    revision = str(message["payload"]["revision"])
            if revision is not None and not page:
                return revision


def _in_browser(shell_url: str, agent: _Agent, opens: int, patches: int) -> SurfaceTimes:
    """On the browser's thread (every Playwright object lives and dies here)."""
    from playwright.sync_api import sync_playwright  # a dev dependency: imported when run

    times = SurfaceTimes()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            context = browser.new_context(viewport={"width": 900, "height": 640})
            context.set_default_timeout(WAIT_MS)
            context.add_init_script(OBSERVE)
            page = context.new_page()
            page.goto(shell_url)
            page.wait_for_selector('[data-testid="runtime-state"][data-state="online"]')

            # The board kept open: the app's process stays up for every later open.
            kept = _open(page, agent, "kept", known=[])
            times.patches = _patches(page, kept, patches)
            known = [kept]
            for n in range(opens):
                instance, inserted, initialized, origin, sent = _timed_open(
                    page, agent, f"b{n}", known
                )
                times.opened.append((initialized - inserted) / 1e3)
                times.from_call.append((origin + initialized) / 1e3 - sent)
                known.append(instance)
                _close(page, instance)
            times.refronted = [t / 1e3 for t in page.evaluate(REMOUNTS, kept)]
            # The MCP App: a first instance kept (its process stays up, and its Surface
            # serves the floor's document), then each sample a call opening a new one.
            agent.call(TIME_TOOL, {}, "time-kept")
            time_kept = _newest(page, known)
            known.append(time_kept)
            for n in range(opens):
                agent.call(TIME_TOOL, {}, f"time-{n}")
                instance = _newest(page, known)
                inserted, initialized, _ = page.evaluate(OPENED, instance)
                times.mcp_opened.append((float(initialized) - float(inserted)) / 1e3)
                known.append(instance)
                _close(page, instance)
            floors = page.evaluate(FLOORS, {"instance": time_kept, "count": opens})
            times.floor = [t / 1e3 for t in floors]
            context.close()
        finally:
            browser.close()
    return times


def _newest(page: Any, known: list[str]) -> str:
    """The instance whose Surface was mounted, and initialized, last of those not `known`."""
    return str(page.wait_for_function(NEWEST_INSTANCE, arg=known).json_value())


def _open(page: Any, agent: _Agent, board_id: str, known: list[str]) -> str:
    return _timed_open(page, agent, board_id, known)[0]


def _timed_open(
    page: Any, agent: _Agent, board_id: str, known: list[str]
) -> tuple[str, float, float, float, float]:
    """A new board opened by the Agent: (its instance, iframe inserted and initialized (page
    ms), the page's timeOrigin (wall ms), the call sent (wall s))."""
    sent = agent.open_board(board_id)
    handle = page.wait_for_function(NEWEST_INSTANCE, arg=known)
    instance = str(handle.json_value())
    inserted, initialized, origin = page.evaluate(OPENED, instance)
    _frame_of(page, instance)  # its board connected (subscribed) before anything else is timed
    return instance, float(inserted), float(initialized), float(origin), sent


def _frame_of(page: Any, instance: str) -> Any:
    handle = page.locator(
        f'[data-testid="surface"][data-instance-id="{instance}"] {FRAME}'
    ).element_handle()
    frame = handle.content_frame()
    assert frame is not None
    frame.wait_for_selector('body[data-state="ready"]')
    return frame


def _patches(page: Any, instance: str, count: int) -> list[float]:
    frame = _frame_of(page, instance)
    arg = {"prefix": "bench-warm", "count": PATCH_WARM_UP, "spacing": PATCH_SPACING_MS}
    frame.evaluate(PATCHES, arg)
    arg = {"prefix": "bench", "count": count, "spacing": PATCH_SPACING_MS}
    return [t / 1e3 for t in frame.evaluate(PATCHES, arg)]


def _close(page: Any, instance: str) -> None:
    """Close the instance from its tab (outside the clock) and wait until the Shell is quiet:
    its tab gone, and any Surface brought back to the front initialized."""
    tabs = page.locator(TABS).count()
    page.locator(f'[data-testid="app-close"][data-instance-id="{instance}"]').click()
    page.wait_for_function(f"(n) => document.querySelectorAll('{TABS}').length === n", arg=tabs - 1)
    page.wait_for_function(SETTLED)
