"""The Shell's HTTP + WebSocket server, on 127.0.0.1 only (DESIGN §7).

Every request must name this server in `Host` (127.0.0.1:PORT or localhost:PORT), which defeats
DNS rebinding; the WebSocket also needs the data dir's token (offered as a subprotocol; in the
URL it is refused: `offered_token`) and an `Origin` of this server, so a page from any other
origin cannot drive the runtime even from the same machine. The token is compared in constant
time and never logged.

A refused handshake (no token or a wrong one, a foreign `Origin` or `Host`) is reported to the
actor's `refused`, which audits it at a bounded rate, and logged by which check failed, one line
per kind per window (`RefusalLog`): any local process can try as often as it likes.

What the Shell sends is a *user* action: each frame is parsed once here, against the Shell
protocol (`shell_protocol.SHELL_TO_RUNTIME`); a frame that fails is refused and reported by its
type (never its content), and the socket stays open. What passes is handed on as a typed model,
to focus through the actor; it never becomes an Agent tool call.

The Shell's files are `web/` served as a directory (`_web`: plain names only, from memory),
under one CSP set by HTTP header on every response (the page carries none of its own);
anything else is 404. Every connected Shell also gets `shell.heartbeat` every `HEARTBEAT_S`, so
a Shell can tell a silent hostbridge from a quiet one.
"""

from __future__ import annotations

import hmac
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import trio
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from lineup.actors.kernel.errors import ErrorCode

from ._refusals import RefusalLog
from ._surface_guard import guarded_script
from ._web import WebFiles
from .shell_protocol import (
    HEARTBEAT_S,
    MAX_CAPABILITY_DONE_FRAME,
    MAX_SHELL_FRAME,
    SHELL_SUBPROTOCOL,
    SHELL_TO_RUNTIME,
    TOKEN_SUBPROTOCOL,
    AppSessionContinueFrame,
    CapabilityAnswerFrame,
    CapabilityDoneFrame,
    CapabilityFrame,
    GrantSetFrame,
    GrantsListFrame,
    InteractionAnswerFrame,
    InteractionDraftFrame,
    ShellAction,
    ShellHeartbeat,
    ShellOutbound,
    ShellReady,
    SurfaceRejectedFrame,
    SurfaceRequestFrame,
    SurfaceUnavailableFrame,
    encode,
    refused_type,
)

__all__ = [
    "HANDSHAKE_REFUSED",
    "MAX_SHELL_FRAME",
    "ArtifactHost",
    "CapabilityHost",
    "ShellHub",
    "ShellSocket",
    "SurfaceFile",
    "SurfaceHost",
    "build_app",
]

log = logging.getLogger("lineup.hostbridge")

OUTBOX_PER_SHELL: Final = 256  # frames queued for one Shell before it is dropped as too slow
# Close codes the Shell reads (web/js/core/connection.js FATAL_CLOSES: it stops on either).
CLOSE_TOKEN_REFUSED: Final = 4401  # a token from an earlier run (or none): open the new link
CLOSE_POLICY: Final = 4403
CLOSE_GOING_AWAY: Final = 1001  # the runtime stops: the Shell says disconnected and retries

HEARTBEAT: Final = encode(ShellHeartbeat())
INTERACTION_FRAMES_PER_S: Final = 10.0  # answers and drafts one Shell may send, sustained
INTERACTION_FRAMES_BURST: Final = 30
# The frames that act on the runtime's records (and a Shell's reports of what its bridge
# dropped, at most one a second): each Shell gets them at the bounded rate above.
_BUDGETED: Final = (
    InteractionAnswerFrame,
    InteractionDraftFrame,
    AppSessionContinueFrame,
    SurfaceRejectedFrame,
    SurfaceUnavailableFrame,
    CapabilityAnswerFrame,
    CapabilityDoneFrame,
    GrantsListFrame,
    GrantSetFrame,
)
_CAPABILITY_FRAMES: Final = (
    CapabilityAnswerFrame,
    CapabilityDoneFrame,
    GrantsListFrame,
    GrantSetFrame,
)
# The one frame that may be longer than `MAX_SHELL_FRAME` (a picked file), told by its start:
# the Shell writes `type` first (web/js/components/provider_run.js).
_LONG_FRAME: Final = re.compile(r'\s*\{\s*"type"\s*:\s*"capability\.done"')
# A Surface's bridge requests (web/js/core/bridge.js lets 60/s through per Surface, burst 120).
SURFACE_REQUESTS_PER_S: Final = 60.0
SURFACE_REQUESTS_BURST: Final = 120
HANDSHAKE_REFUSED: Final = "hostbridge.shell_handshake_refused"  # its audit event
# The check a refused handshake failed, as its audit row's `message_type`.
FAILED_HOST: Final = "ws.host"
FAILED_ORIGIN: Final = "ws.origin"
FAILED_TOKEN: Final = "ws.token"


