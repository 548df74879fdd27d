"""The hostbridge actor behind its real WebSocket server, with a fake bus: what a Shell's frames
become (requests to focus, audit rows) and what the Shell is sent."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar, overload

import trio
from trio_websocket import WebSocketConnection
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Event,
    Request,
    TextMessage,
)

from lineup.actors.focus.messages import (
    AppView,
    InstanceReply,
    UiEventAccepted,
    UiEventRequest,
    UiIntentRequest,
    UiOpenRequest,
    ViewsReply,
    ViewsRequest,
)
from lineup.actors.gateway.messages import (
    ArtifactInfo,
    ArtifactsListReply,
    ArtifactsListRequest,
    CapabilityPendingReply,
    CapabilityPendingRequest,
)
from lineup.actors.kernel import (
    ActorContext,
    ActorKind,
    AuditRecord,
    Envelope,
    ErrorCode,
    Identity,
    LineUpError,
    Message,
)
from lineup.actors.router.messages import (
    AppSessionContinueReply,
    AppSessionContinueRequest,
    InteractionAnswerReply,
    InteractionAnswerRequest,
    InteractionsListReply,
    InteractionsListRequest,
)
from lineup.actors.transport.messages import RuntimeStateReply, RuntimeStateRequest
from lineup.hostbridge import HostbridgeActor
from lineup.hostbridge._server import (
    CLOSE_GOING_AWAY,
    CLOSE_TOKEN_REFUSED,
    FAILED_TOKEN,
    HANDSHAKE_REFUSED,
)
from lineup.hostbridge.messages import (
    AppsUpdatedEvent,
    LiveInstance,
    NoticeEvent,
    RuntimeStateEvent,
    ViewUpdatedEvent,
)
from lineup.hostbridge.shell_protocol import SHELL_SUBPROTOCOL
from lineup.supervisor._runtime import free_port
from lineup.tests.support.shell import open_shell_socket, shell_at

TOKEN = "test-token"
WAIT = 10


class FakeBus:
    """Answers what the hostbridge asks of transport and focus; keeps requests and audit rows."""

    def __init__(self) -> None:
        self.requests: list[Message] = []
        self.audits: list[AuditRecord] = []
        self.refusals: list[AuditRecord] = []  # the audits that went through audit_refusal
        self.changed = trio.Event()
        # The router: what it lists, how many times it refuses first, how it answers.
        self.listed = InteractionsListReply(interactions=(), sessions=())
        self.list_refusals = 0
        self.lists = 0
        self.answer: Any = None  # InteractionAnswerRequest → InteractionAnswerReply (or raises)
        self.resume: Any = None  # AppSessionContinueRequest → AppSessionContinueReply (or raises)
        self.artifacts: tuple[ArtifactInfo, ...] = ()  # what the gateway lists, newest first

    def audit(self, record: AuditRecord) -> None:
        self.audits.append(record)
        self.changed.set()

    def audit_refusal(self, record: AuditRecord) -> bool:
        """Every refusal kept (the real bus bounds them per offender: its own tests)."""
        self.refusals.append(record)
        self.audit(record)
        return False

    async def request(self, peer: str, body: Message, **kwargs: Any) -> Message:
        if isinstance(body, InteractionsListRequest):
            # Kept apart: the hostbridge asks at start and at each greeting, whatever a test does.
            self.lists += 1
            self.changed.set()
            if self.list_refusals > 0:
                self.list_refusals -= 1
                raise LineUpError(ErrorCode.ACTOR_UNAVAILABLE, "router not up")
            return self.listed
        if isinstance(body, ArtifactsListRequest):
            return ArtifactsListReply(artifacts=self.artifacts)  # at each greeting, likewise
        if isinstance(body, CapabilityPendingRequest):
            return CapabilityPendingReply(prompts=(), runs=())  # at start and each greeting
        self.requests.append(body)
        self.changed.set()
        if isinstance(body, RuntimeStateRequest):
            return RuntimeStateReply(state="online")
        if isinstance(body, ViewsRequest):
            return ViewsReply(views=(), foreground="chat", instances=())
        if isinstance(body, UiEventRequest):
            return UiEventAccepted(instance_id=body.instance_id)
        if isinstance(body, UiIntentRequest):
            return InstanceReply(instance_id=body.instance_id, app_scope="x", state="background")
        if isinstance(body, InteractionAnswerRequest) and self.answer is not None:
            reply: InteractionAnswerReply = self.answer(body)
            return reply
        if isinstance(body, AppSessionContinueRequest) and self.resume is not None:
            resumed: AppSessionContinueReply = self.resume(body)
            return resumed
        raise AssertionError(f"unexpected request {body.TYPE}")

    async def until(self, done: Any) -> None:
        with trio.fail_after(WAIT):
            while not done():
                self.changed = trio.Event()
                await self.changed.wait()


B = TypeVar("B", bound=FakeBus)
M = TypeVar("M", bound=Message)


@overload
async def start_hostbridge(
    nursery: trio.Nursery, tmp_path: Path
) -> tuple[HostbridgeActor, FakeBus, int]: ...
@overload
async def start_hostbridge(
    nursery: trio.Nursery, tmp_path: Path, bus: B
) -> tuple[HostbridgeActor, B, int]: ...
async def start_hostbridge(
    nursery: trio.Nursery, tmp_path: Path, bus: FakeBus | None = None
) -> tuple[HostbridgeActor, FakeBus, int]:
    """The hostbridge on a free port, started, with `bus` (its type kept for the test)."""
    bus = bus if bus is not None else FakeBus()
    port = free_port()
    ctx = ActorContext(
        identity=Identity(ActorKind.HOSTBRIDGE, "hostbridge"),
        incarnation=1,
        data_dir=tmp_path,
        config={"hostbridge": {"port": port, "token": TOKEN}},
        bus=bus,  # type: ignore[arg-type]
    )
    actor = HostbridgeActor(ctx)
    await nursery.start(actor.run)
    return actor, bus, port


def from_peer(sender: str, event: M) -> tuple[M, Envelope]:
    """`event` as the bus hands it over, from `sender` (its kind too)."""
    return event, Envelope(Identity(ActorKind(sender), sender), event, 1, False)


def told(
    sender: str, *, state: str, reason: str | None = None
) -> tuple[RuntimeStateEvent, Envelope]:
    """A `hostbridge.runtime.state` as the bus hands it over, from `sender` (its kind too)."""
    return from_peer(sender, RuntimeStateEvent(state=state, reason=reason))


async def next_frame(ws: WebSocketConnection) -> dict[str, Any]:
    """The next frame but heartbeats (tests/hostbridge/test_interactions.py checks those)."""
    with trio.fail_after(WAIT):
        while True:
            frame: dict[str, Any] = json.loads(await ws.get_message())
            if frame["type"] != "shell.heartbeat":
                return frame


async def next_of(ws: WebSocketConnection, kind: str) -> dict[str, Any]:
    """The next frame of type `kind`, past any other."""
    while (frame := await next_frame(ws))["type"] != kind:
        pass
    return frame


async def runtime_states(ws: WebSocketConnection, count: int) -> list[str]:
    """The runtime's states the next `count` frames that say one say (a broadcast or a hello)."""
    states: list[str] = []
    while len(states) < count:
        frame = await next_frame(ws)
        if frame["type"] == "shell.runtime":
            states.append(frame["state"])
        elif frame["type"] == "shell.hello":
            states.append(frame["runtime"]["state"])
    return states


