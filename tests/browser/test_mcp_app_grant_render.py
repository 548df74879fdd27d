"""An MCP App page waiting on the user's grant, in real Chromium (issue 30).

The real hostbridge actor serves the real Shell with a fake bus (as in test_surface_render.py)
whose gateway holds the Shell's `surface.network` question unanswered. The page is not framed
while it waits (the Surface says so); and when the Shell's socket goes meanwhile, the answer
can no longer come, so the page is framed at once with the default: no network, no device.
Browser waits are Playwright's; trio waits `bus.until`; no sleeps.
"""

from __future__ import annotations

from pathlib import Path

import trio
from playwright.sync_api import Page, WebSocketRoute, expect

from lineup.actors.gateway.messages import SurfaceCapabilityRequest
from lineup.sdk.mcp_grants import NETWORK_CAPABILITY
from lineup.tests.hostbridge.test_surfaces import surface_view

from .conftest import ShellPage
from .test_surface_render import FRAME, WAIT_MS, serve


async def test_a_page_waiting_on_its_grant_is_framed_with_the_default_when_the_link_goes(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage
) -> None:
    view = surface_view(mcp_access={"network": True, "devices": ["camera"]})
    served = await serve(nursery, tmp_path, [], view, mcp_app=True)
    served.bus.capability_gate = trio.Event()
    sockets: list[WebSocketRoute] = []

    def load(p: Page) -> None:
        def through(ws: WebSocketRoute) -> None:
            ws.connect_to_server()
            sockets.append(ws)

        p.route_web_socket("**/ws", through)
        p.goto(served.url)
        expect(p.get_by_test_id("surface-asking")).to_be_visible(timeout=WAIT_MS)
        expect(p.get_by_test_id("surface")).to_have_attribute("data-state", "asking")

    await page.run(load)

    def asked() -> list[SurfaceCapabilityRequest]:
        return [r for r in served.bus.requests if isinstance(r, SurfaceCapabilityRequest)]

    await served.bus.until(lambda: len(asked()) == 1)
    assert asked()[0].capability == NETWORK_CAPABILITY

    def cut(p: Page) -> None:
        expect(p.locator(FRAME)).to_have_count(0)  # nothing framed before an answer
        sockets[-1].close()
        expect(p.locator(FRAME)).to_have_count(1, timeout=WAIT_MS)
        expect(p.get_by_test_id("surface")).to_have_attribute("data-state", "mounted")
        expect(p.locator(FRAME)).to_have_attribute("allow", "")

    await page.run(cut)
    assert len(asked()) == 1  # the devices were never asked: framed without them
    served.bus.capability_gate.set()