@dataclass(frozen=True)
class ShellAccess:
    port: int
    token: str

    @property
    def hosts(self) -> frozenset[str]:
        return frozenset({f"127.0.0.1:{self.port}", f"localhost:{self.port}"})

    @property
    def origins(self) -> frozenset[str]:
        return frozenset(f"http://{host}" for host in self.hosts)

    def csp(self) -> str:
        sockets = " ".join(f"ws://{host}" for host in sorted(self.hosts))
        return (
            f"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            f"connect-src 'self' {sockets}; frame-src 'self'; base-uri 'none'; "
            f"form-action 'none'; frame-ancestors 'none'"
        )


class ShellHub:
    """The connected Shells: broadcast to all, each through its own bounded queue."""

    def __init__(self) -> None:
        self._shells: set[trio.MemorySendChannel[str]] = set()
        self._joined = 0  # Shell sockets between `join` and `leave`
        self.closing = False
        self._all_left = trio.Event()

    def broadcast(self, frame: ShellOutbound) -> None:
        text = encode(frame)  # once, whatever the number of Shells
        for queue in list(self._shells):
            try:
                queue.send_nowait(text)
            except trio.WouldBlock:  # too slow: closed, it reconnects and resyncs
                log.warning("hostbridge.shell_dropped reason=queue_full type=%s", frame.type)
                self._shells.discard(queue)
                queue.close()
            except (trio.BrokenResourceError, trio.ClosedResourceError):  # gone
                self._shells.discard(queue)
                queue.close()

    def join(self) -> tuple[trio.MemorySendChannel[str], trio.MemoryReceiveChannel[str]]:
        send, receive = trio.open_memory_channel[str](OUTBOX_PER_SHELL)
        self._joined += 1
        if self.closing:
            send.close()  # too late: its pump closes the socket at once
        else:
            self._shells.add(send)
        return send, receive

    def leave(self, queue: trio.MemorySendChannel[str]) -> None:
        self._shells.discard(queue)
        queue.close()
        self._joined -= 1
        if self.closing and self._joined == 0:
            self._all_left.set()

    async def close(self) -> None:
        """The runtime stops: each Shell's queue is closed, so its pump sends what was put in
        it (`stopping` last) and then closes the socket as going away. Returns once every
        Shell socket is closed. Without this, the sockets went with the process, and a frame
        still queued (or half sent) was lost: the Shell went from online to disconnected
        without ever saying Stopping… (seen once in CI)."""
        self.closing = True
        for queue in self._shells:
            queue.close()
        self._shells.clear()
        if self._joined == 0:
            self._all_left.set()
        await self._all_left.wait()

    def __len__(self) -> int:
        return len(self._shells)


# What the hostbridge actor provides to the server. A greeting's frame may be a callable, made
# as it is sent: the runtime's state, which a broadcast may have overtaken while the rest of the
# greeting was built (it would then arrive after the newer state, and stay).
Greeting = Callable[[], Awaitable[Sequence[ShellOutbound | Callable[[], ShellOutbound]]]]
Inbound = Callable[[ShellAction], Awaitable[None]]
FrameRefused = Callable[[str | None], None]  # a frame failed the protocol; its type, if any
Reply = Callable[[ShellOutbound], None]  # a frame to the one Shell that sent the request


