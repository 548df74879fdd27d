"""The bus (actors/kernel/bus.py), in process: real buses joined by real socket pairs.

Where a test needs to misbehave on the wire it uses a `RawPeer`: the far end of a channel driven
by hand with the sans-IO framing functions, so it can send what no `Bus` would.
"""

from __future__ import annotations

import math
import socket
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from itertools import count
from typing import Any

import pytest
import trio
import trio.testing

from lineup.actors.kernel import (
    ActorKind,
    ActorRestarted,
    AuditRecord,
    Bus,
    Channel,
    Connection,
    DeadlineExceeded,
    Envelope,
    ErrorCode,
    Frame,
    FrameDecoder,
    Identity,
    LineUpError,
    LocalProtocolError,
    Message,
    RemoteProtocolError,
    _connection,
    channel_pair,
    encode_frame,
    message_allowed,
    parse_frame,
)
from lineup.actors.kernel import bus as bus_module
from lineup.actors.kernel.control import PeerMisbehavedEvent
from lineup.facts.errors import FAULT

from ._messages import (
    BlobRequest,
    EchoReply,
    EchoRequest,
    FocusEchoRequest,
    NoteEvent,
    PeerEchoRequest,
    PeerNoteEvent,
    TreeRequest,
)

K = ActorKind
MINIAPP = Identity(K.MINIAPP, "miniapp:kerneltest")
ROUTER = Identity(K.ROUTER, "router")
FOCUS = Identity(K.FOCUS, "focus")
# A trusted peer that may send the router requests (`router.inbound.*`); focus only tells it.
TRANSPORT = Identity(K.TRANSPORT, "transport")
SUPERVISOR = Identity(K.SUPERVISOR, "supervisor")

WAIT = 5  # seconds any single test step may take before it counts as hung
FOREVER = 3600.0  # a request timeout no test should ever reach

# ---------------------------------------------------------------------------- harness

Behaviour = Callable[[Envelope], Awaitable[Message | None]]


async def echo(env: Envelope) -> Message | None:
    body = env.body
    if isinstance(body, EchoRequest | FocusEchoRequest | PeerEchoRequest):
        return EchoReply(text=body.text)
    if isinstance(body, BlobRequest):
        return EchoReply(text=str(len(body.data)))
    return None


class Server:
    """A bus handler that records every envelope it is given, then runs `behaviour`."""

    def __init__(self, behaviour: Behaviour = echo) -> None:
        self.behaviour = behaviour
        self.calls: list[Envelope] = []
        self._grew = trio.Event()

    async def __call__(self, env: Envelope) -> Message | None:
        self.calls.append(env)
        self._grew.set()
        self._grew = trio.Event()
        return await self.behaviour(env)

    async def wait_calls(self, n: int) -> None:
        with trio.fail_after(WAIT):
            while len(self.calls) < n:
                await self._grew.wait()


class AuditLog:
    """An `audit_locally` callback that keeps what it is given."""

    def __init__(self) -> None:
        self.records: list[AuditRecord] = []
        self._grew = trio.Event()

    async def __call__(self, batch: list[AuditRecord]) -> None:
        self.records.extend(batch)
        self._grew.set()
        self._grew = trio.Event()

    async def first(self, event: str) -> AuditRecord:
        with trio.fail_after(WAIT):
            while True:
                for record in self.records:
                    if record.event == event:
                        return record
                await self._grew.wait()


class RawPeer:
    """The far end of a bus's channel, driven frame by frame."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = trio.socket.from_stdlib_socket(sock)
        self._decoder = FrameDecoder()
        self._frames: deque[bytes] = deque()
        self._ids = count(1)

    async def send_raw(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[await self.sock.send(view) :]

    async def send(self, kind: Any, body: dict[str, Any], **kwargs: Any) -> int:
        fid = next(self._ids)
        await self.send_raw(encode_frame(kind, fid, body, **kwargs))
        return fid

    async def receive_payload(self) -> bytes:
        with trio.fail_after(WAIT):
            while not self._frames:
                data = await self.sock.recv(1 << 16)
                if not data:
                    raise EOFError
                self._frames.extend(self._decoder.feed(data))
        return self._frames.popleft()

    async def receive(self) -> Frame:
        return parse_frame(await self.receive_payload())

    async def wait_closed(self) -> None:
        """Until the bus closes its end; whatever it sent before that is ignored."""
        with trio.fail_after(WAIT):
            while await self.sock.recv(1 << 16):
                pass


@pytest.fixture
async def raw_sockets() -> AsyncIterator[list[socket.socket]]:
    socks: list[socket.socket] = []
    yield socks
    for sock in socks:
        sock.close()


async def start_bus(
    nursery: trio.Nursery,
    me: Identity,
    handler: Behaviour | None = None,
    audit: AuditLog | None = None,
) -> Bus:
    bus = Bus(me, handler or Server(), audit_locally=audit)
    await nursery.start(bus.run)
    return bus


def join(a: Bus, b: Bus) -> tuple[Connection, Connection]:
    """A direct channel between two buses, each end bound to the other's identity."""
    sa, sb = channel_pair()
    return a.connect(b.me, 0, Channel(sa)), b.connect(a.me, 0, Channel(sb))


def attach_raw(bus: Bus, peer: Identity, socks: list[socket.socket]) -> RawPeer:
    ours, theirs = channel_pair()
    socks.append(theirs)
    bus.connect(peer, 0, Channel(ours))
    return RawPeer(theirs)


