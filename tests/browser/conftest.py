"""Real-Chromium fixtures for the Shell, driven from trio tests.

Playwright's async API is asyncio-only, so the tests drive its *sync* API on one dedicated
worker thread: sync Playwright objects belong to the thread that created them, and
`trio.to_thread.run_sync` promises no thread affinity, so every call goes through
`PlaywrightThread`, whose single-thread executor is the only place Playwright runs. The trio
loop stays free meanwhile, so a blocking `expect(...)` in that thread waits while the fake
hostbridge (served in the test's nursery) keeps answering.

Chromium is Debian's, as its headless shell (`/usr/bin/chromium-headless-shell`, installed by
`ops/install_dev.py`): the same engine without the whole browser's windows, whose WebUI toolbar
took a renderer process of its own for every test's context, half of the tests' Chromium CPU.
Playwright's own browser download is never used. A missing Chromium fails the tests, never
skips them.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import pytest
import trio
from playwright.sync_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Page,
    Playwright,
    Request,
    WebSocket,
    expect,
    sync_playwright,
)

from ._fake_hostbridge import FakeHostbridge

T = TypeVar("T")

CHROMIUM = Path("/usr/bin/chromium-headless-shell")
CHROMIUM_INSTALL = "apt-get update && apt-get install -y chromium-headless-shell"
LOOPBACK = "127.0.0.1"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Nothing leaves 127.0.0.1: every request off it goes to a proxy that is not there and
    # fails in the browser, which never proxies loopback. Each is still seen (`ShellPage.
    # requests`, from the `request` event) and fails the test. A route on every request did
    # this in Playwright instead, at a round trip through its driver and this process for each
    # of the Shell's requests: 12% of the browser tests' CPU, measured over the folder.
    f"--proxy-server=http://{LOOPBACK}:9",
]
EXPECT_TIMEOUT_MS = 5_000
CALL_TIMEOUT_S = 30.0
# Runs before any page script (and outside the page's CSP): records CSP violations.
CSP_PROBE = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`);
});
"""

expect.set_options(timeout=EXPECT_TIMEOUT_MS)


class PlaywrightThread:
    """The one OS thread that owns every Playwright object."""

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="playwright")

    def run_blocking(self, fn: Callable[[], T]) -> T:
        """For sync fixtures: run `fn` on the Playwright thread and wait for it."""
        return self._executor.submit(fn).result(timeout=CALL_TIMEOUT_S)

    async def run(self, fn: Callable[[], T], timeout_s: float = CALL_TIMEOUT_S) -> T:
        """For trio tests: run `fn` on the Playwright thread without blocking the trio loop.
        `timeout_s` bounds the wait; a step whose own `expect` waits longer than the default
        (a test with one deadline for many steps) passes its own."""
        future = self._executor.submit(fn)
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()

        def wake(_: Future[T]) -> None:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(done.set)

        future.add_done_callback(wake)
        with trio.fail_after(timeout_s):
            await done.wait()
        return future.result()

    def close(self) -> None:
        self._executor.shutdown(wait=True)


@dataclass
class ShellPage:
    """A fresh browser context and page, plus what they did on the network and the console."""

    thread: PlaywrightThread
    context: BrowserContext
    page: Page
    requests: list[str] = field(default_factory=list)  # every URL asked for, sockets included
    errors: list[str] = field(default_factory=list)  # uncaught exceptions in the page
    console_errors: list[str] = field(default_factory=list)  # e.g. a refused WebSocket

    async def run(self, fn: Callable[[Page], T], timeout_s: float = CALL_TIMEOUT_S) -> T:
        """Run `fn(page)` on the Playwright thread."""
        return await self.thread.run(lambda: fn(self.page), timeout_s)

    def off_loopback(self) -> list[str]:
        return [url for url in self.requests if urlsplit(url).hostname != LOOPBACK]


@pytest.fixture(scope="session")
def playwright_thread() -> Iterator[PlaywrightThread]:
    thread = PlaywrightThread()
    yield thread
    thread.close()


@pytest.fixture(scope="session")
def browser(playwright_thread: PlaywrightThread) -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing; the browser tests need Debian's Chromium headless shell. "
            f"Install it as root with: {CHROMIUM_INSTALL}  (or run .venv/bin/python "
            "ops/install_dev.py, which does that)",
            pytrace=False,
        )

    def launch() -> tuple[Playwright, Browser]:
        playwright = sync_playwright().start()
        try:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
            )
        except BaseException:
            playwright.stop()
            raise
        return playwright, browser

    playwright, browser = playwright_thread.run_blocking(launch)
    yield browser

    def shut_down() -> None:
        try:
            browser.close()
        finally:
            playwright.stop()

    playwright_thread.run_blocking(shut_down)


@pytest.fixture
def page(browser: Browser, playwright_thread: PlaywrightThread) -> Iterator[ShellPage]:
    def open_page() -> ShellPage:
        context = browser.new_context(
            viewport={"width": 900, "height": 640},
            service_workers="block",
            locale="en-GB",
            timezone_id="UTC",
        )
        context.set_default_timeout(EXPECT_TIMEOUT_MS)
        context.add_init_script(CSP_PROBE)
        shell = ShellPage(playwright_thread, context, context.new_page())

        def on_request(request: Request) -> None:
            shell.requests.append(request.url)

        def on_websocket(socket: WebSocket) -> None:
            shell.requests.append(socket.url)

        def on_console(message: ConsoleMessage) -> None:
            if message.type == "error":
                shell.console_errors.append(message.text)

        context.on("request", on_request)
        shell.page.on("websocket", on_websocket)
        shell.page.on("console", on_console)
        shell.page.on("pageerror", lambda error: shell.errors.append(str(error)))
        return shell

    shell = playwright_thread.run_blocking(open_page)
    yield shell
    playwright_thread.run_blocking(shell.context.close)
    assert shell.off_loopback() == [], "the Shell made a request that left 127.0.0.1"
    assert shell.errors == [], "the Shell threw"


@pytest.fixture
async def hostbridge(nursery: trio.Nursery) -> FakeHostbridge:
    fake = FakeHostbridge(token=secrets.token_urlsafe(16))
    await nursery.start(fake.run)
    return fake