@dataclass(frozen=True)
class SurfaceFile:
    """One response under `/surfaces/{instance_id}/`: a file, or bytes made for it."""

    body: Path | bytes
    content_type: str
    # A script an MCP App's page loads as a module: a CORS load from its opaque origin.
    cors: bool = False
    # Its own CSP, in place of the Surface's (an MCP App's document the user granted more).
    csp: str | None = None


async def surface_response(found: SurfaceFile, headers: dict[str, str]) -> Response:
    """What is sent for `found`: every script with the runtime's guard first."""
    if found.cors:
        headers = {**headers, "Access-Control-Allow-Origin": "*"}  # its public code, to any page
    if found.csp is not None:
        headers = {**headers, "Content-Security-Policy": found.csp}
    body, content_type = found.body, found.content_type
    if content_type.partition(";")[0] == "text/javascript":
        source = body if isinstance(body, bytes) else await trio.Path(body).read_bytes()
        return Response(guarded_script(source), media_type=content_type, headers=headers)
    if isinstance(body, bytes):
        return Response(body, media_type=content_type, headers=headers)
    return FileResponse(body, media_type=content_type, headers=headers)


class SurfaceHost(Protocol):
    """The actor's side of Surfaces (`_actor`, `_surfaces`)."""

    async def file(self, instance_id: str, path: str) -> SurfaceFile | None:
        """An open Surface's file (or what is served for it); None: not one (404)."""
        ...

    def headers(self, instance_id: str) -> dict[str, str]:
        """The headers of every response under `/surfaces/{instance_id}/`."""
        ...

    async def request(self, frame: SurfaceRequestFrame, reply: Reply, *, limited: bool) -> None:
        """A bridge request (`limited`: past the Shell's rate); answered through `reply`."""
        ...


class CapabilityHost(Protocol):
    """The actor's side of capabilities (`_capabilities`): the user's answers and the
    permissions page, each answered (a refusal as a notice) to the Shell that sent it."""

    async def frame(self, frame: CapabilityFrame, reply: Reply) -> None: ...


class ShellSocket(Protocol):
    """What `_listen` reads a Shell's frames from: the accepted WebSocket (a test's fake)."""

    async def receive_text(self) -> str: ...

    async def close(self, code: int) -> None: ...


class ArtifactHost(Protocol):
    """The actor's side of artifacts (`_artifacts`)."""

    async def respond(self, artifact_id: str, ticket: str, download: bool) -> Response: ...


class Refused(Protocol):
    """A refusal to audit: by default, a frame that failed the protocol (its type, if any);
    a handshake is `HANDSHAKE_REFUSED`, with the check it failed as `message_type`."""

    def __call__(self, message_type: str | None, event: str = ..., code: str = ...) -> None: ...