async def outcome(fn: Callable[[], Awaitable[Any]]) -> Any:
    """The result of `fn`, or the LineUpError it raised."""
    try:
        return await fn()
    except LineUpError as exc:
        return exc


class Later:
    """A call running in the background, whose outcome can be awaited."""

    def __init__(self, nursery: trio.Nursery, fn: Callable[[], Awaitable[Any]]) -> None:
        self._done = trio.Event()
        self._value: Any = None
        nursery.start_soon(self._run, fn)

    async def _run(self, fn: Callable[[], Awaitable[Any]]) -> None:
        self._value = await outcome(fn)
        self._done.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    async def result(self) -> Any:
        with trio.fail_after(WAIT):
            await self._done.wait()
        return self._value


def ask(
    bus: Bus, peer: str, body: Message, timeout: float = FOREVER, **kwargs: Any
) -> Callable[[], Awaitable[Any]]:
    return lambda: bus.request(peer, body, expect=EchoReply, timeout=timeout, **kwargs)


# ---------------------------------------------------------------------- request / reply


async def test_a_request_gets_its_reply_and_the_handler_sees_the_bound_sender(
    nursery: trio.Nursery,
) -> None:
    server = Server()
    app = await start_bus(nursery, MINIAPP)
    router = await start_bus(nursery, ROUTER, server)
    join(app, router)

    with trio.fail_after(WAIT):
        reply = await app.request(
            "router",
            EchoRequest(text="hello"),
            expect=EchoReply,
            timeout=30,
            idempotency_key="op-1",
        )

    assert reply == EchoReply(text="hello")
    [env] = server.calls
    assert env.sender == MINIAPP
    assert env.is_request
    assert env.body == EchoRequest(text="hello")
    assert env.idempotency_key == "op-1"
    assert env.deadline_ms is not None
    assert 0 < env.deadline_ms <= 30_000


async def test_an_event_reaches_the_handler_marked_as_not_a_request(nursery: trio.Nursery) -> None:
    server = Server()
    app = await start_bus(nursery, MINIAPP)
    router = await start_bus(nursery, ROUTER, server)
    join(app, router)

    await app.notify("router", NoteEvent(n=7))
    await server.wait_calls(1)

    [env] = server.calls
    assert env.body == NoteEvent(n=7)
    assert env.sender == MINIAPP
    assert not env.is_request


async def test_concurrent_requests_each_get_their_own_reply(nursery: trio.Nursery) -> None:
    release = trio.Event()

    async def answer_when_released(env: Envelope) -> Message | None:
        await release.wait()
        return await echo(env)

    server = Server(answer_when_released)
    app = await start_bus(nursery, MINIAPP)
    router = await start_bus(nursery, ROUTER, server)
    join(app, router)

    calls = [Later(nursery, ask(app, "router", EchoRequest(text=str(n)))) for n in range(20)]
    await server.wait_calls(20)
    release.set()

    assert [await call.result() for call in calls] == [EchoReply(text=str(n)) for n in range(20)]


@pytest.mark.parametrize(
    "code",
    [
        ErrorCode.PERMISSION_DENIED,
        ErrorCode.TOOL_INPUT_INVALID,
        ErrorCode.APP_DISABLED,
        ErrorCode.STORE_UNAVAILABLE,
        ErrorCode.NO_HANDLER,
    ],
)
async def test_a_handlers_refusal_arrives_at_the_caller_with_the_same_code(
    nursery: trio.Nursery, code: ErrorCode
) -> None:
    async def refuse(env: Envelope) -> Message | None:
        raise LineUpError(code, "told you so")

    app = await start_bus(nursery, MINIAPP)
    router = await start_bus(nursery, ROUTER, Server(refuse))
    join(app, router)

    with trio.fail_after(WAIT), pytest.raises(LineUpError) as info:
        await app.request("router", EchoRequest(text="x"), expect=EchoReply)
    assert info.value.code is code


async def test_a_handler_refusing_with_actor_restarted_arrives_as_actor_restarted(
    nursery: trio.Nursery,
) -> None:
    async def refuse(env: Envelope) -> Message | None:
        raise ActorRestarted(ErrorCode.ACTOR_RESTARTED)

    app = await start_bus(nursery, MINIAPP)
    router = await start_bus(nursery, ROUTER, Server(refuse))
    join(app, router)

    with trio.fail_after(WAIT), pytest.raises(ActorRestarted) as info:
        await app.request("router", EchoRequest(text="x"), expect=EchoReply)
    assert info.value.code is ErrorCode.ACTOR_RESTARTED


@pytest.mark.parametrize("fault", ["raises", "returns-nothing"])
async def test_a_handler_that_crashes_or_gives_no_reply_is_an_internal_error(
    nursery: trio.Nursery, fault: str
) -> None:
    async def broken_on_boom(env: Envelope) -> Message | None:
        if isinstance(env.body, EchoRequest) and env.body.text == "boom":
            if fault == "raises":
                raise RuntimeError("handler bug")
            return None
        return await echo(env)

    app = await start_bus(nursery, MINIAPP)
    router = await start_bus(nursery, ROUTER, Server(broken_on_boom))
    join(app, router)

    with trio.fail_after(WAIT), pytest.raises(LineUpError) as info:
        await app.request("router", EchoRequest(text="boom"), expect=EchoReply)
    assert info.value.code is ErrorCode.INTERNAL_ERROR
    with trio.fail_after(WAIT):  # the bus and the channel survive the handler's bug
        reply = await app.request("router", EchoRequest(text="fine"), expect=EchoReply)
    assert reply == EchoReply(text="fine")


