"""A peer that floods a bus with refused frames: a bounded number of audit rows per offender,
one counter row for the rest, and a MiniApp that keeps at it is reported (once) to be stopped
(actors/kernel/bus.py with the audit module's `RefusalLedger`)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import pytest
import trio

from lineup.actors.kernel import Connection, ErrorCode, Identity
from lineup.actors.kernel.audit import REFUSAL_ROWS_PER_WINDOW, STOP_AFTER_REFUSALS, SUPPRESSED
from lineup.actors.kernel.control import PeerMisbehavedEvent

from ._messages import EchoRequest
from .test_bus import (
    MINIAPP,
    ROUTER,
    SUPERVISOR,
    WAIT,
    AuditLog,
    Server,
    attach_raw,
    join,
    start_bus,
)

FLOOD = 200


@pytest.fixture
async def raw_sockets() -> AsyncIterator[list[socket.socket]]:
    socks: list[socket.socket] = []
    yield socks
    for sock in socks:
        sock.close()


class Hook:
    """The supervisor's `on_misbehaved`, recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ErrorCode]] = []

    async def __call__(self, conn: Connection, code: ErrorCode) -> None:
        self.calls.append((conn.identity.name, code))


async def rows_until(audit: AuditLog, event: str) -> list[tuple[str, str | None, str | None]]:
    await audit.first(event)
    return [(r.event, r.code, r.subject_id) for r in audit.records]


async def until_peer(audit: AuditLog, peer: str) -> None:
    with trio.fail_after(WAIT):
        while not any(r.peer == peer for r in audit.records):
            await audit._grew.wait()


async def test_denied_frames_on_the_control_channel_write_a_few_rows_then_one_counter_row(
    nursery: trio.Nursery, raw_sockets: list[socket.socket]
) -> None:
    audit, hook = AuditLog(), Hook()
    supervisor = await start_bus(nursery, SUPERVISOR, Server(), audit)
    supervisor.on_misbehaved = hook
    app = attach_raw(supervisor, MINIAPP, raw_sockets)

    for _ in range(FLOOD):  # focus's request: a MiniApp may not send it
        await app.send("e", {"type": "supervisor.child.start", "name": "x", "config": {}})

    rows = await rows_until(audit, SUPPRESSED)
    denied = [r for r in rows if r[0] == "bus.acl_denied"]
    [counter] = [r for r in rows if r[0] == SUPPRESSED]
    assert len(denied) == REFUSAL_ROWS_PER_WINDOW
    assert counter[1] == ErrorCode.ACL_DENIED.value
    assert len(denied) + int(counter[2] or 0) == FLOOD  # every refusal is accounted for
    # Reported once, to the supervisor's own hook, not once per frame.
    assert hook.calls == [(MINIAPP.name, ErrorCode.ACL_DENIED)]


async def test_a_malformed_frame_on_the_control_channel_is_reported_to_the_supervisor(
    nursery: trio.Nursery, raw_sockets: list[socket.socket]
) -> None:
    audit, hook = AuditLog(), Hook()
    supervisor = await start_bus(nursery, SUPERVISOR, Server(), audit)
    supervisor.on_misbehaved = hook
    app = attach_raw(supervisor, MINIAPP, raw_sockets)

    await app.send_raw(b"\x00\x00\x00\x05hello")
    await app.wait_closed()
    assert (await audit.first("bus.frame_malformed")).peer == MINIAPP.name
    assert hook.calls == [(MINIAPP.name, ErrorCode.FRAME_MALFORMED)]


async def test_a_miniapp_that_keeps_asking_for_what_it_may_not_is_reported_once(
    nursery: trio.Nursery, raw_sockets: list[socket.socket]
) -> None:
    watcher, audit = Server(), AuditLog()
    supervisor = await start_bus(nursery, SUPERVISOR, watcher)
    router = await start_bus(nursery, ROUTER, Server(), audit)
    join(supervisor, router)
    app = attach_raw(router, MINIAPP, raw_sockets)
    send_text = {"type": "router.sdk.conversation.send_text", "text": "x"}

    for _ in range(STOP_AFTER_REFUSALS - 1):  # policy, not misbehaviour: only refused
        await app.send("e", send_text)
    await app.send("q", EchoRequest(text="still served").model_dump(), deadline_ms=1000.0)
    assert (await app.receive()).kind == "r"
    assert watcher.calls == []

    for _ in range(FLOOD):
        await app.send("e", send_text)
    await watcher.wait_calls(1)
    rows = await rows_until(audit, SUPPRESSED)
    assert len([r for r in rows if r[0] == "bus.permission_denied"]) == REFUSAL_ROWS_PER_WINDOW
    with trio.fail_after(WAIT):
        await trio.testing.wait_all_tasks_blocked()
    assert [env.body for env in watcher.calls] == [
        PeerMisbehavedEvent(peer=MINIAPP.name, incarnation=0, code="permission_denied")
    ]


async def test_offenders_are_bounded_apart_so_one_flood_does_not_hide_another_peer(
    nursery: trio.Nursery, raw_sockets: list[socket.socket]
) -> None:
    audit = AuditLog()
    router = await start_bus(nursery, ROUTER, Server(), audit)
    noisy = attach_raw(router, MINIAPP, raw_sockets)
    other = attach_raw(router, Identity(MINIAPP.kind, "miniapp:other"), raw_sockets)
    for _ in range(FLOOD):
        await noisy.send("e", {"type": "router.sdk.conversation.send_text", "text": "x"})
    await other.send("e", {"type": "router.sdk.conversation.send_text", "text": "x"})
    await until_peer(audit, "miniapp:other")
    assert [r.event for r in audit.records if r.peer == "miniapp:other"] == [
        "bus.permission_denied"
    ]
