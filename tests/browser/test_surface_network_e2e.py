"""A Surface cannot reach the network by WebRTC, in real Chromium through the whole runtime
(issue 27, finding 4).

CSP does not govern WebRTC, and Chromium ignores `webrtc 'block'`: the hostbridge serves every
Surface script with its guard first (`hostbridge/_surface_guard.py`), which deletes the WebRTC
interfaces from each realm. The Surface (tests/support/capability_surface_app, its `net.js`
loaded as its own script) tries every way it has to an RTCPeerConnection whose STUN server is a
UDP socket and whose TURN server is a TCP listener of this test, on 127.0.0.1: its own globals,
the way back through another WebRTC interface, a fresh about:blank child's globals, a srcdoc
child running the same script in a realm of its own (then again after `document.write`), and a
worker. Each way answers; none may have started, and the listeners received nothing. (Without
the guard, the Surface and its srcdoc child start ICE gathering, and STUN requests arrive.)
Browser waits are Playwright's; no sleeps.
"""

from __future__ import annotations

import socket
from functools import partial
from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Page

from lineup.tests.support.browser import capability_surface_opened, ready_frame

from .conftest import ShellPage

WAIT_MS: Final = 10_000
LOOPBACK: Final = "127.0.0.1"

# Every way `net.js` tries, and how each must end.
BLOCKED: Final = [
    "Surface RTCPeerConnection: absent",
    "Surface via RTCDataChannel: absent",
    "Surface webkitRTCPeerConnection: absent",
    "about:blank child: blocked: SecurityError",
    "srcdoc child RTCPeerConnection: absent",
    "srcdoc child after document.write: absent",
    "srcdoc child via RTCDataChannel: absent",
    "srcdoc child webkitRTCPeerConnection: absent",
    "worker: blocked",
]

surface_frame = partial(ready_frame, ready='body[data-ready="1"]', wait_ms=WAIT_MS)


async def receive_datagrams(sock: trio.socket.SocketType, got: list[bytes]) -> None:
    while True:
        got.append(await sock.recv(4096))


async def accept_connections(listener: trio.SocketListener, got: list[str]) -> None:
    while True:
        stream = await listener.accept()
        got.append("connected")
        with trio.move_on_after(1):  # whatever the TURN client sends first
            got.append(repr(await stream.receive_some(4096)))
        await stream.aclose()


async def test_a_surface_reaches_no_stun_or_turn_server_by_webrtc_in_any_realm(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    udp = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    await udp.bind((LOOPBACK, 0))
    (tcp,) = await trio.open_tcp_listeners(0, host=LOOPBACK)
    datagrams: list[bytes] = []
    connections: list[str] = []
    with udp:
        async with tcp, trio.open_nursery() as listening:
            listening.start_soon(receive_datagrams, udp, datagrams)
            listening.start_soon(accept_connections, tcp, connections)
            cfg = {"udp": udp.getsockname()[1], "tcp": tcp.socket.getsockname()[1]}
            lines = await attack_by_webrtc(nursery, data_dir, page, cfg)
            listening.cancel_scope.cancel()
    # Nothing was started anywhere, so nothing is on its way: the listeners heard nothing.
    heard = {"udp": len(datagrams), "tcp": connections}
    assert (sorted(lines), heard) == (BLOCKED, {"udp": 0, "tcp": []})
    assert page.off_loopback() == []


async def attack_by_webrtc(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage, cfg: dict[str, int]
) -> list[str]:
    """The runtime with the test app, its Surface in front, and what `net.js` got there."""
    await capability_surface_opened(nursery, data_dir, page, wait_ms=WAIT_MS)

    def attack(p: Page) -> list[str]:
        frame = surface_frame(p)
        # The page's own script, served by the hostbridge as any Surface script is.
        frame.evaluate(
            """() => { const s = document.createElement('script');
                       s.src = 'net.js'; document.head.append(s); }"""
        )
        frame.wait_for_function("() => typeof window.netAttack === 'function'", timeout=WAIT_MS)
        lines: list[str] = frame.evaluate("(cfg) => window.netAttack(cfg)", cfg)
        return lines

    return await page.run(attack, timeout_s=WAIT_MS / 1000 * 3)