async def test_a_reply_too_large_for_a_frame_fails_that_request_and_the_actor_lives_on(
    nursery: trio.Nursery,
) -> None:
    async def huge_on_big(env: Envelope) -> Message | None:
        if isinstance(env.body, EchoRequest) and env.body.text == "big":
            return EchoReply(text="x" * (2 << 20))  # over the 1 MiB frame
        return await echo(env)

    app = await start_bus(nursery, MINIAPP)
    router = await start_bus(nursery, ROUTER, Server(huge_on_big))
    join(app, router)

    with trio.fail_after(WAIT), pytest.raises(LineUpError) as info:
        await app.request("router", EchoRequest(text="big"), expect=EchoReply)
    assert info.value.code is ErrorCode.HANDLER_FAILED
    with trio.fail_after(WAIT):
        reply = await app.request("router", EchoRequest(text="fine"), expect=EchoReply)
    assert reply == EchoReply(text="fine")


async def test_a_body_json_cannot_hold_is_refused_to_its_sender_with_a_code(
    nursery: trio.Nursery,
) -> None:
    view: dict[str, Any] = {}
    for _ in range(2000):
        view = {"child": view}
    app = await start_bus(nursery, MINIAPP)
    router = await start_bus(nursery, ROUTER)
    join(app, router)
    with trio.fail_after(WAIT), pytest.raises(LineUpError) as info:
        await app.request("router", TreeRequest(tree=view), expect=EchoReply)
    assert info.value.code is ErrorCode.FRAME_MALFORMED


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
async def test_a_non_finite_number_is_refused_to_its_sender_never_sent_as_null(
    nursery: trio.Nursery, number: float
) -> None:
    server = Server()
    app = await start_bus(nursery, MINIAPP)
    router = await start_bus(nursery, ROUTER, server)
    join(app, router)
    with trio.fail_after(WAIT), pytest.raises(LineUpError) as info:
        await app.request("router", TreeRequest(tree={"n": [1.5, number]}), expect=EchoReply)
    assert info.value.code is ErrorCode.FRAME_MALFORMED
    assert server.calls == []
    # The words themselves are text like any other.
    with trio.fail_after(WAIT):
        await app.request("router", EchoRequest(text="NaN Infinity"), expect=EchoReply)


# ---------------------------------------------------------------------------------- ACL


async def test_a_request_the_acl_forbids_is_refused_unheard_and_audited_without_its_body(
    nursery: trio.Nursery,
) -> None:
    server = Server()
    audit = AuditLog()
    app = await start_bus(nursery, MINIAPP)
    router = await start_bus(nursery, ROUTER, server, audit)
    join(app, router)

    # focus.* is router → focus traffic; a MiniApp may not send it to the router.
    with trio.fail_after(WAIT), pytest.raises(LineUpError) as info:
        await app.request("router", FocusEchoRequest(text="SECRET-BODY-TEXT"), expect=EchoReply)

    assert info.value.code is ErrorCode.ACL_DENIED
    record = await audit.first("bus.acl_denied")
    assert record.actor == "router"
    assert record.peer == MINIAPP.name
    assert record.code == ErrorCode.ACL_DENIED.value
    assert record.message_type == FocusEchoRequest.TYPE
    assert record.at > 0
    assert "SECRET-BODY-TEXT" not in record.model_dump_json()
    assert server.calls == []


async def test_an_event_the_acl_forbids_is_audited_and_dropped_without_a_reply(
    nursery: trio.Nursery, raw_sockets: list[socket.socket]
) -> None:
    server = Server()
    audit = AuditLog()
    router = await start_bus(nursery, ROUTER, server, audit)
    app = attach_raw(router, MINIAPP, raw_sockets)

    await app.send("e", {"type": "store.outbox.append", "secret": "SECRET-BODY-TEXT"})
    fid = await app.send("q", EchoRequest(text="next").model_dump())

    # The first thing back answers the second frame: the forbidden event got no reply.
    reply = await app.receive()
    assert (reply.kind, reply.reply_to) == ("r", fid)
    record = await audit.first("bus.acl_denied")
    assert record.message_type == "store.outbox.append"
    assert "SECRET-BODY-TEXT" not in record.model_dump_json()
    assert [env.body for env in server.calls] == [EchoRequest(text="next")]


async def test_a_miniapp_that_breaks_the_acl_is_reported_to_the_supervisor(
    nursery: trio.Nursery,
) -> None:
    watcher = Server()
    supervisor = await start_bus(nursery, SUPERVISOR, watcher)
    app = await start_bus(nursery, MINIAPP)
    router = await start_bus(nursery, ROUTER, Server(), AuditLog())
    join(supervisor, router)
    join(app, router)

    with trio.fail_after(WAIT), pytest.raises(LineUpError) as info:
        await app.request("router", FocusEchoRequest(text="x"), expect=EchoReply)
    assert info.value.code is ErrorCode.ACL_DENIED

    await watcher.wait_calls(1)
    [env] = watcher.calls
    assert env.sender == ROUTER
    assert env.body == PeerMisbehavedEvent(
        peer=MINIAPP.name, incarnation=0, code=ErrorCode.ACL_DENIED.value
    )


