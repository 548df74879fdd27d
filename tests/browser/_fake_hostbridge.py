"""A fake hostbridge for the Shell's browser tests.

It serves the real `hostbridge/web/` assets with a strict CSP and one scripted `/ws` endpoint
that speaks the Shell protocol: it checks the token (and the Origin, as the real one must),
greets with `shell.hello`, answers every `shell.ready` with `on_ready` (the current snapshot,
which a test may swap between connections), sends `shell.heartbeat` every `HEARTBEAT_S` as the
real one does (until a test sets `frozen`: then it is silent, as a stopped process would be),
and hands each accepted connection to the test, which then sends frames and reads what the
Shell sent.
"""

from __future__ import annotations

import hmac
import json
import math
from collections.abc import Awaitable, Callable, MutableMapping
from functools import partial
from pathlib import Path
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from starlette.applications import Starlette
from starlette.routing import Mount, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

import lineup.hostbridge
from lineup.hostbridge._server import offered_token
from lineup.hostbridge.shell_protocol import HEARTBEAT_S

WEB_DIR = Path(lineup.hostbridge.__file__).resolve().parent / "web"
# What the real hostbridge should send too: the Shell must work under it unchanged.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEARTBEAT = json.dumps({"type": "shell.heartbeat"})
FRAME_TIMEOUT_S = 10.0
TOKEN_REFUSED = 4401
ORIGIN_REFUSED = 4403

Frame = dict[str, Any]
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class ShellConnection:
    """One accepted WebSocket from the Shell, seen from the test."""

    def __init__(self, websocket: WebSocket) -> None:
        self._websocket = websocket
        self._frames_in, self._frames_out = trio.open_memory_channel[Frame](math.inf)
        self.closed = trio.Event()

    async def send(self, frame: Frame | list[Frame]) -> None:
        """Send a frame, or several in order (a view with its items)."""
        for one in frame if isinstance(frame, list) else [frame]:
            await self._websocket.send_text(json.dumps(one))

    async def receive(self) -> Frame:
        """The next frame the Shell sent; fails after FRAME_TIMEOUT_S."""
        with trio.fail_after(FRAME_TIMEOUT_S):
            return await self._frames_out.receive()

    async def expect(self, frame_type: str) -> Frame:
        """The next frame, which must be of `frame_type`."""
        frame = await self.receive()
        assert frame.get("type") == frame_type, frame
        return frame

    def pending(self) -> list[Frame]:
        """Frames received and not yet read, without waiting."""
        frames = []
        while True:
            try:
                frames.append(self._frames_out.receive_nowait())
            except trio.WouldBlock:
                return frames

    async def close(self, code: int = 1011) -> None:
        await self._websocket.close(code=code)

    def _deliver(self, frame: Frame) -> None:
        self._frames_in.send_nowait(frame)


class FakeHostbridge:
    def __init__(self, token: str, runtime_state: str = "online") -> None:
        self.token = token
        self.runtime_state = runtime_state
        self.on_ready: list[Frame | list[Frame]] = []
        self.url = ""
        self.refused: list[int] = []  # close codes of refused connections
        self.http_paths: list[str] = []
        self.frozen = False  # `freeze()`: no frame at all, heartbeat included, reaches a Shell
        self._thawed = trio.Event()
        self._connections_in, self._connections_out = trio.open_memory_channel[ShellConnection](
            math.inf
        )
        routes = [
            WebSocketRoute("/ws", self._shell_socket),
            Mount("/", app=StaticFiles(directory=WEB_DIR, html=True)),
        ]
        self.app: ASGIApp = self._with_headers(Starlette(routes=routes))

    async def run(self, *, task_status: trio.TaskStatus[FakeHostbridge]) -> None:
        config = Config()
        config.bind = ["127.0.0.1:0"]
        config.accesslog = None
        config.errorlog = None
        config.graceful_timeout = 0.5
        async with trio.open_nursery() as nursery:
            # hypercorn types an ASGI app by its own scope TypedDicts, starlette by mappings:
            # the same ASGI callable, which neither library's types admit for the other.
            serving = partial(serve, self.app, config)  # type: ignore[arg-type]
            binds: list[str] = await nursery.start(serving)
            self.url = binds[0]
            task_status.started(self)

    async def next_connection(self) -> ShellConnection:
        """The next connection the fake accepted; fails after FRAME_TIMEOUT_S."""
        with trio.fail_after(FRAME_TIMEOUT_S):
            return await self._connections_out.receive()

    def shell_url(self, *, token: str | None = None) -> str:
        return f"{self.url}/#token={self.token if token is None else token}"

    def freeze(self) -> None:
        """Silent from now on, as a SIGSTOPped process: no frame is sent, no socket opens."""
        self.frozen = True
        self._thawed = trio.Event()

    def thaw(self) -> None:
        self.frozen = False
        self._thawed.set()

    async def _shell_socket(self, websocket: WebSocket) -> None:
        if self.frozen:
            await self._thawed.wait()  # the handshake hangs, as with a stopped process
        token, subprotocol = offered_token(websocket)
        await websocket.accept(subprotocol=subprotocol)
        if websocket.headers.get("origin") != self.url:
            self.refused.append(ORIGIN_REFUSED)
            await websocket.close(code=ORIGIN_REFUSED)
            return
        if not hmac.compare_digest(token.encode(), self.token.encode()):
            self.refused.append(TOKEN_REFUSED)
            await websocket.close(code=TOKEN_REFUSED)
            return
        connection = ShellConnection(websocket)
        await websocket.send_text(
            json.dumps({"type": "shell.hello", "runtime": {"state": self.runtime_state}})
        )
        self._connections_in.send_nowait(connection)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._heartbeat, websocket)
                await self._read(websocket, connection)
                nursery.cancel_scope.cancel()
        finally:
            connection.closed.set()

    async def _read(self, websocket: WebSocket, connection: ShellConnection) -> None:
        try:
            while True:
                frame = json.loads(await websocket.receive_text())
                assert isinstance(frame, dict), frame
                if frame.get("type") == "shell.ready":
                    for snapshot in self.on_ready:
                        for one in snapshot if isinstance(snapshot, list) else [snapshot]:
                            await websocket.send_text(json.dumps(one))
                connection._deliver(frame)
        except WebSocketDisconnect:
            pass

    async def _heartbeat(self, websocket: WebSocket) -> None:
        try:
            while True:
                await trio.sleep(HEARTBEAT_S)
                if not self.frozen:
                    await websocket.send_text(HEARTBEAT)
        except (WebSocketDisconnect, RuntimeError):
            return  # the socket closed under it

    def _with_headers(self, app: ASGIApp) -> ASGIApp:
        async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            self.http_paths.append(str(scope["path"]))

            async def send_with_headers(message: Message) -> None:
                if message["type"] == "http.response.start":
                    headers = [
                        *message.get("headers", []),
                        (b"content-security-policy", CSP.encode()),
                        (b"cache-control", b"no-store"),
                    ]
                    message = {**message, "headers": headers}
                await send(message)

            await app(scope, receive, send_with_headers)

        return wrapped