async def test_a_malformed_frame_is_refused_and_audited_and_the_socket_still_serves(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        actor, bus, port = await start_hostbridge(nursery, tmp_path)
        async with open_shell_socket(shell_at(port, TOKEN)) as ws:
            await ws.send_message(json.dumps({"type": "shell.ready"}))
            assert (await next_frame(ws))["type"] == "shell.hello"
            assert (await next_frame(ws))["type"] == "shell.apps"

            submit = {"kind": "composer.submit", "text": "hello"}
            frame = {"type": "ui.event", "app_scope": "chat", "instance_id": "chat"}
            await ws.send_message(json.dumps({**frame, "event": {**submit, "sneaky": True}}))
            await ws.send_message("[" * 4000)
            await ws.send_message(json.dumps({"type": "ui.intent", "intent": "kill"}))
            await ws.send_message(json.dumps({**frame, "event": submit}))
            await bus.until(lambda: any(isinstance(r, UiEventRequest) for r in bus.requests))

            # The runtime still reaches this Shell over the same socket.
            actor.on_runtime_state(*told("transport", state="reconnecting", reason="x"))
            assert await next_frame(ws) == {
                "type": "shell.runtime",
                "state": "reconnecting",
                "reason": "x",
            }
        nursery.cancel_scope.cancel()

    refused = [a for a in bus.audits if a.event == "hostbridge.shell_frame_refused"]
    assert [(a.code, a.message_type, a.peer) for a in refused] == [
        (ErrorCode.INVALID_ARGUMENTS.value, "ui.event", "user"),
        (ErrorCode.INVALID_ARGUMENTS.value, None, "user"),
        (ErrorCode.INVALID_ARGUMENTS.value, "ui.intent", "user"),
    ]
    events = [r for r in bus.requests if isinstance(r, UiEventRequest)]
    assert events == [UiEventRequest(instance_id="chat", event=submit)]
    accepted = [a for a in bus.audits if a.event == "ui.event"]
    assert [(a.message_type, a.subject_id, a.code) for a in accepted] == [
        ("composer.submit", "chat", None)
    ]


async def test_an_intent_reaches_focus_typed_and_is_audited_by_kind(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        _actor, bus, port = await start_hostbridge(nursery, tmp_path)
        async with open_shell_socket(shell_at(port, TOKEN)) as ws:
            await ws.send_message(
                json.dumps({"type": "ui.intent", "intent": "close", "instance_id": "task-1"})
            )
            await bus.until(lambda: any(isinstance(r, UiIntentRequest) for r in bus.requests))
        nursery.cancel_scope.cancel()
    assert [r for r in bus.requests if isinstance(r, UiIntentRequest)] == [
        UiIntentRequest(intent="close", instance_id="task-1")
    ]
    assert [(a.event, a.message_type, a.subject_id) for a in bus.audits] == [
        ("ui.intent", "close", "task-1")
    ]


async def handshake(
    port: int, token: str, origin: str, *, then_frame: bool = False, query: str = ""
) -> tuple[bytes, bytes]:
    """The HTTP status line the server answers a WebSocket handshake with and, `then_frame`,
    the first (small) frame it sends after it; the token offered as the Shell offers it, and
    `query` after the path. Raw: trio-websocket leaves a connection the server closed to the
    garbage collector, and the suite fails on its ResourceWarning."""
    offered = shell_at(port, token).subprotocols if token else [SHELL_SUBPROTOCOL]
    request = (
        f"GET /ws{query} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: {origin}\r\n"
        f"Sec-WebSocket-Protocol: {', '.join(offered)}\r\n"
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )

    def complete(answer: bytes) -> bool:
        _head, sep, frame = answer.partition(b"\r\n\r\n")
        if not sep or not then_frame:
            return bool(sep)
        return len(frame) >= 2 and len(frame) >= 2 + (frame[1] & 0x7F)

    with trio.fail_after(WAIT):
        async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
            await stream.send_all(request.encode())
            answer = b""
            while not complete(answer):
                chunk = await stream.receive_some(4096)
                assert chunk, f"closed after {answer!r}"
                answer += chunk
    head, _, frame = answer.partition(b"\r\n\r\n")
    return head.split(b"\r\n", 1)[0], frame


async def test_a_token_from_an_earlier_run_is_closed_with_a_code_the_shell_can_read(
    tmp_path: Path,
) -> None:
    """A browser sees a refused handshake only as 1006, as if the runtime were down, and retries
    forever; the stale token's socket is accepted and closed 4401, which the Shell stops on."""
    async with trio.open_nursery() as nursery:
        _actor, bus, port = await start_hostbridge(nursery, tmp_path)
        status, frame = await handshake(
            port, "earlier-run", f"http://127.0.0.1:{port}", then_frame=True
        )
        nursery.cancel_scope.cancel()
    assert status.split()[1] == b"101"
    opcode, length = frame[0] & 0x0F, frame[1] & 0x7F
    assert opcode == 0x8  # the first frame closes the socket
    assert int.from_bytes(frame[2:4], "big") == CLOSE_TOKEN_REFUSED == 4401
    assert frame[4 : 2 + length] == b"token_refused"
    assert bus.requests == []  # nothing of the runtime was asked for, or shown


def closed_with(frame: bytes) -> tuple[int, int, bytes]:
    """(opcode, close code, reason) of a server's first frame."""
    length = frame[1] & 0x7F
    return frame[0] & 0x0F, int.from_bytes(frame[2:4], "big"), frame[4 : 2 + length]


async def test_a_token_in_the_url_is_refused_as_a_wrong_token_is_and_audited_alike(
    tmp_path: Path,
) -> None:
    """The token travels as a subprotocol, never in the URL (a console, a history or a proxy's
    log shows a URL): in the query even the right token is refused, also beside the right one
    as a subprotocol, with the close code and the audit row of a wrong token."""
    async with trio.open_nursery() as nursery:
        _actor, bus, port = await start_hostbridge(nursery, tmp_path)
        origin = f"http://127.0.0.1:{port}"
        answers = [
            await handshake(port, "", origin, then_frame=True, query=f"?token={TOKEN}"),
            await handshake(port, TOKEN, origin, then_frame=True, query=f"?token={TOKEN}"),
            await handshake(port, "earlier-run", origin, then_frame=True),
        ]
        own, own_frame = await handshake(port, TOKEN, origin, then_frame=True)
        nursery.cancel_scope.cancel()
    assert [status.split()[1] for status, _ in answers] == [b"101"] * 3
    refused = (0x8, CLOSE_TOKEN_REFUSED, b"token_refused")
    assert [closed_with(frame) for _, frame in answers] == [refused] * 3
    rows = [(r.event, r.message_type, r.code) for r in bus.refusals]
    assert rows == [(HANDSHAKE_REFUSED, FAILED_TOKEN, ErrorCode.PERMISSION_DENIED.value)] * 3
    assert all(TOKEN not in str(r) for r in bus.audits)
    # The same socket with the token offered as a subprotocol alone gets in.
    assert own.split()[1] == b"101" and closed_with(own_frame)[0] != 0x8


async def test_a_foreign_origin_is_refused_at_the_handshake_whatever_its_token(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        _actor, bus, port = await start_hostbridge(nursery, tmp_path)
        own, _ = await handshake(port, TOKEN, f"http://127.0.0.1:{port}")
        foreign = [
            (await handshake(port, token, "http://evil.example"))[0]
            for token in (TOKEN, "earlier-run")
        ]
        nursery.cancel_scope.cancel()
    assert own.split()[1] == b"101"  # the same handshake from the Shell's own origin passes
    assert [status.split()[1] for status in foreign] == [b"403", b"403"]
    assert not any(isinstance(r, UiEventRequest) for r in bus.requests)


async def test_healthz_answers_200_with_a_tiny_json_body_and_no_token(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        _actor, _bus, port = await start_hostbridge(nursery, tmp_path)
        request = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
        answer = b""
        with trio.fail_after(WAIT):
            async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
                await stream.send_all(request.encode())
                while chunk := await stream.receive_some(4096):
                    answer += chunk
        nursery.cancel_scope.cancel()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split()[1] == b"200"
    assert json.loads(body) == {"ok": True}
    assert TOKEN.encode() not in answer


async def test_the_supervisors_restoring_and_stopping_show_over_the_links_state(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        actor, _bus, port = await start_hostbridge(nursery, tmp_path)
        actor.on_runtime_state(*told("supervisor", state="restoring"))
        async with open_shell_socket(shell_at(port, TOKEN)) as ws:
            await ws.send_message(json.dumps({"type": "shell.ready"}))
            hello = await next_frame(ws)  # the transport answers online; restoring is shown
            assert hello["runtime"] == {"state": "restoring", "reason": None}
            await next_frame(ws)  # shell.apps

            shown = []
            for sender, state, reason in [
                ("transport", "synchronizing", None),  # while restoring: not shown over it
                ("supervisor", "synchronizing", None),  # restored: the link's own state shows
                ("transport", "reconnecting", "appserver_timeout"),
                ("supervisor", "stopping", None),
                ("transport", "online", None),  # the link while stopping: stopping stays
            ]:
                actor.on_runtime_state(*told(sender, state=state, reason=reason))
                frame = await next_frame(ws)
                shown.append((frame["state"], frame.get("reason")))
            assert shown == [
                ("restoring", None),
                ("synchronizing", None),
                ("reconnecting", "appserver_timeout"),
                ("stopping", None),
                ("stopping", None),
            ]
        nursery.cancel_scope.cancel()


class RawShell:
    """A Shell's socket over wsproto on a plain TCP stream, for a server that closes it:
    trio-websocket leaves such a socket to the garbage collector (see `handshake`)."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.ws = WSConnection(ConnectionType.CLIENT)
        self._events: list[Event] = []

    @classmethod
    @asynccontextmanager
    async def open(cls, port: int) -> AsyncIterator[RawShell]:
        socket = shell_at(port, TOKEN)
        async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
            shell = cls(stream)
            await shell._send(
                Request(
                    host=f"127.0.0.1:{port}",
                    target="/ws",
                    subprotocols=socket.subprotocols,
                    extra_headers=socket.headers,
                )
            )
            assert isinstance(await shell._next_event(), AcceptConnection)
            await shell._send(TextMessage(data=json.dumps({"type": "shell.ready"})))
            yield shell

    async def _send(self, event: Event) -> None:
        await self.stream.send_all(self.ws.send(event))

    async def _next_event(self) -> Event:
        with trio.fail_after(WAIT):
            while not self._events:
                data = await self.stream.receive_some(65536)
                self.ws.receive_data(data or None)
                self._events.extend(self.ws.events())
        return self._events.pop(0)

    async def frames_until(self, kind: str | None) -> tuple[list[dict[str, Any]], int | None]:
        """Every frame but heartbeats up to the first of type `kind` or, for None, until the
        server closes the socket; and then its close code (answered, as a browser does)."""
        frames: list[dict[str, Any]] = []
        while not isinstance(event := await self._next_event(), CloseConnection):
            assert isinstance(event, TextMessage) and event.message_finished
            frame = json.loads(event.data)
            if frame["type"] != "shell.heartbeat":
                frames.append(frame)
            if frame["type"] == kind:
                return frames, None
        await self._send(event.response())
        return frames, event.code


async def test_a_stopping_hostbridge_sends_each_shell_all_it_was_told_then_closes_it_going_away(
    tmp_path: Path,
) -> None:
    """What was queued for a Shell when the runtime stops reaches it, the supervisor's
    `stopping` last, and only then is its socket closed, as going away; a Shell that connects
    after that is closed at once the same way. Before, the sockets went with the process and a
    Shell could go from online to disconnected without a word of stopping."""
    queued = 200  # within a Shell's queue; put at once, so none is sent when the stop begins
    async with trio.open_nursery() as nursery:
        hostbridge = trio.CancelScope()

        async def run(*, task_status: trio.TaskStatus[tuple[HostbridgeActor, int]]) -> None:
            with hostbridge:
                async with trio.open_nursery() as its_own:
                    actor, _bus, port = await start_hostbridge(its_own, tmp_path)
                    task_status.started((actor, port))

        actor, port = await nursery.start(run)
        async with RawShell.open(port) as shell:
            await shell.frames_until("shell.apps")  # its greeting
            for n in range(queued):
                actor.on_notice(*from_peer("focus", NoticeEvent(level="info", text=f"n{n}")))
            actor.on_runtime_state(*told("supervisor", state="stopping"))
            with trio.fail_after(WAIT):
                await actor.finish()  # returns once every Shell socket is closed
            async with RawShell.open(port) as later:
                assert await later.frames_until(None) == ([], CLOSE_GOING_AWAY)
            hostbridge.cancel()  # as the actor's process does next
            frames, code = await shell.frames_until(None)
    assert code == CLOSE_GOING_AWAY
    notices = [frame["text"] for frame in frames if frame["type"] == "shell.notice"]
    assert notices == [f"n{n}" for n in range(queued)]
    assert frames[-1] == {"type": "shell.runtime", "state": "stopping", "reason": None}


class Held(FakeBus):
    """A request of type `kind` is answered only once `release` is set: by `reply` if given,
    else as `FakeBus` answers it."""

    def __init__(self, kind: type[Message], reply: Message | None = None) -> None:
        super().__init__()
        self.kind, self.reply = kind, reply
        self.asked = trio.Event()
        self.release = trio.Event()

    async def request(self, peer: str, body: Message, **kwargs: Any) -> Message:
        if isinstance(body, self.kind):
            self.asked.set()
            await self.release.wait()
            if self.reply is not None:
                return self.reply
        return await super().request(peer, body, **kwargs)


@asynccontextmanager
async def greeting_held(
    tmp_path: Path, bus: Held
) -> AsyncIterator[tuple[HostbridgeActor, WebSocketConnection]]:
    """A hostbridge and a Shell that asked for its greeting, which waits on `bus`'s held
    request until the test sets `bus.release`."""
    async with trio.open_nursery() as nursery:
        actor, _bus, port = await start_hostbridge(nursery, tmp_path, bus)
        async with open_shell_socket(shell_at(port, TOKEN)) as ws:
            await ws.send_message(json.dumps({"type": "shell.ready"}))
            with trio.fail_after(WAIT):
                await bus.asked.wait()
            yield actor, ws
        nursery.cancel_scope.cancel()


async def test_a_state_that_changed_while_a_greeting_was_gathered_is_the_one_the_shell_keeps(
    tmp_path: Path,
) -> None:
    """The runtime became ready while a (re)connecting Shell's greeting waited on focus: the
    change was broadcast to the socket first, and the hello after it must not say the older
    state (the tab left open said Restoring… for good)."""
    bus = Held(ViewsRequest)  # focus answers the greeting's views once released
    async with trio.open_nursery() as nursery:
        actor, _bus, port = await start_hostbridge(nursery, tmp_path, bus)
        actor.on_runtime_state(*told("supervisor", state="restoring"))
        async with open_shell_socket(shell_at(port, TOKEN)) as ws:
            await ws.send_message(json.dumps({"type": "shell.ready"}))
            with trio.fail_after(WAIT):
                await bus.asked.wait()
            actor.on_runtime_state(*told("supervisor", state="online"))  # restored
            bus.release.set()
            # The broadcast, then the hello: both new.
            assert await runtime_states(ws, 2) == ["online", "online"]
        nursery.cancel_scope.cancel()


async def test_a_state_reply_older_than_a_tell_it_crossed_does_not_overwrite_it(
    tmp_path: Path,
) -> None:
    """After a restart under load, the Shell said Synchronizing… for good: the transport had
    told `online` (once; it tells a state once) while the greeting's reply, older, was on its
    way, and the reply overwrote it."""
    # The transport answers the greeting's state request with `synchronizing`, entered at 1,
    # but the reply is handed over only after the tell of `online`, entered at 2, was handled:
    # the two crossed on the way, as they do under load.
    bus = Held(RuntimeStateRequest, RuntimeStateReply(state="synchronizing", since_ns=1))
    async with greeting_held(tmp_path, bus) as (actor, ws):
        event = RuntimeStateEvent(state="online", since_ns=2)
        actor.on_runtime_state(*from_peer("transport", event))
        bus.release.set()
        # The tell, then the hello: both the newer.
        assert await runtime_states(ws, 2) == ["online", "online"]
        # ... and a later tell of an older state (a retried tell overtaken) changes nothing.
        stale = RuntimeStateEvent(state="reconnecting", reason="appserver_timeout", since_ns=1)
        actor.on_runtime_state(*from_peer("transport", stale))
        assert actor._runtime_shown() == ("online", None)


async def test_an_app_list_older_than_a_tell_it_crossed_is_not_the_one_the_shell_keeps(
    tmp_path: Path,
) -> None:
    """At start, the Shell kept the chat in front for good where focus had put the default app:
    the greeting's reply listed the apps before the launch, the tell of the list after it was
    broadcast while the greeting was still gathered, and the greeting's older list came last."""
    before = ViewsReply(views=(), foreground="chat", instances=(), apps_version=1)
    bus = Held(ViewsRequest, before)
    async with greeting_held(tmp_path, bus) as (actor, ws):
        launched = AppsUpdatedEvent(foreground="i-dash", instances=(DASHBOARD,), version=2)
        actor.on_apps(*from_peer("focus", launched))
        assert (await next_of(ws, "shell.apps"))["foreground"] == "i-dash"  # the tell
        bus.release.set()
        greeted = await next_of(ws, "shell.apps")
        assert greeted["foreground"] == "i-dash"  # the greeting's: the newest it had
        # ... and a later tell of an older list (one overtaken on its way) is dropped.
        stale = AppsUpdatedEvent(foreground="chat", instances=(), version=1)
        actor.on_apps(*from_peer("focus", stale))
        actor.on_runtime_state(*told("transport", state="reconnecting", reason="x"))
        assert (await next_frame(ws))["type"] == "shell.runtime"


async def test_a_view_older_than_a_tell_it_crossed_is_not_the_one_the_shell_keeps(
    tmp_path: Path,
) -> None:
    """Likewise for an instance's view: the greeting's reply held the view before the app's
    last update, told meanwhile; the Shell must keep the update."""
    old = AppView(
        app_scope="task-dashboard", instance_id="i-dash", view={"title": "old"}, version=1
    )
    before = ViewsReply(views=(old,), foreground="i-dash", instances=(DASHBOARD,))
    bus = Held(ViewsRequest, before)
    async with greeting_held(tmp_path, bus) as (actor, ws):
        actor.on_view(*from_peer("focus", dashboard_view("new", version=2)))
        assert (await next_of(ws, "shell.view"))["view"] == {"title": "new"}  # the tell
        bus.release.set()
        greeted = await next_of(ws, "shell.view")
        assert greeted["view"] == {"title": "new"}  # the greeting's: the newest it had
        # ... and a later tell of an older view (one overtaken on its way) is dropped.
        actor.on_view(*from_peer("focus", dashboard_view("stale", version=1)))
        actor.on_view(*from_peer("focus", dashboard_view("newer", version=3)))
        assert (await next_of(ws, "shell.view"))["view"] == {"title": "newer"}


DASHBOARD = LiveInstance(
    instance_id="i-dash", app_scope="task-dashboard", state="foreground", title="Tasks"
)


def dashboard_view(title: str, *, version: int) -> ViewUpdatedEvent:
    return ViewUpdatedEvent(
        app_scope="task-dashboard", instance_id="i-dash", view={"title": title}, version=version
    )


class RefusingOpens(FakeBus):
    """Focus refuses every `ui.open`: the app is disabled."""

    async def request(self, peer: str, body: Message, **kwargs: Any) -> Message:
        if isinstance(body, UiOpenRequest):
            self.requests.append(body)
            self.changed.set()
            raise LineUpError(ErrorCode.APP_DISABLED, "disabled")
        return await super().request(peer, body, **kwargs)


async def test_an_open_focus_refuses_is_a_notice_naming_its_code_and_is_audited_by_app(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        _actor, bus, port = await start_hostbridge(nursery, tmp_path, RefusingOpens())
        async with open_shell_socket(shell_at(port, TOKEN)) as ws:
            await ws.send_message(json.dumps({"type": "shell.ready"}))
            assert (await next_frame(ws))["type"] == "shell.hello"
            assert (await next_frame(ws))["type"] == "shell.apps"
            await ws.send_message(json.dumps({"type": "ui.open", "app_scope": "whiteboard"}))
            notice = await next_frame(ws)
        nursery.cancel_scope.cancel()
    assert (notice["type"], notice["level"]) == ("shell.notice", "error")
    assert notice["code"] == ErrorCode.APP_DISABLED.value  # the Shell says it in words
    assert [r for r in bus.requests if isinstance(r, UiOpenRequest)] == [
        UiOpenRequest(app_scope="whiteboard")
    ]
    assert [(a.event, a.message_type, a.subject_id) for a in bus.audits] == [
        ("ui.open", None, "whiteboard")
    ]
