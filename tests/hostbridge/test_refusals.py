"""Which refusals at the Shell's socket become audit rows."""

from __future__ import annotations

import logging
import socket

import hypercorn.config
import pytest
import trio
from starlette.websockets import WebSocketDisconnect

from lineup.hostbridge._listener import serve
from lineup.hostbridge._refusals import RefusalLog
from lineup.hostbridge._server import HANDSHAKE_REFUSED, ShellAccess, ShellHub, _listen, build_app
from lineup.hostbridge.shell_protocol import ShellAction, ShellOutbound
from lineup.tests.support.shell import send_and_drain

# ---------------------------------------------------------------------- the log


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_log_gets_one_line_per_kind_per_window_and_then_how_many_it_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = _Clock()
    quiet = RefusalLog(logging.getLogger("lineup.test.refusals"), window=10.0, clock=clock)
    with caplog.at_level(logging.WARNING, logger="lineup.test.refusals"):
        for n in range(1000):
            clock.now = n * 0.001
            quiet.refused("hostbridge.connection_failed", error="LocalProtocolError")
            quiet.refused("hostbridge.shell_handshake_refused", check="ws.token")
        clock.now = 10.0
        quiet.refused("hostbridge.connection_failed", error="LocalProtocolError")
        clock.now = 30.0
        quiet.refused("hostbridge.shell_handshake_refused", check="ws.token")
    assert [r.getMessage() for r in caplog.records] == [
        "hostbridge.connection_failed error=LocalProtocolError",
        "hostbridge.shell_handshake_refused check=ws.token",
        "hostbridge.connection_failed error=LocalProtocolError suppressed=999",
        "hostbridge.connection_failed error=LocalProtocolError",
        "hostbridge.shell_handshake_refused check=ws.token suppressed=999",
        "hostbridge.shell_handshake_refused check=ws.token",
    ]
    assert all(r.exc_info is None for r in caplog.records)


# ---------------------------------------------------------------------- a real server


UPGRADE = (
    "GET /ws{query} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: {origin}\r\n"
    "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
)
CLOSE_FRAME = bytes.fromhex("88820000000003e8")


async def _no_greeting() -> list[ShellOutbound]:
    return []


async def _no_inbound(frame: ShellAction) -> None:
    raise AssertionError("nothing should get through")


async def test_refused_handshakes_and_h11_errors_are_audited_by_kind_and_logged_without_spam(
    nursery: trio.Nursery, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    access = ShellAccess(port=port, token="the-token")
    refusals: list[tuple[str | None, str, str]] = []

    def refused(
        message_type: str | None, event: str = "frame", code: str = "invalid_arguments"
    ) -> None:
        refusals.append((message_type, event, code))

    app = build_app(access, ShellHub(), _no_greeting, _no_inbound, refused)
    config = hypercorn.config.Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("lineup.hostbridge")
    attacks = 40
    with caplog.at_level(logging.DEBUG, logger="lineup.hostbridge"):
        await nursery.start(serve, app, config)
        ours, foreign = f"http://127.0.0.1:{port}", "http://evil.example"
        for n in range(attacks):
            # Without a token, pipelined with a close frame or a GET: h11 raises on each.
            tail = (CLOSE_FRAME, f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            upgrade = UPGRADE.format(query="", port=port, origin=ours).encode()
            await send_and_drain(port, upgrade + tail[n % 2], 10)
            bad_origin = UPGRADE.format(query="?token=the-token", port=port, origin=foreign)
            await send_and_drain(port, bad_origin.encode(), 10)
        nursery.cancel_scope.cancel()

    assert refusals.count(("ws.token", HANDSHAKE_REFUSED, "permission_denied")) == attacks
    assert refusals.count(("ws.origin", HANDSHAKE_REFUSED, "permission_denied")) == attacks
    assert len(refusals) == 2 * attacks
    lines = [r.getMessage() for r in caplog.records if r.name == "lineup.hostbridge"]
    assert len(lines) <= 4, lines  # one per kind: the token, the origin, h11's error (twice)
    assert any("check=ws.token" in line for line in lines)
    assert all(r.exc_info is None for r in caplog.records), "no traceback in the log"
    assert "the-token" not in "\n".join(lines)


@pytest.mark.parametrize(
    "text",
    [
        '{"type":"ui.event","instance_id":"chat","event":{"kind":"composer.submit",'
        '"text":"\\ud800"}}',
        '{"type":"ui.event","instance_id":"chat","event":{"kind":"composer.submit",'
        '"text":"x","client_id":NaN}}',
        '{"type":"shell.ready","n":Infinity}',
    ],
    ids=["lone-surrogate", "nan", "infinity"],
)
async def test_a_shell_frame_that_is_not_json_is_refused_and_the_socket_reads_on(text: str) -> None:
    """JSON is JSON at the Shell too (issue 11): such a frame is refused, never handed on."""
    refused: list[str | None] = []
    send, receive = trio.open_memory_channel[str](1)
    with send, receive:
        await _listen(_Socket(text), send, _no_greeting, _no_inbound, refused.append)
    assert len(refused) == 1


class _Socket:
    """The frames a Shell sends, then it goes away."""

    def __init__(self, *texts: str) -> None:
        self._texts = list(texts)

    async def receive_text(self) -> str:
        if self._texts:
            return self._texts.pop(0)
        raise WebSocketDisconnect(1000)

    async def close(self, code: int) -> None:
        raise AssertionError("closed")


# ---------------------------------------------------------------------- a port taken


@pytest.mark.parametrize("pinned", [True, False])
async def test_a_taken_port_stops_the_tree_only_when_the_user_named_it(pinned: bool) -> None:
    """The user's port: CannotStart (the tree stops, saying why). A port the runtime picked
    and someone took meanwhile: the OSError, a child's failure its restart may mend."""
    from lineup.actors.kernel.actor import CannotStart

    app = build_app(
        ShellAccess(port=1, token="t"), ShellHub(), _no_greeting, _no_inbound, lambda *a: None
    )
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        config = hypercorn.config.Config()
        config.bind = [f"127.0.0.1:{port}"]
        expected: type[Exception] = CannotStart if pinned else OSError
        with pytest.raises(expected) as raised:
            await serve(app, config, pinned=pinned)  # fails at the bind, before serving
        assert isinstance(raised.value, CannotStart) is pinned
