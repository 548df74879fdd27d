"""The drill's load: an Agent through the real AppServer, and a user at the real Shell socket.

Theory of operation: `LoadAgent.drive` does one operation every `1/rate` seconds, drawn from a
seeded mix — text messages for the chat, `drill.echo` (direct), `drill.work` (operation) and
`drill.session` (launch) to the drill's MiniApp, `task-dashboard.open` (launch) and
`task-dashboard.update` (operation) to the bundled one. Every post keeps its idempotency key
and is retried until the AppServer takes it, whatever is down; a bounded number are in flight,
so a stalled runtime slows the load instead of piling it up. `LoadAgent.read` long-polls
everything the runtime sends the Agent and keeps it, with its arrival time, and the app
sub-sessions it is told of (the questions of `_asking` may name them).

`ShellUser` is a person at the Shell: it types a numbered message, waits until the chat shows
it (the chat shows a message once the runtime has stored it), and types the next. If the
socket drops (the hostbridge was killed) it reconnects, and if its message does not show it
submits it again under the same client id, which the chat turns into the same message id, so
a resubmit is never a second message. Every few seconds it closes a drill or dashboard
instance (often with calls still running); at the end it closes them all. It also keeps the
interactions the Shell shows (`shell.interactions`), which `_asking.Answerer` answers.
"""

from __future__ import annotations

import json
import logging
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

import trio
from pydantic import BaseModel
from trio_websocket import ConnectionClosed, HandshakeError, wrap_client_stream

from lineup import wire
from lineup.ops.agent import AgentClient, AppServerError
from lineup.supervisor._runtime import shell_socket

from ._check import STALE, TERMINAL_TYPES

__all__ = ["LoadAgent", "ShellUser"]

log = logging.getLogger("lineup.drill")

CONVERSATION: Final = "conv-demo"
_IN_FLIGHT: Final = 32
_RETRY_S: Final = 0.2
_SHELL_WAIT_S: Final = 3.0
_STALE_TRIES: Final = 3  # a call refused for a stale revision is made again, up to this often
_STALE_WAIT_S: Final = 10.0  # for its refusal, and then for the newer revision
LAUNCHES: Final = ("drill.session", "task-dashboard.open")
MAX_OPEN: Final = 12


@dataclass
class Sent:
    kind: str  # "text" or the tool
    at: float
    posted_at: float | None = None


def _nested(depth: int) -> object:
    value: object = "deep"
    for _ in range(depth):
        value = [value]
    return value


# Envelopes the runtime must refuse, each with the code it must refuse it with.
_POISON: Final[tuple[tuple[str, dict[str, Any]], ...]] = (
    ("envelope_too_deep", {"type": wire.TEXT, "payload": {"markdown": "x", "n": _nested(200)}}),
    ("envelope_malformed", {"type": wire.TEXT, "payload": {"markdown": "x", "n": 2**60}}),
    ("envelope_malformed", {"type": wire.TEXT, "payload": {"text": "no markdown"}}),
    ("envelope_type_unknown", {"type": "lineup.v1.shell.exec", "payload": {}}),
)
POISON_VARIANTS: Final = len(_POISON)