async def test_the_acl_is_checked_against_the_channels_identity_not_the_frame(
    nursery: trio.Nursery, raw_sockets: list[socket.socket]
) -> None:
    # Focus may send router.*; a MiniApp may not. A MiniApp cannot borrow focus's rights.
    server = Server()
    router = await start_bus(nursery, ROUTER, server, AuditLog())
    app = attach_raw(router, MINIAPP, raw_sockets)

    await app.send("q", {"type": "router.ui.open"}, deadline_ms=1000.0)
    reply = await app.receive()

    assert reply.kind == "x"
    assert (reply.body["code"], reply.body["fault"]) == (ErrorCode.ACL_DENIED.value, "caller")
    assert server.calls == []


@pytest.mark.parametrize(
    "code", [ErrorCode.STALE_REVISION, ErrorCode.STORE_UNAVAILABLE, ErrorCode.CANCELLED_BY_USER]
)
async def test_an_error_reply_says_who_is_at_fault_beside_its_code(
    nursery: trio.Nursery, raw_sockets: list[socket.socket], code: ErrorCode
) -> None:
    async def refuse(env: Envelope) -> Message | None:
        raise LineUpError(code, "told you so")

    router = await start_bus(nursery, ROUTER, Server(refuse))
    transport = attach_raw(router, TRANSPORT, raw_sockets)

    fid = await transport.send("q", PeerEchoRequest(text="x").model_dump())
    reply = await transport.receive()

    assert (reply.kind, reply.reply_to) == ("x", fid)
    assert reply.body == {"code": code.value, "fault": FAULT[code], "message": "told you so"}


@pytest.mark.parametrize("told", [None, "runtime", 42])
async def test_an_error_reply_is_read_by_its_code_whatever_fault_it_names(
    nursery: trio.Nursery, raw_sockets: list[socket.socket], told: Any
) -> None:
    # A peer from before the fault (none), or one that names another: the code decides.
    app = await start_bus(nursery, MINIAPP)
    router = attach_raw(app, ROUTER, raw_sockets)

    call = Later(nursery, ask(app, "router", EchoRequest(text="x")))
    request = await router.receive()
    body = {"code": "stale_revision", "message": ""} | ({} if told is None else {"fault": told})
    await router.send("x", body, reply_to=request.id)

    error = await call.result()
    assert isinstance(error, LineUpError)
    assert (error.code, error.fault) == (ErrorCode.STALE_REVISION, "caller")


# ----------------------------------------------------------------- bad types and bodies


async def test_an_unknown_message_type_is_refused_as_unknown_message_type(
    nursery: trio.Nursery, raw_sockets: list[socket.socket]
) -> None:
    server = Server()
    audit = AuditLog()
    router = await start_bus(nursery, ROUTER, server, audit)
    transport = attach_raw(router, TRANSPORT, raw_sockets)

    fid = await transport.send("q", {"type": "router.inbound.kerneltest_unregistered"})
    reply = await transport.receive()

    assert (reply.kind, reply.reply_to) == ("x", fid)
    assert reply.body["code"] == ErrorCode.UNKNOWN_MESSAGE_TYPE.value
    record = await audit.first("bus.unknown_message_type")
    assert record.message_type == "router.inbound.kerneltest_unregistered"
    assert server.calls == []


@pytest.mark.parametrize(
    "body",
    [
        {"type": PeerEchoRequest.TYPE, "text": 123},
        {"type": PeerEchoRequest.TYPE},
        {"type": PeerEchoRequest.TYPE, "text": "hi", "sender": "store"},
    ],
    ids=["wrong-field-type", "missing-field", "extra-field"],
)
async def test_a_body_that_fails_its_model_is_refused_as_frame_malformed(
    nursery: trio.Nursery, raw_sockets: list[socket.socket], body: dict[str, Any]
) -> None:
    server = Server()
    audit = AuditLog()
    router = await start_bus(nursery, ROUTER, server, audit)
    transport = attach_raw(router, TRANSPORT, raw_sockets)

    fid = await transport.send("q", body)
    reply = await transport.receive()

    assert (reply.kind, reply.reply_to) == ("x", fid)
    assert reply.body["code"] == ErrorCode.FRAME_MALFORMED.value
    record = await audit.first("bus.frame_malformed")
    assert record.message_type == PeerEchoRequest.TYPE
    assert server.calls == []
    # A bad body is refused, not fatal: the channel still carries the next request.
    fid = await transport.send("q", PeerEchoRequest(text="ok").model_dump())
    reply = await transport.receive()
    assert (reply.kind, reply.reply_to, reply.body) == ("r", fid, EchoReply(text="ok").model_dump())


async def test_a_reply_of_the_wrong_type_is_frame_malformed_at_the_caller(
    nursery: trio.Nursery, raw_sockets: list[socket.socket]
) -> None:
    app = await start_bus(nursery, MINIAPP)
    router = attach_raw(app, ROUTER, raw_sockets)

    call = Later(nursery, ask(app, "router", EchoRequest(text="x")))
    request = await router.receive()
    await router.send("r", NoteEvent(n=1).model_dump(), reply_to=request.id)

    error = await call.result()
    assert isinstance(error, RemoteProtocolError)
    assert error.code is ErrorCode.FRAME_MALFORMED


