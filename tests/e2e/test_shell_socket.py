"""A hostile local client on the Shell's port, against the real hostbridge process: whatever it
sends costs it its own connection, never the hostbridge (issue 11, finding 3).

Raw TCP throughout: the point is byte sequences no well-behaved WebSocket client would write.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

import trio

from lineup.actors.kernel import ActorKind, ErrorCode
from lineup.actors.kernel.audit import SUPPRESSED
from lineup.hostbridge._actor import REFUSED
from lineup.hostbridge._server import HANDSHAKE_REFUSED
from lineup.hostbridge.shell_protocol import MAX_SHELL_FRAME_BYTES
from lineup.supervisor import Supervisor
from lineup.tests.support.runtime import start_runtime
from lineup.tests.support.shell import connect_shell, send_and_drain, shell_at
from lineup.tests.support.tree import attach, audit_rows

WAIT: Final = 15.0
CLOSE_FRAME: Final = bytes.fromhex("88820000000003e8")  # masked close, code 1000
ATTACKS: Final = 50


def _port_and_token(shell_url: str) -> tuple[int, str]:
    parts = urlsplit(shell_url)
    assert parts.port is not None
    return parts.port, parts.fragment.removeprefix("token=")


def _upgrade(port: int, token: str | None) -> bytes:
    # The token offered as the Shell offers it (a subprotocol), never in the URL.
    protocols = "" if token is None else ", ".join(shell_at(port, token).subprotocols)
    offered = f"Sec-WebSocket-Protocol: {protocols}\r\n" if protocols else ""
    return (
        f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n{offered}"
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    ).encode()


def _hostbridge(supervisor: Supervisor) -> tuple[int | None, int]:
    child = next(c for c in supervisor.status().children if c.name == "hostbridge")
    return child.pid, child.restarts


async def _still_serves_a_shell(nursery: trio.Nursery, shell_url: str) -> None:
    shell = await connect_shell(nursery, shell_url)
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: any(f.get("type") == "shell.hello" for f in s.frames))


async def test_tokenless_upgrades_pipelined_with_a_close_frame_or_a_get_cost_only_their_connection(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """The drill stopped the tree with 36 of these in 3.8 s: hypercorn raised h11's
    LocalProtocolError out of `serve` and the hostbridge exited."""
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    port, _token = _port_and_token(runtime.shell_url)
    before = _hostbridge(runtime.supervisor)
    pipelined_get = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    for n in range(ATTACKS):
        await send_and_drain(port, _upgrade(port, None) + (CLOSE_FRAME, pipelined_get)[n % 2], WAIT)
    await _still_serves_a_shell(nursery, runtime.shell_url)
    assert _hostbridge(runtime.supervisor) == before
    assert before[1] == 0


async def test_refused_handshakes_are_audited_at_a_bounded_rate_and_every_one_is_counted(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    port, token = _port_and_token(runtime.shell_url)
    foreign = _upgrade(port, token).replace(
        f"Origin: http://127.0.0.1:{port}".encode(), b"Origin: http://evil.example"
    )
    for n in range(ATTACKS):
        await send_and_drain(port, _upgrade(port, None if n % 2 else "not-the-token"), WAIT)
        await send_and_drain(port, foreign, WAIT)
    auditor = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "auditor")

    def accounted(rows: tuple[object, ...]) -> int:
        written = [r for r in rows if getattr(r, "event", None) == HANDSHAKE_REFUSED]
        dropped = [r for r in rows if getattr(r, "event", None) == SUPPRESSED]
        return len(written) + sum(int(getattr(r, "subject_id", 0) or 0) for r in dropped)

    rows = await audit_rows(auditor, lambda rows: accounted(rows) >= 2 * ATTACKS, peer="user")
    assert accounted(rows) == 2 * ATTACKS
    written = [r for r in rows if r.event == HANDSHAKE_REFUSED]
    assert 1 <= len(written) < 2 * ATTACKS  # bounded: not one row each
    assert {r.message_type for r in written} <= {"ws.token", "ws.origin"}
    assert {r.code for r in written} == {ErrorCode.PERMISSION_DENIED.value}
    assert all(token not in str(r) for r in rows)
    await _still_serves_a_shell(nursery, runtime.shell_url)
    assert _hostbridge(runtime.supervisor)[1] == 0


async def _refuse_a_huge_frame(port: int, token: str, size: int) -> tuple[int | None, int]:
    """Send one masked text frame of `size` bytes after a valid handshake, as fast as the
    server reads it. Returns (the close code the server sent, bytes of payload sent by the
    time the server closed). The code is None when the server's reset overtook its close
    frame: the kernel drops unread bytes on a reset, and the server resets a connection it
    closes with the client's bytes unread."""
    header = bytes([0x81, 0xFF]) + size.to_bytes(8, "big") + b"\0\0\0\0"  # mask 0: plain bytes
    chunk = b"a" * 65536
    sent = 0
    with trio.fail_after(WAIT):
        async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
            await stream.send_all(_upgrade(port, token))
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += await stream.receive_some(4096)
            head, _, frame = answer.partition(b"\r\n\r\n")
            assert head.split()[1] == b"101"
            closed: list[int] = []
            sent_at_close: list[int] = []

            async def read_close() -> None:
                # The server may greet first (`shell.hello`, a text frame): frames before its
                # close frame are passed over; after the close frame it sends nothing.
                nonlocal frame
                try:
                    while (code := _close_code(frame)) is None:
                        data = await stream.receive_some(65536)
                        if not data:
                            break
                        frame += data
                except trio.BrokenResourceError:
                    code = _close_code(frame)
                sent_at_close.append(sent)
                if code is not None:
                    closed.append(code)
                nursery.cancel_scope.cancel()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(read_close)
                try:
                    await stream.send_all(header)
                    while sent < size:
                        await stream.send_all(chunk)
                        sent += len(chunk)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    pass
                await trio.sleep_forever()  # until the server's close is read
    return (closed or [None])[0], sent_at_close[0]