@dataclass
class LoadAgent:
    url: str
    agent_id: str
    secret: str
    seed: int
    started: float = field(default_factory=time.monotonic)
    sent: dict[str, Sent] = field(default_factory=dict)  # call_id or message id -> what
    received: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    revision: str | None = None
    # Kept as pages arrive, so a check is O(1) however long the run: (the drill's own process
    # also runs the link proxy, which a scan of every message would slow down).
    unanswered: set[str] = field(default_factory=set)  # call ids with no terminal message yet
    # The Markdown of the texts the Agent received: the wire id of a user's message is the
    # runtime's own (issue 11), and each drill text is unique.
    texts_arrived: set[str] = field(default_factory=set)
    poisoned: dict[str, str] = field(default_factory=dict)  # message id -> the code expected
    sessions: dict[str, str] = field(default_factory=dict)  # app_session_id -> open | closed
    conversation: str = CONVERSATION
    _inventory: trio.Event = field(default_factory=trio.Event)
    _finals: dict[str, dict[str, Any]] = field(default_factory=dict)  # call id -> its first
    _news: trio.Event = field(default_factory=trio.Event)  # set by each page read
    _n: int = 0
    _tasks: list[str] = field(default_factory=list)
    _open: dict[str, set[str]] = field(default_factory=dict)  # launch tool -> open call ids

    def now(self) -> float:
        return time.monotonic() - self.started

    # ------------------------------------------------------------------ reading

    async def read(self, client: AgentClient) -> None:
        cursor = ""
        while True:
            try:
                page, cursor = await client.sync(cursor, timeout_ms=2000)
            except AppServerError:
                await trio.sleep(_RETRY_S)  # the AppServer is down: it comes back
                continue
            for message in page:
                self.received.append((self.now(), message))
                kind = message.get("type")
                if kind in TERMINAL_TYPES:
                    call_id = str(message["payload"].get("call_id"))
                    self.unanswered.discard(call_id)
                    self._finals.setdefault(call_id, message)
                    for calls in self._open.values():
                        calls.discard(call_id)
                elif kind == "lineup.v1.text":
                    self.texts_arrived.add(str((message.get("payload") or {}).get("markdown")))
                elif kind == "lineup.v1.client.inventory":
                    self.revision = str(message["payload"]["revision"])
                    self._inventory.set()
                elif kind in (wire.APP_SESSION_OPENED, wire.APP_SESSION_CLOSED):
                    session = str((message.get("payload") or {}).get("app_session_id"))
                    closed = kind == wire.APP_SESSION_CLOSED or self.sessions.get(session)
                    self.sessions[session] = "closed" if closed else "open"
            if page:
                self._news.set()
                self._news = trio.Event()

    async def poison(self, client: AgentClient, variant: int) -> None:
        """Post one envelope the runtime must refuse (retried until the AppServer has it)."""
        code, fields = _POISON[variant]
        message_id = f"poison-drill-{self.seed}-{len(self.poisoned)}"
        envelope = {
            "v": 1,
            "id": message_id,
            "conversation_id": CONVERSATION,
            "sender": {"kind": "agent", "id": self.agent_id},
            "timestamp": wire.utc_timestamp(),
            **fields,
        }
        self.poisoned[message_id] = code
        await self.post_until_taken(client, envelope, message_id)

    async def post_until_taken(
        self, client: AgentClient, envelope: dict[str, Any], key: str
    ) -> None:
        while True:
            try:
                await client.send(envelope, key)
                return
            except AppServerError as exc:
                if exc.status is not None and exc.status < 500:
                    raise  # our own mistake: the drill is wrong, not the runtime
                await trio.sleep(_RETRY_S)

    async def post_call(
        self, client: AgentClient, call_id: str, tool: str, payload: wire.ToolCallPayload
    ) -> None:
        """Post one tool call built elsewhere (an interaction), counted like the mix's."""
        envelope = wire.dump(
            wire.envelope(
                wire.TOOL_CALL,
                payload,
                conversation_id=CONVERSATION,
                sender_kind="agent",
                sender_id=self.agent_id,
                message_id=f"msg-{call_id}",
            )
        )
        self.sent[call_id] = Sent(tool, self.now())
        self.unanswered.add(call_id)
        await self.post_until_taken(client, envelope, f"msg-{call_id}")
        self.sent[call_id].posted_at = self.now()

    async def revision_other_than(self, revision: str) -> None:
        """Until the Agent has been told of an inventory revision other than `revision`."""
        while self.revision == revision:
            await self._news.wait()

    async def news(self) -> None:
        """Until the Agent's next page of messages."""
        await self._news.wait()

    def ended(self, call_id: str) -> dict[str, Any] | None:
        """The first terminal message of `call_id`, if it has arrived."""
        return self._finals.get(call_id)

    async def final(self, call_id: str) -> dict[str, Any]:
        """The first terminal message of `call_id`, once it has arrived."""
        while call_id not in self._finals:
            await self._news.wait()
        return self._finals[call_id]

    async def inventory_known(self) -> None:
        """Until the first inventory arrived (a call needs its revision)."""
        with trio.fail_after(60):
            await self._inventory.wait()

    def calls(self) -> list[str]:
        return [key for key, sent in self.sent.items() if sent.kind != "text"]

    # ------------------------------------------------------------------ writing

    async def drive(self, client: AgentClient, seconds: float, rate: float) -> None:
        """Post the mix for `seconds`; returns once every post was taken by the AppServer."""
        rng = random.Random(self.seed)
        await self.inventory_known()
        limit = trio.CapacityLimiter(_IN_FLIGHT)
        async with trio.open_nursery() as nursery:
            deadline = trio.current_time() + seconds
            tick = trio.current_time()
            while trio.current_time() < deadline:
                await limit.acquire_on_behalf_of(self._n)
                operation = self._operation(rng)
                nursery.start_soon(self._post, client, operation, limit, self._n, deadline)
                self._n += 1
                tick += 1 / rate
                await trio.sleep_until(tick)

    def _operation(self, rng: random.Random) -> tuple[str, dict[str, Any]]:
        n, draw = self._n, rng.random()
        # Like an Agent, it keeps a few apps open, not hundreds: a launch is made only while
        # fewer than MAX_OPEN of that tool's calls are unanswered (closes answer them).
        sessions, dashboards = (len(self._open.get(t, ())) for t in LAUNCHES)
        if draw < 0.15:
            return "text", {"markdown": f"drill agent message {n}"}
        if draw < 0.60 or (draw < 0.87 and sessions >= MAX_OPEN):
            return "drill.echo", {"n": n}
        if draw < 0.80:
            return "drill.work", {"n": n, "ms": rng.randrange(0, 800)}
        if draw < 0.87:
            return "drill.session", {"n": n}
        if (draw < 0.92 or not self._tasks) and dashboards < MAX_OPEN:
            task_id = f"t{n}"
            self._tasks = [*self._tasks[-3:], task_id]
            return "task-dashboard.open", {"task_id": task_id, "title": f"Drill task {n}"}
        task_id = self._tasks[rng.randrange(len(self._tasks))]
        return "task-dashboard.update", {"task_id": task_id, "progress": rng.randrange(0, 101)}

    async def _post(
        self,
        client: AgentClient,
        operation: tuple[str, dict[str, Any]],
        limit: trio.CapacityLimiter,
        borrower: int,
        deadline: float,
    ) -> None:
        """Post one operation of the mix; a tool call refused for an inventory revision that
        changed meanwhile (an install, a dev save) is called again under the newer one, as an
        Agent does, while the load lasts."""
        kind, body = operation
        try:
            revision = self.revision or ""
            key = await self._post_once(client, kind, body, f"{self.seed}-{borrower}", revision)
        finally:
            limit.release_on_behalf_of(borrower)
        for attempt in range(1, _STALE_TRIES):
            if kind == "text":
                return
            final: dict[str, Any] = {}
            with trio.move_on_at(min(deadline, trio.current_time() + _STALE_WAIT_S)):
                final = await self.final(key)
            if (final.get("payload") or {}).get("code") != STALE:
                return
            with trio.move_on_at(min(deadline, trio.current_time() + _STALE_WAIT_S)):
                await self.revision_other_than(revision)
            if trio.current_time() >= deadline:
                return
            revision = self.revision or ""
            ids = f"{self.seed}-{borrower}-r{attempt}"
            key = await self._post_once(client, kind, body, ids, revision)

    async def _post_once(
        self, client: AgentClient, kind: str, body: dict[str, Any], ids: str, revision: str
    ) -> str:
        """Post it under ids of its own (`msg-drill-IDS`, `call-drill-IDS`); its key."""
        message_id = f"msg-drill-{ids}"
        payload: BaseModel
        if kind == "text":
            payload = wire.TextPayload.model_validate(body)
            envelope_type = wire.TEXT
            key = message_id
        else:
            key = f"call-drill-{ids}"
            payload = wire.ToolCallPayload(
                call_id=key, tool=kind, inventory_revision=revision, input=body
            )
            envelope_type = wire.TOOL_CALL
        envelope = wire.dump(
            wire.envelope(
                envelope_type,
                payload,
                conversation_id=CONVERSATION,
                sender_kind="agent",
                sender_id=self.agent_id,
                message_id=message_id,
            )
        )
        self.sent[key] = Sent(kind, self.now())
        if kind != "text":
            self.unanswered.add(key)
        if kind in LAUNCHES:
            self._open.setdefault(kind, set()).add(key)
        await self.post_until_taken(client, envelope, message_id)
        self.sent[key].posted_at = self.now()
        return key