@pytest.mark.parametrize("code", ["no_such_code", 42, None])
async def test_an_error_reply_with_an_unknown_code_is_an_internal_error(
    nursery: trio.Nursery, raw_sockets: list[socket.socket], code: Any
) -> None:
    app = await start_bus(nursery, MINIAPP)
    router = attach_raw(app, ROUTER, raw_sockets)

    call = Later(nursery, ask(app, "router", EchoRequest(text="x")))
    request = await router.receive()
    await router.send("x", {"code": code}, reply_to=request.id)

    error = await call.result()
    assert isinstance(error, LineUpError)
    assert error.code is ErrorCode.INTERNAL_ERROR


# -------------------------------------------------------------- peers going away


async def test_requests_in_flight_fail_at_once_with_actor_restarted_when_the_peer_dies(
    nursery: trio.Nursery,
) -> None:
    async def never_answer(env: Envelope) -> Message | None:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    server = Server(never_answer)
    app = await start_bus(nursery, MINIAPP)
    with trio.CancelScope() as router_life:
        async with trio.open_nursery() as router_nursery:
            router = await start_bus(router_nursery, ROUTER, server)
            join(app, router)
            calls = [
                Later(nursery, ask(app, "router", EchoRequest(text=str(n)), FOREVER))
                for n in range(3)
            ]
            await server.wait_calls(3)
            assert not any(call.done for call in calls)
            started = trio.current_time()
            router_life.cancel()  # the router process dies with three requests in flight

    # Each call fails well inside WAIT, while its own deadline is an hour away.
    for call in calls:
        error = await call.result()
        assert isinstance(error, ActorRestarted)
        assert error.code is ErrorCode.ACTOR_RESTARTED
    assert trio.current_time() - started < WAIT
    assert app.connection("router") is None


async def test_requests_in_flight_fail_with_actor_restarted_when_the_socket_closes(
    nursery: trio.Nursery, raw_sockets: list[socket.socket]
) -> None:
    app = await start_bus(nursery, MINIAPP)
    router = attach_raw(app, ROUTER, raw_sockets)
    call = Later(nursery, ask(app, "router", EchoRequest(text="x"), FOREVER))
    await router.receive()  # the request is on the wire and waiting

    router.sock.close()

    error = await call.result()
    assert isinstance(error, ActorRestarted)
    assert error.code is ErrorCode.ACTOR_RESTARTED


async def test_a_request_to_a_peer_that_has_just_died_raises_actor_restarted(
    nursery: trio.Nursery, raw_sockets: list[socket.socket]
) -> None:
    # The peer is gone but this bus's reader has not noticed yet: the send itself fails.
    app = await start_bus(nursery, MINIAPP)
    router = attach_raw(app, ROUTER, raw_sockets)
    router.sock.close()

    with trio.fail_after(WAIT), pytest.raises(ActorRestarted) as info:
        await app.request("router", EchoRequest(text="x"), expect=EchoReply)
    assert info.value.code is ErrorCode.ACTOR_RESTARTED


async def test_a_request_to_a_peer_with_no_channel_is_unavailable_not_retryable(
    nursery: trio.Nursery,
) -> None:
    # With no channel and no supervisor to introduce one, retrying at once cannot help, so
    # the refusal must not be an ActorRestarted ("safe to retry at once").
    app = await start_bus(nursery, MINIAPP)

    with trio.fail_after(WAIT), pytest.raises(LineUpError) as info:
        await app.request("router", EchoRequest(text="x"), expect=EchoReply)
    assert info.value.code is ErrorCode.ACTOR_UNAVAILABLE
    assert not isinstance(info.value, ActorRestarted)


async def test_reconnecting_a_peer_fails_the_requests_on_the_old_channel(
    nursery: trio.Nursery, raw_sockets: list[socket.socket]
) -> None:
    app = await start_bus(nursery, MINIAPP)
    old = attach_raw(app, ROUTER, raw_sockets)
    call = Later(nursery, ask(app, "router", EchoRequest(text="x"), FOREVER))
    await old.receive()

    new = attach_raw(app, ROUTER, raw_sockets)  # the router restarted: a fresh channel

    error = await call.result()
    assert isinstance(error, ActorRestarted)
    await old.wait_closed()
    follow_up = Later(nursery, ask(app, "router", EchoRequest(text="y")))
    request = await new.receive()
    await new.send("r", EchoReply(text="y").model_dump(), reply_to=request.id)
    assert await follow_up.result() == EchoReply(text="y")


# ------------------------------------------------------------------------- deadlines