def build_app(
    access: ShellAccess,
    hub: ShellHub,
    greeting: Greeting,
    inbound: Inbound,
    refused: Refused,
    surfaces: SurfaceHost | None = None,
    artifacts: ArtifactHost | None = None,
    capabilities: CapabilityHost | None = None,
) -> Starlette:
    def host_ok(headers: Any) -> bool:
        return headers.get("host", "") in access.hosts

    # One policy for every response, the page's and each module's alike.
    headers = {
        "Content-Security-Policy": access.csp(),
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }

    web = WebFiles()

    def serve_file(path: str, host: bool) -> Response:
        found = web.get(path) if host else None
        if found is None:
            status, text = (404, "not found") if host else (403, "unknown host")
            return PlainTextResponse(text, status_code=status, headers=headers)
        body, content_type = found
        return Response(body, media_type=content_type, headers=headers)

    async def index(request: Request) -> Response:
        return serve_file("index.html", host_ok(request.headers))

    async def static(request: Request) -> Response:
        return serve_file(str(request.path_params["path"]), host_ok(request.headers))

    async def surface(request: Request) -> Response:
        # The app's public files, no token: but only of an instance whose Surface is open.
        if not host_ok(request.headers):
            return PlainTextResponse("unknown host", status_code=403, headers=headers)
        instance_id = str(request.path_params["instance_id"])
        if surfaces is None:
            return PlainTextResponse("not found", status_code=404, headers=headers)
        found = await surfaces.file(instance_id, str(request.path_params["path"]))
        own = surfaces.headers(instance_id)
        if found is None:
            return PlainTextResponse("not found", status_code=404, headers=own)
        return await surface_response(found, own)

    async def artifact(request: Request) -> Response:
        if not host_ok(request.headers):
            return PlainTextResponse("unknown host", status_code=403, headers=headers)
        if artifacts is None:
            return PlainTextResponse("not found", status_code=404, headers=headers)
        return await artifacts.respond(
            str(request.path_params["artifact_id"]),
            request.query_params.get("ticket", ""),
            request.query_params.get("download") == "1",
        )

    async def healthz(request: Request) -> Response:
        # For a local probe: no token, and nothing in it a foreign page could use.
        return JSONResponse({"ok": True}, headers={"Cache-Control": "no-store"})

    quiet = RefusalLog(log)

    def handshake_refused(failed: str) -> None:
        refused(failed, HANDSHAKE_REFUSED, ErrorCode.PERMISSION_DENIED.value)
        quiet.refused(HANDSHAKE_REFUSED, check=failed)

    async def shell_socket(websocket: WebSocket) -> None:
        token, subprotocol = offered_token(websocket)
        origin = websocket.headers.get("origin", "")
        if not host_ok(websocket.headers) or origin not in access.origins:
            # Refused at the handshake (HTTP 403): a foreign page learns nothing more.
            handshake_refused(FAILED_HOST if not host_ok(websocket.headers) else FAILED_ORIGIN)
            await websocket.close(code=CLOSE_POLICY)
            return
        if not hmac.compare_digest(token.encode(), access.token.encode()):
            # Our own page, with a token of an earlier run: a refused handshake reaches a
            # browser only as 1006, the code of a runtime that is down, and the Shell would
            # retry forever. Accepted, then closed with a code it can read, it stops and says so.
            handshake_refused(FAILED_TOKEN)
            await websocket.accept(subprotocol=subprotocol)
            await websocket.close(code=CLOSE_TOKEN_REFUSED, reason="token_refused")
            return
        await websocket.accept(subprotocol=subprotocol)
        send, receive = hub.join()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_pump, websocket, receive, hub, nursery.cancel_scope)
                nursery.start_soon(_heartbeat, send)
                await _listen(websocket, send, greeting, inbound, refused, surfaces, capabilities)
                nursery.cancel_scope.cancel()
        finally:
            hub.leave(send)

    return Starlette(
        routes=[
            Route("/", index),
            Route("/healthz", healthz),  # before /{name}, which would answer it 404
            Route("/surfaces/{instance_id}/{path:path}", surface),
            Route("/artifacts/{artifact_id}", artifact),
            Route("/{path:path}", static),
            WebSocketRoute("/ws", shell_socket),
        ]
    )


def offered_token(websocket: WebSocket) -> tuple[str, str | None]:
    """(the token a Shell socket offers, the subprotocol to answer it with). Every client
    offers its token as a subprotocol (`TOKEN_SUBPROTOCOL` + token, beside `SHELL_SUBPROTOCOL`,
    the one answered: never the token), as the Shell does; the drill, the bench and the tests
    too (`lineup.supervisor._runtime.ShellSocket`). A token in the URL's query is refused,
    whatever else is offered (answered "": the wrong token's close code and audit row): a URL
    ends up in consoles, histories and logs."""
    offered: list[str] = list(websocket.scope.get("subprotocols") or [])
    answer = SHELL_SUBPROTOCOL if SHELL_SUBPROTOCOL in offered else None
    if "token" in websocket.query_params:
        return "", answer
    for name in offered:
        if name.startswith(TOKEN_SUBPROTOCOL):
            return name.removeprefix(TOKEN_SUBPROTOCOL), answer
    return "", answer