@dataclass
class ShellUser:
    shell_url: str
    seed: int
    messages: list[tuple[str, str]] = field(default_factory=list)  # (client id, text), in order
    reconnects: int = 0
    closes: int = 0
    resubmits: int = 0
    to_shown_s: list[float] = field(default_factory=list)  # typed -> in the timeline
    started: float = field(default_factory=time.monotonic)
    _items: dict[str, str] = field(default_factory=dict)  # message id -> state
    _texts: dict[str, str] = field(default_factory=dict)  # client id -> text
    _instances: list[dict[str, Any]] = field(default_factory=list)
    interactions: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> its view
    _changed: trio.Event = field(default_factory=trio.Event)
    # Called with every frame the Shell gets (an exercise's view of the shared socket).
    listeners: list[Callable[[dict[str, Any]], None]] = field(default_factory=list)
    _ws: Any = None

    # ------------------------------------------------------------------ the socket

    async def connect_forever(self) -> None:
        """Keep one Shell connection open; reconnect whenever it drops."""
        first = True
        while True:
            try:
                await self._connection(first)
            except* (OSError, ConnectionClosed, HandshakeError, trio.BrokenResourceError):
                pass  # the hostbridge died or closed on us
            first = False
            self._ws = None
            self._wake()
            await trio.sleep(_RETRY_S)  # the hostbridge is coming back

    async def _connection(self, first: bool) -> None:
        # The stream is ours, not trio-websocket's, so it is closed however the handshake ends
        # (a hostbridge killed or stopped mid-handshake).
        socket = shell_socket(self.shell_url)
        parts = urlsplit(socket.url)
        stream = await trio.open_tcp_stream(parts.hostname or "127.0.0.1", parts.port or 80)
        async with stream, trio.open_nursery() as nursery:
            try:
                with trio.fail_after(_SHELL_WAIT_S):
                    ws = await wrap_client_stream(
                        nursery,
                        stream,
                        parts.netloc,
                        parts.path,
                        subprotocols=socket.subprotocols,  # the token, as the Shell offers it
                        extra_headers=socket.headers,
                    )
                self.reconnects += not first
                self._ws = ws
                await ws.send_message(json.dumps({"type": "shell.ready"}))
                self._wake()
                while True:
                    self._take(json.loads(await ws.get_message()))
            except trio.TooSlowError:
                pass  # a stopped hostbridge: try again
            finally:
                nursery.cancel_scope.cancel()

    def _take(self, frame: dict[str, Any]) -> None:
        for listener in self.listeners:
            listener(frame)
        if frame.get("type") == "shell.items" and frame.get("instance_id") == "chat":
            for item in frame.get("items") or []:  # the timeline's new or changed messages
                self._items[str(item.get("id"))] = str(item.get("state"))
        elif frame.get("type") == "shell.apps":
            self._instances = list(frame.get("instances") or [])
        elif frame.get("type") == "shell.interactions":
            for view in frame.get("interactions") or []:  # upserts, the whole list on connect
                self.interactions[str(view.get("interaction_id"))] = view
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def changed(self) -> None:
        """Until the next frame arrives or the socket drops."""
        await self._changed.wait()

    async def send(self, frame: dict[str, Any]) -> bool:
        return await self._send(frame)

    async def _send(self, frame: dict[str, Any]) -> bool:
        if self._ws is None:
            return False
        try:
            await self._ws.send_message(json.dumps(frame))
        except (ConnectionClosed, trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        return True

    # ------------------------------------------------------------------ typing

    async def type_messages(self, seconds: float, rate: float) -> None:
        """Type at most `rate` messages a second, each once the previous one shows in the
        timeline (the chat shows a message once the runtime has stored it), as a person does."""
        deadline = time.monotonic() + seconds
        n = 0
        while time.monotonic() < deadline:
            client_id = f"drill{self.seed}-{n:06d}-{uuid.uuid4().hex[:8]}"
            self.messages.append((client_id, f"drill user message {n}"))
            self._texts[client_id] = f"drill user message {n}"
            typed = time.monotonic()
            await self._until(client_id, ("pending", "sent"))
            self.to_shown_s.append(time.monotonic() - typed)
            n += 1
            await trio.sleep(1 / rate)

    async def wait_all_sent(self) -> None:
        for client_id, _ in self.messages:
            await self._until(client_id, ("sent",))

    async def _until(self, client_id: str, states: tuple[str, ...]) -> None:
        """Submit until the message shows in one of `states`. A resubmit (after a drop, or
        when nothing showed for a while) carries the same client id: the same message."""
        text = self._texts[client_id]
        message_id = f"user:user-{client_id}"  # its item at the Shell: the chat's user namespace
        event = {"kind": "composer.submit", "text": text, "client_id": client_id}
        frame = {"type": "ui.event", "app_scope": "chat", "instance_id": "chat", "event": event}
        attempts = 0
        while (state := self._items.get(message_id)) not in states:
            if state == "failed":
                await self._send(
                    {**frame, "event": {"kind": "message.retry", "message_id": message_id}}
                )
            elif state is None or attempts == 0:
                self.resubmits += attempts > 0
                await self._send(frame)
            attempts += 1
            with trio.move_on_after(_SHELL_WAIT_S):
                while self._items.get(message_id) in (state, None) and self._ws is not None:
                    await self._changed.wait()
            if self._ws is None:
                while self._ws is None:
                    await self._changed.wait()

    def user_ids(self) -> list[str]:
        """The chat's ids of the typed messages (their client ids in the store)."""
        return [f"user-{client_id}" for client_id, _ in self.messages]

    def user_texts(self) -> list[str]:
        return [text for _, text in self.messages]

    # ------------------------------------------------------------------ closing

    def live_instances(self) -> list[str]:
        return [
            str(i["instance_id"])
            for i in self._instances
            if i.get("app_scope") in ("drill", "task-dashboard")
        ]

    async def close_now_and_then(self, seconds: float, every: float) -> None:
        rng = random.Random(self.seed + 1)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            await trio.sleep(rng.uniform(0.5, 1.5) * every)
            live = self.live_instances()
            if live and await self.close(live[rng.randrange(len(live))]):
                self.closes += 1

    async def close(self, instance_id: str) -> bool:
        return await self._send(
            {"type": "ui.intent", "intent": "close", "instance_id": instance_id}
        )

    async def close_all(self) -> None:
        """Close every drill and dashboard instance: their launch calls end (app_closed)."""
        while live := self.live_instances():
            for instance_id in live:
                await self.close(instance_id)
            with trio.move_on_after(_SHELL_WAIT_S):
                while self.live_instances() == live:
                    await self._changed.wait()
