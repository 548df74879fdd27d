"""A package `lineup app new --surface` wrote, run as it is with `lineup run --dev-app`, in real
Chromium: the Agent calls its tool, the Shell frames the package's own `web/`, whose script
does the bridge handshake (with the client the runtime serves at `_lineup/bridge.js`), shows
the app's state, and sends the app its `wave` event when the user presses the button from the
keyboard; the app's answer comes back as new state."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import FrameLocator, Page, expect

from lineup.sdk._scaffold import scaffold
from lineup.tests.support.browser import called_from_the_shell
from lineup.tests.support.runtime import start_runtime

from .conftest import ShellPage

WAIT_MS: Final = 10_000
FRAME: Final = '[data-testid="surface-frame"]'


def surface(p: Page) -> FrameLocator:
    return p.frame_locator(FRAME)


async def test_a_scaffolded_surface_does_the_handshake_shows_its_state_and_sends_its_event(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    folder = scaffold("hello-world", data_dir / "apps", surface=True)[0].parent
    runtime = await start_runtime(nursery, data_dir / "rt", demo_agent=False, dev_apps=(folder,))
    _, _, result = await called_from_the_shell(
        nursery,
        runtime,
        page,
        "hello-world.hello",
        {"name": "Ada"},
        call_id="hello-1",
        wait_ms=WAIT_MS,
    )
    assert result["payload"]["result"] == {"greeting": "Hello, Ada!"}

    def greeted(p: Page) -> None:
        expect(surface(p).locator("body")).to_have_attribute("data-state", "ready", timeout=WAIT_MS)
        expect(surface(p).get_by_role("heading", level=1)).to_have_text(
            "Hello, Ada!", timeout=WAIT_MS
        )
        expect(surface(p).get_by_role("status")).to_have_text("", timeout=WAIT_MS)
        button = surface(p).get_by_role("button", name="Wave back")
        button.focus(timeout=WAIT_MS)
        button.press("Enter", timeout=WAIT_MS)
        expect(surface(p).get_by_role("status")).to_have_text(
            "The app saw you wave.", timeout=WAIT_MS
        )
        assert p.evaluate("window.__cspViolations") == []

    await page.run(greeted)