async def _listen(
    websocket: ShellSocket,
    send: trio.MemorySendChannel[str],
    greeting: Greeting,
    inbound: Inbound,
    refused: FrameRefused,
    surfaces: SurfaceHost | None = None,
    capabilities: CapabilityHost | None = None,
) -> None:
    """Read the Shell's frames until it goes away (or sends one too large). Each is parsed
    once; one that fails the protocol is reported to `refused` and skipped, and so is an
    interaction frame past its rate (`_Budget`). A Surface's request is answered to this
    Shell alone (one past its own rate too, with `bridge_rate_limited`), and so are the
    capability frames (at the interactions' rate). Only a `capability.done` may be longer than
    `MAX_SHELL_FRAME` (a picked file), up to `MAX_CAPABILITY_DONE_FRAME`."""
    budget = _Budget()
    surface_budget = _Budget(SURFACE_REQUESTS_PER_S, SURFACE_REQUESTS_BURST)

    def reply(frame: ShellOutbound) -> None:
        try:
            send.send_nowait(encode(frame))
        except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
            log.warning("hostbridge.reply_dropped type=%s", frame.type)

    while True:
        try:
            text = await websocket.receive_text()
        except WebSocketDisconnect:
            return
        long = len(text) > MAX_SHELL_FRAME
        if long and (len(text) > MAX_CAPABILITY_DONE_FRAME or not _LONG_FRAME.match(text, 0, 64)):
            await websocket.close(code=1009)
            return
        try:
            frame = SHELL_TO_RUNTIME.validate_json(text)
        except ValidationError as exc:
            refused(refused_type(exc))
            if long:  # past a Shell frame's size, and not the one frame that may be
                await websocket.close(code=1009)
                return
            continue
        if long and not isinstance(frame, CapabilityDoneFrame):
            await websocket.close(code=1009)  # a second `type` key, say: not what it said
            return
        if isinstance(frame, ShellReady):
            # Waits for the pump rather than overflowing: a greeting can hold more frames
            # (one view per open instance) than the queue does.
            try:
                for hello in await greeting():
                    # A frame made now is put before `send` yields (trio puts, then
                    # checkpoints): no broadcast can come between its making and its place.
                    await send.send(encode(hello() if callable(hello) else hello))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # dropped, or the runtime stops: the pump ends this socket
            continue
        if isinstance(frame, SurfaceRequestFrame):
            if surfaces is None:
                refused(frame.type)
                continue
            await surfaces.request(frame, reply, limited=not surface_budget.take())
            continue
        if isinstance(frame, _BUDGETED) and not budget.take():
            refused(frame.type)  # past its rate: refused, audited by type like any refusal
            continue
        if isinstance(frame, _CAPABILITY_FRAMES):
            if capabilities is None:
                refused(frame.type)
                continue
            await capabilities.frame(frame, reply)
            continue
        await inbound(frame)


class _Budget:
    """A token bucket: `INTERACTION_FRAMES_PER_S` sustained, `INTERACTION_FRAMES_BURST` at once.
    A draft is saved a few times a second while typing and an answer once per card: a Shell
    past this is not a person typing."""

    def __init__(
        self, rate: float = INTERACTION_FRAMES_PER_S, burst: int = INTERACTION_FRAMES_BURST
    ) -> None:
        self._rate = rate
        self._burst = float(burst)
        self._tokens = self._burst
        self._at = trio.current_time()

    def take(self) -> bool:
        now = trio.current_time()
        refill = (now - self._at) * self._rate
        self._tokens = min(self._burst, self._tokens + refill)
        self._at = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True


async def _heartbeat(queue: trio.MemorySendChannel[str]) -> None:
    """`shell.heartbeat` into the Shell's queue every `HEARTBEAT_S`. A full queue skips one:
    the Shell is being sent frames anyway (and the hub drops one that stays too slow)."""
    while True:
        await trio.sleep(HEARTBEAT_S)
        try:
            queue.send_nowait(HEARTBEAT)
        except trio.WouldBlock:
            continue
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return


async def _pump(
    websocket: WebSocket,
    frames: trio.MemoryReceiveChannel[str],
    hub: ShellHub,
    scope: trio.CancelScope,
) -> None:
    """Send the Shell's queue, in order, until the hub closes it: then, if the runtime is
    stopping, close the socket once all of it is sent; otherwise the hub dropped this Shell
    (too slow), and it is cut off (1011): it reconnects and resyncs."""
    try:
        async for text in frames:
            await websocket.send_text(text)
        if hub.closing:
            await websocket.close(code=CLOSE_GOING_AWAY)
    except (WebSocketDisconnect, RuntimeError):
        pass
    scope.cancel()
