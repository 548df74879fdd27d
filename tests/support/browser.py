"""Steps the real-Chromium tests (tests/browser) share: loading the Shell, against the fake
hostbridge or the real runtime's printed URL, and reaching into a Surface's frame.

A step that waits in the page takes its bound from the caller (`wait_ms`), never a default of
its own: each test file states how long its runtime may take.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import trio
from playwright.sync_api import Frame, Page, expect

from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.capability_surface_app import CapabilitySurfaceApp
from lineup.tests.support.runtime import CONVERSATION, Runtime, agent_client, start_runtime

if TYPE_CHECKING:  # the browser tests' own modules, imported by them (and pytest) at run time
    from lineup.tests.browser._fake_hostbridge import FakeHostbridge, ShellConnection
    from lineup.tests.browser.conftest import ShellPage

SURFACE_FRAME = '[data-testid="surface-frame"]'
# An init script: counts the sockets the page opens, from inside it (`window.__lineupSockets`).
COUNT_SOCKETS: Final = """
(() => {
  const Native = window.WebSocket;
  window.__lineupSockets = 0;
  window.WebSocket = class extends Native {
    constructor(...args) { super(...args); window.__lineupSockets += 1; }
  };
})();
"""

ShellFrame = dict[str, Any]  # a frame of the Shell protocol, as the fake hostbridge sends it


def hold_the_timers(p: Page, ahead_s: float) -> None:
    """From now on the page's timers fire only if a test says so (`p.clock.run_for`): a slow
    machine cannot fire one before the test is ready for it. Its clock stands `ahead_s` ahead
    of the real one (no page script runs yet to see it jump)."""
    now = time.time()
    p.clock.install(time=now)
    p.clock.pause_at(now + ahead_s)


async def open_shell(
    page: ShellPage, hostbridge: FakeHostbridge, *snapshot: ShellFrame | list[ShellFrame]
) -> ShellConnection:
    """Load the Shell from the fake hostbridge (the token in the fragment); return its connection
    once it said shell.ready, which the fake answers with `snapshot`."""
    hostbridge.on_ready = list(snapshot)
    await page.run(lambda p: p.goto(hostbridge.shell_url()))
    connection = await hostbridge.next_connection()
    await connection.expect("shell.ready")
    return connection


def load_shell(
    url: str, *, wait_ms: float, greeting: str | None = None, chat_alone: bool = False
) -> Callable[[Page], None]:
    """A step that loads the runtime's printed `url` and waits until the runtime is online;
    with `chat_alone`, until the chat is in front with one message; with a `greeting`, until
    the chat's one message body is that text."""

    def load(p: Page) -> None:
        p.goto(url)
        expect(p.get_by_test_id("runtime-state")).to_have_attribute(
            "data-state", "online", timeout=wait_ms
        )
        if chat_alone:
            expect(p.get_by_test_id("chat")).to_be_visible(timeout=wait_ms)
            expect(p.get_by_test_id("message")).to_have_count(1, timeout=wait_ms)
        if greeting is not None:
            expect(p.get_by_test_id("message-body")).to_have_text(greeting, timeout=wait_ms)

    return load


class Greeted(NamedTuple):
    runtime: Runtime
    agent: AgentView
    revision: str  # the inventory revision the Agent calls tools at


async def greeted_in_the_shell(
    nursery: trio.Nursery,
    data_dir: Path,
    page: ShellPage,
    greeting: str,
    *,
    wait_ms: float,
    chat_alone: bool = False,
    **options: Any,
) -> Greeted:
    """The scenario most real-runtime browser tests start from: the runtime without the demo
    Agent (`options` as `start_runtime` takes them), an Agent that said `greeting`, the Shell
    loaded and showing it (`load_shell`), and the Agent's inventory read."""
    wait_s = wait_ms / 1000
    runtime = await start_runtime(nursery, data_dir, demo_agent=False, **options)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=wait_s)
    with trio.fail_after(wait_s):
        await agent.client.say(CONVERSATION, greeting)
    await page.run(
        load_shell(runtime.shell_url, wait_ms=wait_ms, greeting=greeting, chat_alone=chat_alone)
    )
    return Greeted(runtime, agent, await agent.inventory())


class Called(NamedTuple):
    agent: AgentView
    revision: str  # the inventory revision the Agent called at
    terminal: dict[str, Any]  # the call's terminal message


async def called_from_the_shell(
    nursery: trio.Nursery,
    runtime: Runtime,
    page: ShellPage,
    tool: str,
    arguments: dict[str, Any] | None = None,
    *,
    call_id: str,
    wait_ms: float,
) -> Called:
    """What most Surface tests start from: an Agent logged in to the real runtime, the Shell
    loaded (`load_shell`), then the Agent's call of `tool` (the one that opens the app's
    Surface) ended."""
    agent = AgentView(await agent_client(nursery, runtime.appserver_url))
    revision = await agent.inventory()
    await page.run(load_shell(runtime.shell_url, wait_ms=wait_ms))
    await agent.client.call_tool(CONVERSATION, tool, arguments or {}, revision, call_id=call_id)
    with trio.fail_after(wait_ms / 1000):
        terminal = await agent.terminal(call_id)
    return Called(agent, revision, terminal)


CAPABILITY_SURFACE_APP = Path(__file__).parent / "capability_surface_app"


async def capability_surface_opened(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage, *, wait_ms: float
) -> tuple[Runtime, Called]:
    """The runtime with `CapabilitySurfaceApp` ("Cap Tester", a development app's layout), its
    Surface opened by the Agent's `capsurface.open` in the loaded Shell."""
    config = {
        "app_scope": CapabilitySurfaceApp.app_info.app_scope,
        "manifest": str(CAPABILITY_SURFACE_APP / "manifest.json"),
        "entry": f"{CapabilitySurfaceApp.__module__}:{CapabilitySurfaceApp.__qualname__}",
        "title": "Cap Tester",
    }
    runtime = await start_runtime(nursery, data_dir / "rt", demo_agent=False, extra_apps=(config,))
    called = await called_from_the_shell(
        nursery, runtime, page, "capsurface.open", call_id="c-open", wait_ms=wait_ms
    )
    return runtime, called


def framed(p: Page, selector: str, *, wait_ms: float) -> Frame:
    """The document inside the iframe `selector`, once there is one."""
    handle = p.locator(selector).element_handle(timeout=wait_ms)
    frame = handle.content_frame()
    assert frame is not None
    return frame


def ready_frame(p: Page, *, ready: str, wait_ms: float, selector: str = SURFACE_FRAME) -> Frame:
    """The document inside the iframe `selector` once the selector `ready` matches in it (each
    Surface marks its own readiness)."""
    frame = framed(p, selector, wait_ms=wait_ms)
    frame.wait_for_selector(ready, timeout=wait_ms)
    return frame
