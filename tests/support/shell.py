"""A scripted Shell: the real WebSocket protocol the browser speaks, driven from a test."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import trio
from trio_websocket import WebSocketConnection, open_websocket_url

from lineup.supervisor._runtime import ShellSocket, shell_socket

Frame = dict[str, Any]


class ShellClient:
    """Connects like the browser does (token, Origin), keeps the latest of everything."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self.ws = ws
        self.runtime_state: str | None = None
        self.runtime_reason: str | None = None  # why the link is down, an appserver_* code
        self.views: dict[str, dict[str, Any]] = {}
        # Each instance's items (`shell.items`), by id, and whether older ones remain.
        self.items: dict[str, dict[str, dict[str, Any]]] = {}
        self.more: dict[str, bool] = {}
        self.frames: list[Frame] = []
        self.closed = False  # the runtime closed the socket (this client never reconnects)
        self._changed = trio.Event()

    async def pump(self) -> None:
        try:
            await self._pump()
        finally:
            self.closed = True
            self._changed.set()

    async def _pump(self) -> None:
        async for frame in _frames(self.ws):
            self.frames.append(frame)
            if frame.get("type") == "shell.hello":
                self.runtime_state = frame["runtime"]["state"]
                self.runtime_reason = frame["runtime"].get("reason")
            elif frame.get("type") == "shell.runtime":
                self.runtime_state = frame["state"]
                self.runtime_reason = frame.get("reason")
            elif frame.get("type") == "shell.view":
                self.views[frame["instance_id"]] = frame["view"]
            elif frame.get("type") == "shell.items":
                held = self.items.setdefault(frame["instance_id"], {})
                for item in frame["items"]:
                    if item["id"] not in held or held[item["id"]]["rev"] <= item["rev"]:
                        held[item["id"]] = item  # the newest version, as the Shell keeps
            elif frame.get("type") == "shell.page":
                self.more[frame["instance_id"]] = frame["more"]
            self._changed.set()
            self._changed = trio.Event()

    async def wait_until(self, predicate: Callable[[ShellClient], bool]) -> None:
        try:
            while not predicate(self):
                await self._changed.wait()
        except trio.Cancelled as exc:  # a test's deadline: say what the Shell had by then
            exc.add_note(self.describe())
            raise

    def describe(self) -> str:
        """What this Shell holds, for a failed wait: the link, the socket, the app list last
        told, the notices' codes, the last frames' types, each instance's newest items (order,
        id, author, state)."""
        lines = [
            f"shell: runtime={self.runtime_state} reason={self.runtime_reason} "
            f"socket={'closed' if self.closed else 'open'} frames={len(self.frames)}"
        ]
        listed = [f for f in self.frames if f.get("type") == "shell.apps"]
        if listed:  # the app list last told: which instance is in front, which are live
            last = listed[-1]
            live = [(i.get("app_scope"), i.get("state")) for i in last.get("instances", ())]
            lines.append(f"  apps: foreground={last.get('foreground')} live={live}")
        codes = [f.get("code") for f in self.frames if f.get("type") == "shell.notice"]
        if codes:
            lines.append(f"  notices: {codes}")
        lines.append(f"  frames: {[f.get('type') for f in self.frames[-25:]]}")
        for instance_id, held in self.items.items():
            newest = sorted(held.values(), key=lambda i: (i["order"], i["id"]))[-10:]
            shown = [(i["order"], i["id"], i.get("author"), i.get("state")) for i in newest]
            lines.append(f"  {instance_id}: {len(held)} items, newest {shown}")
        return "\n".join(lines)

    async def send(self, frame: Frame) -> None:
        await self.ws.send_message(json.dumps(frame))

    async def say(self, text: str) -> None:
        await self.send(
            {
                "type": "ui.event",
                "app_scope": "chat",
                "instance_id": "chat",
                "event": {"kind": "composer.submit", "text": text},
            }
        )

    def timeline(self) -> list[dict[str, Any]]:
        """The chat's messages as the Shell holds them, in order."""
        items = (self.items.get("chat") or {}).values()
        return sorted(items, key=lambda i: (i["order"], i["id"]))

    def agent_message_ids(self) -> set[str]:
        """The ids of the Agent's messages the chat shows (its items are `agent:<id>`)."""
        return {i["id"].removeprefix("agent:") for i in self.timeline() if i["author"] == "agent"}


async def send_and_drain(port: int, data: bytes, wait: float) -> None:
    """Raw bytes to the Shell's socket on 127.0.0.1:`port` in one write, then read until the
    server closes the connection; fails after `wait` seconds."""
    with trio.fail_after(wait):
        async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
            await stream.send_all(data)
            try:
                while await stream.receive_some(65536):
                    pass
            except trio.BrokenResourceError:
                pass  # reset by the server: just as closed


async def _frames(ws: WebSocketConnection) -> Any:
    from trio_websocket import ConnectionClosed

    while True:
        try:
            text = await ws.get_message()
        except ConnectionClosed:
            return
        yield json.loads(text)


ws_url = shell_socket  # the socket's URL (no token), the Origin a Shell page has, the token


def shell_at(port: int, token: str) -> ShellSocket:
    """The socket of a hostbridge on 127.0.0.1:`port` whose token is `token`."""
    return ShellSocket.at(f"127.0.0.1:{port}", token)


def open_shell_socket(
    socket: ShellSocket, **options: Any
) -> AbstractAsyncContextManager[WebSocketConnection]:
    """trio-websocket's `open_websocket_url` as the Shell connects: the token offered as a
    subprotocol (never in the URL), the Shell's Origin; `options` go to it as they are."""
    return open_websocket_url(
        socket.url, subprotocols=socket.subprotocols, extra_headers=socket.headers, **options
    )


async def connect_shell(nursery: trio.Nursery, shell_url: str) -> ShellClient:
    ws = await nursery.start(_open, ws_url(shell_url))
    shell = ShellClient(ws)
    nursery.start_soon(shell.pump)
    await shell.send({"type": "shell.ready"})
    return shell


async def _open(socket: ShellSocket, *, task_status: trio.TaskStatus[Any]) -> None:
    async with open_shell_socket(socket) as ws:
        task_status.started(ws)
        await trio.sleep_forever()


def tree_text(tree: list[dict[str, Any]]) -> str:
    """The visible text of a Markdown token tree."""
    out = []
    for node in tree:
        if "v" in node:
            out.append(str(node["v"]))
        out.append(tree_text(node.get("c") or []))
    return "".join(out)