async def test_a_request_that_exceeds_its_timeout_raises_deadline_exceeded(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    async def never_answer(env: Envelope) -> Message | None:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    app = await start_bus(nursery, MINIAPP)
    router = await start_bus(nursery, ROUTER, Server(never_answer))
    conn, _ = join(app, router)
    started = trio.current_time()

    with pytest.raises(DeadlineExceeded) as info:
        await app.request("router", EchoRequest(text="x"), expect=EchoReply, timeout=2.0)

    assert info.value.code is ErrorCode.DEADLINE_EXCEEDED
    assert trio.current_time() - started == pytest.approx(2.0)
    assert conn.pending == {}  # the reply slot is gone with the request


@pytest.mark.parametrize("late_kind", ["r", "x"])
async def test_a_late_reply_after_the_caller_gave_up_is_dropped_without_error(
    nursery: trio.Nursery,
    raw_sockets: list[socket.socket],
    autojump_clock: trio.testing.MockClock,
    late_kind: str,
) -> None:
    audit = AuditLog()
    app = await start_bus(nursery, MINIAPP, audit=audit)
    router = attach_raw(app, ROUTER, raw_sockets)
    conn = app.connection("router")

    with pytest.raises(DeadlineExceeded):
        await app.request("router", EchoRequest(text="first"), expect=EchoReply, timeout=1.0)
    first = await router.receive()
    late = (
        EchoReply(text="first").model_dump()
        if late_kind == "r"
        else {"code": "internal_error", "message": ""}
    )
    await router.send(late_kind, late, reply_to=first.id)

    # Frames arrive in order, so the late reply is read before the second request's reply.
    second = Later(nursery, ask(app, "router", EchoRequest(text="second"), 30.0))
    request = await router.receive()
    await router.send("r", EchoReply(text="second").model_dump(), reply_to=request.id)

    assert await second.result() == EchoReply(text="second")
    assert app.connection("router") is conn
    assert conn is not None
    assert conn.pending == {}
    assert audit.records == []


async def test_a_request_with_a_timeout_beyond_the_wire_limit_does_not_break_the_channel(
    nursery: trio.Nursery,
) -> None:
    # `dl` must be < 1e9 ms on the wire (~11.6 days). A longer or infinite timeout must be
    # clamped or refused locally, never sent as a frame the peer has to treat as an attack.
    app = await start_bus(nursery, MINIAPP)
    router = await start_bus(nursery, ROUTER, Server(), AuditLog())
    join(app, router)

    for timeout in (2e6, math.inf):
        with trio.fail_after(WAIT):
            result = await outcome(ask(app, "router", EchoRequest(text="long"), timeout))
        assert result == EchoReply(text="long") or isinstance(result, LocalProtocolError)

    with trio.fail_after(WAIT):
        assert await app.request(
            "router", EchoRequest(text="after"), expect=EchoReply, timeout=30
        ) == EchoReply(text="after")


async def test_a_request_cancelled_mid_send_leaves_no_torn_frame_on_the_channel(
    nursery: trio.Nursery, raw_sockets: list[socket.socket], autojump_clock: trio.testing.MockClock
) -> None:
    # A frame bigger than the socket buffers, to a peer that is not reading yet: the deadline
    # strikes with part of the frame written. The peer must then see either whole frames or
    # a closed channel, never the next frame swallowed into the torn one.
    app = await start_bus(nursery, MINIAPP)
    router = attach_raw(app, ROUTER, raw_sockets)

    with pytest.raises(DeadlineExceeded):
        await app.request("router", BlobRequest(data="x" * 900_000), expect=EchoReply, timeout=1.0)
    Later(nursery, ask(app, "router", EchoRequest(text="after"), 60.0))

    while True:
        try:
            frame = await router.receive()
        except EOFError:
            return  # the bus closed the channel it could no longer frame: acceptable
        if frame.body == EchoRequest(text="after").model_dump():
            return


# ------------------------------------------------------------- protocol violations


def framed(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


@pytest.mark.parametrize(
    ("wire", "code"),
    [
        (framed(b"hello"), ErrorCode.FRAME_MALFORMED),
        (framed(b"{}"), ErrorCode.FRAME_MALFORMED),
        (framed(b'{"k":"r","id":1,"b":{}}'), ErrorCode.FRAME_MALFORMED),
        (framed(b'{"k":"q","id":0,"b":{}}'), ErrorCode.FRAME_MALFORMED),
        (framed(b'{"k":"q","id":1,"b":{},"sender":"focus"}'), ErrorCode.FRAME_MALFORMED),
        (framed(b'{"k":[],"id":1,"b":{}}'), ErrorCode.FRAME_MALFORMED),
        (
            framed(b'{"k":"q","id":1,"b":{"type":"echo.request","text":NaN}}'),
            ErrorCode.FRAME_MALFORMED,
        ),
        (framed(b'{"k":"e","id":1,"b":{"type":"x","v":[Infinity]}}'), ErrorCode.FRAME_MALFORMED),
        (framed(b'{"k":"e","id":1,"b":{"type":"x","t":"\\ud800"}}'), ErrorCode.FRAME_MALFORMED),
        ((1 << 20 | 1).to_bytes(4, "big"), ErrorCode.FRAME_TOO_LARGE),
    ],
    ids=[
        "not-json",
        "not-a-frame",
        "reply-without-re",
        "zero-id",
        "claims-a-sender",
        "kind-not-a-string",
        "nan",
        "infinity",
        "lone-surrogate",
        "oversize",
    ],
)
async def test_a_malformed_frame_closes_the_channel_is_audited_and_reported(
    nursery: trio.Nursery, raw_sockets: list[socket.socket], wire: bytes, code: ErrorCode
) -> None:
    watcher = Server()
    supervisor = await start_bus(nursery, SUPERVISOR, watcher)
    audit = AuditLog()
    server = Server()
    router = await start_bus(nursery, ROUTER, server, audit)
    join(supervisor, router)
    app = attach_raw(router, MINIAPP, raw_sockets)

    await app.send_raw(wire)
    await app.wait_closed()

    record = await audit.first(f"bus.{code.value}")
    assert record.peer == MINIAPP.name
    assert record.code == code.value
    assert router.connection(MINIAPP.name) is None
    assert server.calls == []
    await watcher.wait_calls(1)
    assert watcher.calls[0].body == PeerMisbehavedEvent(
        peer=MINIAPP.name, incarnation=0, code=code.value
    )


# ----------------------------------------------------------------------- backpressure


async def test_with_the_mailbox_full_the_reader_stops_reading_and_the_sender_blocks(
    nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bus_module, "MAILBOX_LIMIT", 2)
    release = trio.Event()
    total = 2000  # ~2 MB of events: far more than the socket buffers hold

    async def hold(env: Envelope) -> Message | None:
        await release.wait()
        return None

    server = Server(hold)
    # A trusted peer: a MiniApp's flood is refused by its rate limit before backpressure.
    app = await start_bus(nursery, TRANSPORT)
    router = await start_bus(nursery, ROUTER, server)
    join(app, router)
    sent = 0

    async def flood() -> None:
        nonlocal sent
        for n in range(total):
            await app.notify("router", PeerNoteEvent(n=n, padding="p" * 1000), timeout=FOREVER)
            sent += 1

    nursery.start_soon(flood)
    await server.wait_calls(2)
    await trio.testing.wait_all_tasks_blocked()

    assert len(server.calls) == 2  # the mailbox bound, not the flood, decides
    assert sent < total  # the reader stopped, the socket filled, the sender blocked

    release.set()
    await server.wait_calls(total)
    # Handlers run concurrently, so only the set (not the order) of deliveries is promised.
    notes = [env.body for env in server.calls if isinstance(env.body, PeerNoteEvent)]
    assert len(notes) == len(server.calls)  # the flood's events, nothing else
    assert sorted(note.n for note in notes) == list(range(total))


async def test_a_freed_mailbox_slot_goes_to_the_longest_waiter_not_to_a_newcomer() -> None:
    mailbox = _connection.Mailbox(1)
    order: list[str] = []

    async def wait_for_slot(name: str) -> None:
        await mailbox.acquire()
        order.append(name)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            assert mailbox.try_acquire()
            nursery.start_soon(wait_for_slot, "first")
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(wait_for_slot, "second")
            await trio.testing.wait_all_tasks_blocked()
            mailbox.release()  # handed to "first", not freed
            assert not mailbox.try_acquire()  # so the hot path cannot jump the queue
            await trio.testing.wait_all_tasks_blocked()
            assert order == ["first"]
            mailbox.release()
            await trio.testing.wait_all_tasks_blocked()
            assert order == ["first", "second"]
            mailbox.release()
    assert mailbox.try_acquire()  # every slot came back
    assert not mailbox.try_acquire()


async def test_a_handler_awaiting_its_callers_reply_is_not_starved_by_a_full_mailbox(
    nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch, autojump_clock: trio.testing.MockClock
) -> None:
    # Replies are not mail: they free handlers. If the reader parks on a full mailbox with a
    # request in hand, the reply queued behind it never arrives and the handler waiting for
    # it stalls until its deadline.
    asked = trio.Event()
    go = trio.Event()

    async def focus_behaviour(env: Envelope) -> Message | None:
        asked.set()
        await go.wait()
        return await echo(env)

    focus = await start_bus(nursery, FOCUS, Server(focus_behaviour))
    monkeypatch.setattr(bus_module, "MAILBOX_LIMIT", 1)
    router: Bus

    async def router_behaviour(env: Envelope) -> Message | None:
        assert isinstance(env.body, PeerEchoRequest)
        return await router.request(
            "focus", FocusEchoRequest(text=env.body.text), expect=EchoReply, timeout=30.0
        )

    router = await start_bus(nursery, ROUTER, Server(router_behaviour))
    join(focus, router)
    caller = await start_bus(nursery, TRANSPORT)  # focus never asks the router: it only tells
    join(caller, router)

    first = Later(nursery, ask(caller, "router", PeerEchoRequest(text="one"), 30.0))
    with trio.fail_after(WAIT):
        await asked.wait()  # the router's only handler slot now waits on focus
    second = Later(nursery, ask(caller, "router", PeerEchoRequest(text="two"), 30.0))
    await trio.testing.wait_all_tasks_blocked()
    go.set()

    assert await first.result() == EchoReply(text="one")
    assert await second.result() == EchoReply(text="two")


# ---------------------------------------------------------------------- untrusted peers' bounds

LIMIT_ROUTER = Identity(ActorKind.ROUTER, "router")
FLOODER = Identity(ActorKind.MINIAPP, "miniapp:flood")


async def limited_refusal(bus: Bus, body: Message) -> ErrorCode | None:
    try:
        await bus.request("router", body, expect=EchoReply, timeout=WAIT)
    except LineUpError as exc:
        return exc.code
    return None


async def test_a_miniapp_flooding_requests_is_refused_with_rate_limited_and_audited_once_a_second(
    nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A small budget, so the outcome does not depend on how fast this machine floods.
    monkeypatch.setattr(_connection, "MINIAPP_RATE", 1.0)
    monkeypatch.setattr(_connection, "MINIAPP_BURST", 50.0)
    audit = AuditLog()
    router = await start_bus(nursery, LIMIT_ROUTER, Server(), audit)
    app = await start_bus(nursery, FLOODER)
    join(router, app)
    codes: list[ErrorCode | None] = []

    async def one() -> None:
        codes.append(await limited_refusal(app, EchoRequest(text="x")))

    started = trio.current_time()
    with trio.fail_after(60):
        async with trio.open_nursery() as flood:
            for _ in range(200):
                flood.start_soon(one)
    elapsed = trio.current_time() - started
    served = codes.count(None)
    assert 50 <= served <= 50 + int(elapsed) + 1  # the burst, plus 1/s of refill
    assert codes.count(ErrorCode.RATE_LIMITED) == 200 - served
    await audit.first("bus.rate_limited")
    limited = [r for r in audit.records if r.event == "bus.rate_limited"]
    assert len(limited) <= int(elapsed) + 1  # once a second, not once per refused frame
    assert limited[0].peer == "miniapp:flood"


async def test_answers_granted_to_a_miniapp_pass_beside_its_spent_budget_and_no_more(
    nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_connection, "MINIAPP_RATE", 0.001)  # no refill within the test
    monkeypatch.setattr(_connection, "MINIAPP_BURST", 5.0)
    router = await start_bus(nursery, LIMIT_ROUTER, Server())
    app = await start_bus(nursery, FLOODER)
    join(router, app)
    router.connection(FLOODER.name).tokens = 5.0  # type: ignore[union-attr]

    async def codes(n: int) -> list[ErrorCode | None]:
        return [await limited_refusal(app, EchoRequest(text="x")) for _ in range(n)]

    assert await codes(6) == [None] * 5 + [ErrorCode.RATE_LIMITED]  # its own budget, spent
    router.grant(FLOODER.name, 3)  # e.g. a pushed tool call: its take and its outcome
    assert await codes(4) == [None] * 3 + [ErrorCode.RATE_LIMITED]
    router.grant(FLOODER.name, 10**9)
    assert router.connection(FLOODER.name).credit == _connection.MINIAPP_CREDIT_LIMIT  # type: ignore[union-attr]
    router.grant(LIMIT_ROUTER.name, 3)  # no channel to it: nothing happens


async def test_a_runtime_peer_is_not_rate_limited(nursery: trio.Nursery) -> None:
    # Far beyond a MiniApp's burst, each of two kinds: requests the ACL grants the transport
    # (all are answered) and requests it does not (all are refused by the ACL). None is
    # rate_limited.
    allowed, forbidden = PeerEchoRequest(text="x"), FocusEchoRequest(text="x")
    assert message_allowed(K.TRANSPORT, K.ROUTER, allowed.TYPE)
    assert not message_allowed(K.TRANSPORT, K.ROUTER, forbidden.TYPE)
    router = await start_bus(nursery, LIMIT_ROUTER)
    focus = await start_bus(nursery, TRANSPORT)  # a runtime peer the router takes requests from
    join(router, focus)
    codes: dict[str, list[ErrorCode | None]] = {allowed.TYPE: [], forbidden.TYPE: []}

    async def one(body: Message) -> None:
        codes[body.TYPE].append(await limited_refusal(focus, body))

    burst_size = int(_connection.MINIAPP_BURST) + 300
    async with trio.open_nursery() as burst:
        for _ in range(burst_size):
            burst.start_soon(one, allowed)
            burst.start_soon(one, forbidden)
    assert codes[allowed.TYPE] == [None] * burst_size
    assert codes[forbidden.TYPE] == [ErrorCode.ACL_DENIED] * burst_size


async def test_a_miniapp_frame_above_its_limit_closes_the_channel_and_is_audited(
    nursery: trio.Nursery,
) -> None:
    audit = AuditLog()
    router = await start_bus(nursery, LIMIT_ROUTER, Server(), audit)
    app = await start_bus(nursery, FLOODER)
    join(router, app)
    big = "x" * (bus_module.MINIAPP_MAX_FRAME + 1024)  # under the 1 MiB runtime limit
    assert await limited_refusal(app, BlobRequest(data=big)) == ErrorCode.ACTOR_RESTARTED
    record = await audit.first("bus.frame_too_large")
    assert record.peer == "miniapp:flood"


async def test_tell_answers_none_once_sent_and_the_code_when_the_peer_cannot_be_reached(
    nursery: trio.Nursery,
) -> None:
    server = Server()
    router = await start_bus(nursery, LIMIT_ROUTER, server)
    focus = await start_bus(nursery, TRANSPORT)
    join(router, focus)
    assert await focus.tell("router", PeerNoteEvent(n=1)) is None
    await server.wait_calls(1)
    # No channel to it and no supervisor to ask: refused, returned, not raised.
    assert await focus.tell("gateway", PeerNoteEvent(n=2), timeout=1) is ErrorCode.ACTOR_UNAVAILABLE


async def test_a_tell_on_a_channel_found_dead_is_sent_again_on_a_new_one(
    nursery: trio.Nursery, raw_sockets: list[socket.socket]
) -> None:
    # The peer restarted and this bus has not read the EOF yet: the event reached no one. It
    # is sent again at once, on the channel the supervisor would introduce; here there is no
    # supervisor, so the second try says `actor_unavailable`, not the first's `actor_restarted`.
    app = await start_bus(nursery, MINIAPP)
    router = attach_raw(app, ROUTER, raw_sockets)
    router.sock.close()

    code = await app.tell("router", PeerNoteEvent(n=1), timeout=WAIT)

    assert code is ErrorCode.ACTOR_UNAVAILABLE
