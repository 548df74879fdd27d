"""The Surface guard's own script in real Chromium (`hostbridge/_surface_guard.py`): it takes
every WebRTC global from the realm it runs in and nothing else, and a global it cannot take
stops the script it heads (fail closed). That it keeps a whole Surface off the network is
tests/browser/test_surface_network_e2e.py."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page

from lineup.hostbridge._surface_guard import SURFACE_GUARD

from .conftest import ShellPage

GUARD = SURFACE_GUARD.decode()


async def test_the_guard_deletes_every_webrtc_global_and_leaves_the_rest(page: ShellPage) -> None:
    def run(p: Page) -> Any:
        before = p.evaluate("Object.getOwnPropertyNames(globalThis).filter((n) => /RTC/.test(n))")
        after = p.evaluate(
            GUARD + ";[Object.getOwnPropertyNames(globalThis).filter((n) => /RTC/.test(n)),"
            " typeof fetch, typeof MediaStream]"
        )
        return before, after

    before, (after, fetch, media_stream) = await page.run(run)
    assert {"RTCPeerConnection", "webkitRTCPeerConnection", "RTCDataChannel"} <= set(before)
    assert (after, fetch, media_stream) == ([], "function", "function")


async def test_a_webrtc_global_the_guard_cannot_delete_stops_the_script_it_heads(
    page: ShellPage,
) -> None:
    def run(p: Page) -> tuple[Any, Any, bool]:
        script = GUARD + ";globalThis.__ranOn = (globalThis.__ranOn || 0) + 1"
        p.evaluate(script)
        ran = p.evaluate("globalThis.__ranOn")  # once: nothing to stop it yet
        p.evaluate("Object.defineProperty(globalThis, 'RTCStuck', {value: 1, configurable: false})")
        try:
            p.evaluate(script)
        except PlaywrightError:  # the guard's Error, thrown in the page
            return ran, p.evaluate("globalThis.__ranOn"), True
        return ran, p.evaluate("globalThis.__ranOn"), False

    assert await page.run(run) == (1, 1, True)
