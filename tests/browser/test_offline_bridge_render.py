"""The Surface bridge while the Shell's socket is cut, in real Chromium (issue 28: a Surface is
told it is offline, and nothing it asks waits on an answer that cannot come).

The real hostbridge actor serves the real Shell with a fake bus (as in test_surface_render.py);
the Shell's socket goes through Playwright's WebSocket route, so the test cuts it from the
page's side. The Surface is told `{"online": false}`, a request made then is answered
`runtime_unreachable` at once, and a revision of its session data written while the socket is
down (told to no Shell) reaches it once the Shell is connected again, with `{"online": true}`:
the bridge renewed its subscription. Browser waits are Playwright's; no sleeps.
"""

from __future__ import annotations

from pathlib import Path

import trio
from playwright.sync_api import Page, WebSocketRoute

from lineup.hostbridge.messages import SessionDataUpdatedEvent
from lineup.tests.hostbridge.test_actor import from_peer
from lineup.tests.hostbridge.test_surfaces import INSTANCE, SURFACE, surface_view

from .conftest import ShellPage
from .test_surface_render import in_frame, open_surface, received, serve


async def test_a_surface_hears_the_link_go_and_come_back_and_gets_what_was_written_meanwhile(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage
) -> None:
    served = await serve(nursery, tmp_path, [], surface_view())
    sockets: list[WebSocketRoute] = []

    def routed(p: Page) -> None:
        def through(ws: WebSocketRoute) -> None:
            ws.connect_to_server()  # frames go both ways unchanged
            sockets.append(ws)

        p.route_web_socket("**/ws", through)

    await page.run(routed)
    await open_surface(page, served)
    hello = await in_frame(page, "() => window.handshake()")
    assert hello["result"]["hostContext"]["lineup"]["online"] is True
    subscribed = await in_frame(page, "() => window.rpc('lineup/session-data/subscribe', {})")
    assert subscribed["result"] == {"data": None, "revision": 0}

    await page.run(lambda p: sockets[-1].close())
    # Written while the Shell has no socket (the Shell waits at least 125 ms to reconnect):
    # the runtime tells it to the Shells connected now, none.
    served.bus.data, served.bus.revision = {"n": 1}, 1
    served.actor.on_session_data(
        *from_peer(
            "focus",
            SessionDataUpdatedEvent(
                instance_id=INSTANCE, surface_id=SURFACE, data={"n": 1}, revision=1
            ),
        )
    )
    # The Shell reconnects by itself 125 ms on: the two may already both be there.
    told = await received(page, "lineup/notifications/connection", 2)
    assert [t["params"] for t in told] == [{"online": False}, {"online": True}]
    assert len(sockets) == 2  # the Shell connected again by itself
    [pushed] = await received(page, "lineup/notifications/session-data")
    assert pushed["params"] == {"data": {"n": 1}, "revision": 1}


async def test_a_request_made_while_the_link_is_down_is_answered_at_once_with_its_code(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage
) -> None:
    served = await serve(nursery, tmp_path, [], surface_view())
    sockets: list[WebSocketRoute] = []

    def routed(p: Page) -> None:
        def through(ws: WebSocketRoute) -> None:
            sockets.append(ws)
            if len(sockets) == 1:
                ws.connect_to_server()
            else:
                ws.close()  # the runtime is still away: every new socket is refused

        p.route_web_socket("**/ws", through)

    await page.run(routed)
    await open_surface(page, served)
    await in_frame(page, "() => window.handshake()")
    await page.run(lambda p: sockets[0].close())
    [down] = await received(page, "lineup/notifications/connection")
    assert down["params"] == {"online": False}
    asked = await in_frame(
        page,
        """async () => {
          const at = performance.now();
          const answer = await window.rpc('lineup/session-data/get');
          return {answer, ms: performance.now() - at};
        }""",
    )
    assert asked["answer"]["error"]["data"] == {"code": "runtime_unreachable"}
    assert asked["ms"] < 1000, asked