def _close_code(data: bytes) -> int | None:
    """The code of the first close frame in `data` (server frames: unmasked), passing over the
    data frames before it; None while none has arrived whole. Any other control frame, or a
    data frame after the close, fails the test."""
    at = 0
    while len(data) - at >= 2:
        opcode, length = data[at] & 0x0F, data[at + 1] & 0x7F
        head = 2 + {126: 2, 127: 8}.get(length, 0)
        if len(data) - at < head:
            return None
        if length >= 126:
            length = int.from_bytes(data[at + 2 : at + head], "big")
        if len(data) - at < head + length:
            return None
        if opcode == 0x8:
            return int.from_bytes(data[at + head : at + head + 2], "big") if length >= 2 else 1005
        assert opcode in (0x1, 0x2), data[at : at + 16]  # a greeting, nothing else
        at += head + length
    return None


async def test_a_frame_larger_than_the_protocol_allows_is_refused_before_it_is_buffered(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    port, token = _port_and_token(runtime.shell_url)
    before = _hostbridge(runtime.supervisor)
    size = 50 * 1024 * 1024
    code, sent = await _refuse_a_huge_frame(port, token, size)
    assert code in (1009, None)  # message too big

    # Refused once the limit was read: what was sent by then is the limit plus what the two
    # sockets' buffers hold, far from the whole frame.
    assert sent < size // 5, (sent, MAX_SHELL_FRAME_BYTES)
    await _still_serves_a_shell(nursery, runtime.shell_url)
    assert _hostbridge(runtime.supervisor) == before


async def test_ten_thousand_refused_frames_write_a_bounded_number_of_audit_rows_and_a_count(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    port, token = _port_and_token(runtime.shell_url)
    flood = 10_000
    frame = bytes([0x81, 0x81, 0, 0, 0, 0]) + b"{"  # masked text frame "{": not JSON
    with trio.fail_after(WAIT):
        async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
            await stream.send_all(_upgrade(port, token))
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += await stream.receive_some(4096)
            assert answer.split()[1] == b"101"
            await stream.send_all(frame * flood + CLOSE_FRAME)
            while await stream.receive_some(65536):
                pass
    auditor = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "auditor")

    def accounted(rows: tuple[object, ...]) -> int:
        written = [r for r in rows if getattr(r, "event", None) == REFUSED]
        dropped = [r for r in rows if getattr(r, "event", None) == SUPPRESSED]
        return len(written) + sum(int(getattr(r, "subject_id", 0) or 0) for r in dropped)

    rows = await audit_rows(auditor, lambda rows: accounted(rows) >= flood, peer="user")
    written = [r for r in rows if r.event == REFUSED]
    dropped = [r for r in rows if r.event == SUPPRESSED]
    assert accounted(rows) == flood
    assert 1 <= len(written) <= 100
    assert {(r.code, r.message_type) for r in written} == {
        (ErrorCode.INVALID_ARGUMENTS.value, None)
    }
    assert dropped and {(r.actor, r.code) for r in dropped} == {
        ("hostbridge", ErrorCode.INVALID_ARGUMENTS.value)
    }
