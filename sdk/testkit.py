"""Unit-test a MiniApp without the runtime: an in-memory fake of the runtime side of its channel.

    runtime = await testkit.start(app)             # app.start(AppContext on the fake)
    record = await testkit.call_tool(app, "task-dashboard.open", {"task_id": "t1", ...})
    assert record.status == "completed" and record.result == {...}
    assert runtime.ui.last == {...}                # the view the app rendered last

`FakeRuntime` answers the SDK's requests the way the router and focus do (same receipts, same
refusal codes for the cases it models), records every render, delivery acknowledgement, sent
message, lifecycle request and tool outcome, keeps each instance's session data with the store's
compare-and-set revisions, and refuses a second terminal result for a call with
`call_already_final`, as the runtime does. `refuse(...)` makes the next request of a type fail
with a code, to test an app's failure paths. Nothing here does I/O or needs a trio run loop
beyond the awaits of the app's own code.

The runtime tells a running app of session data writes through its event queue, which the app's
host drains between hooks; here `FakeRuntime.settle()` does that. `start` and `call_tool` settle
once the app's code returned; a test that drives a hook directly settles after it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import json
import time
import unicodedata
import uuid
import weakref
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar

from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.facts.scopes import CHAT

from . import interactions as std
from . import protocol as p
from ._app import AppContext, MiniApp
from .capabilities import CATALOG, parse_input
from .manifest import SURFACE_KIND, SURFACE_VERSIONS
from .schema import validate
from .tools import AppInfo, ToolSpec, dispatch_tool, tools_of

__all__ = [
    "CallRecord",
    "FakeCapabilities",
    "FakeConversation",
    "FakeInbox",
    "FakeInteractions",
    "FakeLifecycle",
    "FakeRegistry",
    "FakeRuntime",
    "FakeSessionData",
    "FakeSurface",
    "FakeSurfaces",
    "FakeUi",
    "call_tool",
    "start",
]

M = TypeVar("M", bound=Message)
MAX_VIEW_KEYS: Final = 64  # as focus enforces
HISTORY_REPLY_BYTES: Final = 512 * 1024  # a history page's budget, as the store's
MAX_SESSION_DATA_BYTES: Final = 256 * 1024  # compact UTF-8 JSON, as the store enforces
MAX_JSON_DEPTH: Final = 32  # nested objects and arrays, as the store enforces
MAX_SETTLE_EVENTS: Final = 10_000  # an app that answers every update with a write never settles
DEFAULT_INSTANCE: Final = "instance-1"
REGISTRY_APP: Final = "app-registry"  # the one app `focus.sdk.registry.list` answers

Action = Literal["foreground", "background", "close"]

_RUNTIMES: weakref.WeakKeyDictionary[MiniApp, FakeRuntime] = weakref.WeakKeyDictionary()


@dataclass
class CallRecord:
    """What happened to one tool call, updated as it happens (a later `complete` shows here)."""

    call_id: str
    tool: str
    instance_id: str
    progress: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] | None = None
    error_code: str | None = None
    cancelled_reason: str | None = None
    error_message: str = ""
    output_schema: dict[str, Any] | None = None

    @property
    def status(self) -> Literal["running", "completed", "failed", "cancelled"]:
        if self.result is not None:
            return "completed"
        if self.cancelled_reason is not None:
            return "cancelled"
        return "failed" if self.error_code is not None else "running"

    @property
    def final(self) -> bool:
        return self.status != "running"


@dataclass
class FakeInbox:
    """The app's inbox: `put` a delivery, then see what the app acknowledged."""

    pending: dict[str, p.Delivery] = field(default_factory=dict)
    acknowledged: list[str] = field(default_factory=list)
    _seq: itertools.count[int] = field(
        default_factory=lambda: itertools.count(1), init=False, repr=False
    )

    def put(
        self,
        envelope: dict[str, Any],
        delivery_id: str | None = None,
        *,
        instance_id: str | None = None,
    ) -> p.Delivery:
        """A delivery for `instance_id` (None: the app's conversation-level inbox)."""
        delivery = p.Delivery(
            delivery_id=delivery_id or str(uuid.uuid4()),
            seq=next(self._seq),
            envelope=envelope,
            instance_id=instance_id,
        )
        self.pending[delivery.delivery_id] = delivery
        return delivery

    def _list(self, msg: p.InboxListRequest) -> p.InboxListReply:
        rows = sorted(
            (
                d
                for d in self.pending.values()
                if d.seq > msg.after_seq and d.instance_id == msg.instance_id
            ),
            key=lambda d: d.seq,
        )
        return p.InboxListReply(deliveries=tuple(rows[: msg.limit]))

    def _ack(self, msg: p.InboxAckRequest) -> p.CommandReceipt:
        held = self.pending.get(msg.delivery_id)
        changed = held is not None and held.instance_id == msg.instance_id
        if changed:
            del self.pending[msg.delivery_id]
            self.acknowledged.append(msg.delivery_id)
        return p.CommandReceipt(id=msg.delivery_id, changed=changed)

    def _ack_many(self, msg: p.InboxAckManyRequest) -> p.InboxAckManyReply:
        acked = [
            delivery_id
            for delivery_id in msg.delivery_ids
            if self._ack(
                p.InboxAckRequest(delivery_id=delivery_id, instance_id=msg.instance_id)
            ).changed
        ]
        return p.InboxAckManyReply(acked=tuple(acked))


@dataclass
class FakeConversation:
    """The app's conversation: `items` is its history; `sent` what the app sent, in order."""

    items: dict[str, p.ConversationItem] = field(default_factory=dict)
    sent: list[str] = field(default_factory=list)
    retried: list[str] = field(default_factory=list)
    _seq: itertools.count[int] = field(
        default_factory=lambda: itertools.count(1), init=False, repr=False
    )

    def add(
        self,
        markdown: str,
        *,
        author: Literal["agent", "user"] = "agent",
        state: Literal["received", "pending", "sent", "failed"] = "received",
        message_id: str | None = None,
        app_session_id: str | None = None,
    ) -> p.ConversationItem:
        item = p.ConversationItem(
            message_id=message_id or str(uuid.uuid4()),
            seq=next(self._seq),
            author=author,
            state=state,
            markdown=markdown,
            at=0.0,
            app_session_id=app_session_id,
        )
        self.items[item.message_id] = item
        return item

    def _send(self, msg: p.ConversationSendTextRequest) -> p.CommandReceipt:
        existing = self.items.get(msg.message_id)
        if existing is not None:  # idempotent by message_id, as the store is
            return p.CommandReceipt(id=msg.message_id, seq=existing.seq, changed=False)
        item = self.add(msg.markdown, author="user", state="pending", message_id=msg.message_id)
        self.sent.append(msg.message_id)
        return p.CommandReceipt(id=msg.message_id, seq=item.seq)

    def _retry(self, msg: p.ConversationRetryRequest) -> p.CommandReceipt:
        item = self.items.get(msg.message_id)
        if item is None or item.author != "user":
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, msg.message_id)
        self.retried.append(msg.message_id)
        changed = item.state == "failed"
        if changed:
            self.items[item.message_id] = item.model_copy(update={"state": "pending"})
        return p.CommandReceipt(id=msg.message_id, changed=changed)

    def _history(self, msg: p.ConversationHistoryRequest) -> p.ConversationHistoryReply:
        rows = sorted(
            (i for i in self.items.values() if i.seq > msg.after_seq), key=lambda i: i.seq
        )
        # As the runtime does: a page ends where its text would pass the reply budget.
        page: list[p.ConversationItem] = []
        used = 0
        for row in rows[: msg.limit]:
            used += len(row.markdown.encode())
            if page and used > HISTORY_REPLY_BYTES:
                break
            page.append(row)
        return p.ConversationHistoryReply(items=tuple(page))


@dataclass
class FakeUi:
    """Every view the app rendered, in order, as `(instance_id, view)`, and each instance's
    items as focus keeps them (`items[instance_id][item_id]`); `puts` counts item requests."""

    renders: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    items: dict[str, dict[str, p.ViewItem]] = field(default_factory=dict)
    puts: int = 0

    @property
    def last(self) -> dict[str, Any] | None:
        """The last view, as the Shell shows it: with the instance's items, in order, under
        `items` (each its fields and `id`) when it has any."""
        if not self.renders:
            return None
        instance_id, view = self.renders[-1]
        items = self.ordered(instance_id)
        if not items:
            return view
        return {**view, "items": [{"id": i.id, **i.fields} for i in items]}

    def ordered(self, instance_id: str) -> list[p.ViewItem]:
        """The instance's items in the order the Shell shows them."""
        return sorted(self.items.get(instance_id, {}).values(), key=lambda i: (i.order, i.id))


@dataclass
class FakeLifecycle:
    """Every focus change the app asked for and got, in order, as `(instance_id, action)`.
    A `close` ends the instance: later views and lifecycle requests for it are refused."""

    requests: list[tuple[str, Action]] = field(default_factory=list)


@dataclass
class FakeSessionData:
    """Each instance's session data as the store keeps it: compact JSON text and a revision
    (never written: no data, revision 0). `put` writes as another writer would (a Surface);
    `pending` holds the updates the app has not been told of yet (see `FakeRuntime.settle`)."""

    documents: dict[str, tuple[str, int]] = field(default_factory=dict)
    subscribed: set[str] = field(default_factory=set)
    pending: list[p.SessionDataEvent] = field(default_factory=list)

    def get(self, instance_id: str) -> tuple[dict[str, Any] | None, int]:
        """`(data, revision)` now; `data` is a copy."""
        text, revision = self.documents.get(instance_id, (None, 0))
        return (json.loads(text) if text is not None else None), revision

    def put(self, instance_id: str, data: dict[str, Any]) -> int:
        """Replace the value at its current revision; returns the new revision."""
        receipt = self._replace(
            p.SessionDataReplaceRequest(
                instance_id=instance_id, data=data, expected_revision=self.get(instance_id)[1]
            )
        )
        assert receipt.seq is not None
        return receipt.seq

    def _snapshot(self, instance_id: str) -> p.SessionDataSnapshot:
        data, revision = self.get(instance_id)
        return p.SessionDataSnapshot(instance_id=instance_id, data=data, revision=revision)

    def _subscribe(self, msg: p.SessionDataSubscribeRequest) -> p.SessionDataSnapshot:
        self.subscribed.add(msg.instance_id)
        return self._snapshot(msg.instance_id)

    def _replace(self, msg: p.SessionDataReplaceRequest) -> p.CommandReceipt:
        text = _bounded_json(msg.data)
        stored, revision = self.documents.get(msg.instance_id, (None, 0))
        if revision != msg.expected_revision:
            # A retry of a write that was applied finds its own data one revision on.
            if revision == msg.expected_revision + 1 and stored == text:
                return p.CommandReceipt(id=msg.instance_id, seq=revision, changed=False)
            raise LineUpError(ErrorCode.STALE_REVISION, msg.instance_id)
        self.documents[msg.instance_id] = (text, revision + 1)
        if msg.instance_id in self.subscribed:
            self.pending.append(
                p.SessionDataEvent(
                    instance_id=msg.instance_id, data=json.loads(text), revision=revision + 1
                )
            )
        return p.CommandReceipt(id=msg.instance_id, seq=revision + 1)


@dataclass
class FakeInteractions:
    """The interactions the app asked, by id (`records`), in the order asked (`asked`). A test
    plays the user with `answer` (the answer as the Shell sends it, checked as the runtime
    checks it) or ends one with `end`; the app hears of it at the next `settle`, as the router
    tells only the owner app."""

    records: dict[str, p.InteractionRecord] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)
    untold: list[p.InteractionRecord] = field(default_factory=list)

    @property
    def last(self) -> p.InteractionRecord | None:
        return self.records[self.asked[-1]] if self.asked else None

    def answer(self, interaction_id: str, answer: dict[str, Any]) -> p.InteractionRecord:
        """The user answers: `answer_invalid` as the runtime refuses a bad one; a second
        answer changes nothing (the first wins) and returns the record as it is."""
        record = self.records[interaction_id]
        if not record.is_open:
            return record
        if std.is_cancel(answer):
            return self.end(interaction_id, "cancelled", "cancelled_by_user")
        result = std.result_of(std.REQUEST.validate_python(record.request), answer)
        return self._moved(record.model_copy(update={"state": "submitted", "result": result}))

    def end(self, interaction_id: str, state: str, code: str) -> p.InteractionRecord:
        """End an open interaction (`cancelled`, `expired`, `failed`) with `code`."""
        record = self.records[interaction_id]
        if not record.is_open:
            return record
        return self._moved(record.model_copy(update={"state": state, "terminal_code": code}))

    def _moved(self, record: p.InteractionRecord) -> p.InteractionRecord:
        record = p.InteractionRecord.model_validate(record.model_dump())
        self.records[record.interaction_id] = record
        self.untold.append(record)
        return record

    def _ask(self, msg: p.InteractionAskRequest, app_scope: str) -> p.InteractionReceipt:
        interaction_id = f"ix:{app_scope}:{msg.instance_id}:{msg.request_id}"
        if interaction_id in self.records:
            return p.InteractionReceipt(interaction=self.records[interaction_id], changed=False)
        kind = msg.request.get("kind")
        tool_input = {k: v for k, v in msg.request.items() if k != "kind"}
        if msg.expires_in_ms is not None and kind != "notice":
            tool_input["expires_in_ms"] = msg.expires_in_ms
        request, expires_in_ms = std.request_of(f"interaction.{kind}", tool_input)
        now = time.time()
        record = p.InteractionRecord(
            interaction_id=interaction_id,
            kind=request.kind,
            state="presented",
            request=request.model_dump(mode="json"),
            instance_id=msg.instance_id,
            parent_call_id=msg.parent_call_id,
            presentation=msg.presentation,
            created_at=now,
            expires_at=now + expires_in_ms / 1000 if expires_in_ms is not None else None,
        )
        self.records[interaction_id] = record
        self.asked.append(interaction_id)
        if record.kind == "notice":  # handed on: answered at once, as the runtime does
            record = self._moved(
                record.model_copy(update={"state": "submitted", "result": {"acknowledged": False}})
            )
        return p.InteractionReceipt(interaction=record)

    def _own(self, interaction_id: str) -> p.InteractionRecord:
        record = self.records.get(interaction_id)
        if record is None:
            raise LineUpError(ErrorCode.INTERACTION_NOT_FOUND, interaction_id)
        return record


@dataclass
class FakeSurface:
    """One instance's Surface as focus keeps it; `view` is what the Shell would mount."""

    instance_id: str
    entrypoint: str
    surface_version: int
    events: tuple[str, ...]
    state: dict[str, Any]
    state_revision: int = 0
    tool_input: dict[str, Any] | None = None
    tool_result: dict[str, Any] | None = None
    open: bool = True

    @property
    def surface_id(self) -> str:
        return SURFACE_PREFIX + self.instance_id

    @property
    def view(self) -> dict[str, Any]:
        view: dict[str, Any] = {
            "kind": "lineup.surface",
            "surface_id": self.surface_id,
            "entrypoint": self.entrypoint,
            "surface_version": self.surface_version,
            "state": self.state,
            "state_revision": self.state_revision,
        }
        if self.tool_input is not None:
            view["tool_input"] = self.tool_input
        if self.tool_result is not None:
            view["tool_result"] = self.tool_result
        return view

    def reply(self, *, changed: bool = True) -> p.SurfaceReply:
        return p.SurfaceReply(
            surface_id=self.surface_id,
            instance_id=self.instance_id,
            entrypoint=self.entrypoint,
            state_revision=self.state_revision,
            open=self.open,
            changed=changed,
        )


@dataclass
class FakeSurfaces:
    """The app's Surfaces by instance (open, or closed until the instance ends), as focus
    keeps them: opened from the app's `surface` entrypoints (`app_info.entrypoints`), patched
    by RFC 7396, closed once. `untold` holds the ends the app hears of at the next `settle`;
    a test plays the Surface with `FakeRuntime.send_surface_event` and, for its session data
    writes, `FakeRuntime.session_data.put`."""

    by_instance: dict[str, FakeSurface] = field(default_factory=dict)
    updates: list[p.SurfaceUpdateRequest] = field(default_factory=list)
    untold: list[p.SurfaceClosedEvent] = field(default_factory=list)

    def of(self, instance_id: str) -> FakeSurface | None:
        """The instance's open Surface, if any."""
        surface = self.by_instance.get(instance_id)
        return surface if surface is not None and surface.open else None

    def _open(self, msg: p.SurfaceOpenRequest, entrypoints: tuple[Any, ...]) -> p.SurfaceReply:
        held = self.by_instance.get(msg.instance_id)
        if held is not None and held.open:
            return held.reply(changed=False)
        chosen = next(
            (
                e
                for e in entrypoints
                if e.kind == SURFACE_KIND and (msg.entrypoint is None or e.id == msg.entrypoint)
            ),
            None,
        )
        if chosen is None or chosen.surface_version not in SURFACE_VERSIONS:
            raise LineUpError(ErrorCode.SURFACE_UNAVAILABLE, msg.entrypoint or "")
        _bounded_surface(msg.state)
        if msg.tool_input is not None:
            _bounded_surface(msg.tool_input)
        surface = self.by_instance[msg.instance_id] = FakeSurface(
            instance_id=msg.instance_id,
            entrypoint=chosen.id,
            surface_version=chosen.surface_version,
            events=tuple(chosen.events),
            state=msg.state,
            state_revision=0 if held is None else held.state_revision + 1,
            tool_input=msg.tool_input,
        )
        return surface.reply()

    def _owned(self, surface_id: str) -> FakeSurface:
        surface = self.by_instance.get(surface_id.removeprefix(SURFACE_PREFIX))
        if surface is None or not surface_id.startswith(SURFACE_PREFIX):
            raise LineUpError(ErrorCode.SURFACE_NOT_FOUND, surface_id)
        return surface

    def _update(self, msg: p.SurfaceUpdateRequest) -> p.SurfaceReply:
        surface = self._owned(msg.surface_id)
        if not surface.open:
            raise LineUpError(ErrorCode.SURFACE_NOT_FOUND, msg.surface_id)
        state = p.merge_patch(surface.state, msg.patch)
        _bounded_surface(state)
        if msg.tool_result is not None:
            _bounded_surface(msg.tool_result)
            surface.tool_result = msg.tool_result
        surface.state = state
        surface.state_revision += 1
        self.updates.append(msg)
        return surface.reply()

    def _close(self, msg: p.SurfaceCloseRequest) -> p.SurfaceReply:
        surface = self._owned(msg.surface_id)
        if not surface.open:
            return surface.reply(changed=False)
        surface.open = False
        self.untold.append(
            p.SurfaceClosedEvent(
                instance_id=surface.instance_id, surface_id=surface.surface_id, reason="closed"
            )
        )
        return surface.reply()

    def _ended(self, instance_id: str) -> None:
        surface = self.by_instance.pop(instance_id, None)
        if surface is not None and surface.open:
            self.untold.append(
                p.SurfaceClosedEvent(
                    instance_id=instance_id, surface_id=surface.surface_id, reason="instance_ended"
                )
            )


@dataclass
class FakeRegistry:
    """The runtime's registry as `focus.sdk.registry.list` answers it: set `apps`,
    `default_app`, `operations` and `catalog` (the local catalog's entries) as the test's
    runtime stands; `lists` counts the reads.
    Answered to the App Registry (`app-registry`) alone, as the ACL does: any other app is
    refused `permission_denied`."""

    apps: list[p.RegistryAppInfo] = field(default_factory=list)
    default_app: str = CHAT
    operations: list[p.AppOperationInfo] = field(default_factory=list)
    catalog: list[p.CatalogEntry] = field(default_factory=list)
    lists: int = 0

    def _list(self, app_scope: str) -> p.RegistryListReply:
        if app_scope != REGISTRY_APP:
            raise LineUpError(ErrorCode.PERMISSION_DENIED, p.RegistryListRequest.TYPE)
        self.lists += 1
        return p.RegistryListReply(
            apps=tuple(self.apps),
            default_app=self.default_app,
            operations=tuple(self.operations),
            catalog=tuple(self.catalog),
        )


class FakeRuntime:
    """The runtime side of one MiniApp's channel, in memory: a `RuntimeChannel` for the
    `AppContext` services and a `ToolSink` for tool calls."""

    def __init__(self, app_scope: str = "test-app", instance_id: str = DEFAULT_INSTANCE) -> None:
        self.app_scope = app_scope
        self.instance_id = instance_id
        self.instances: set[str] = {instance_id}
        self.inbox = FakeInbox()
        self.conversation = FakeConversation()
        self.ui = FakeUi()
        self.lifecycle = FakeLifecycle()
        self.session_data = FakeSessionData()
        self.interactions = FakeInteractions()
        self.surfaces = FakeSurfaces()
        self.conversation_id: str | None = "conv-test"
        self.artifacts = FakeArtifacts()
        self.registry = FakeRegistry()
        self.capabilities = FakeCapabilities()
        # Each instance's state as focus reports it (`app.refresh`): `foreground` unless set,
        # e.g. `states[instance] = "background"` while the user looks at another app.
        self.states: dict[str, str] = {}
        self.app: MiniApp | None = None  # the app `start` started, told of its interactions
        self.closed: set[str] = set()
        self.calls: dict[str, CallRecord] = {}
        self._refusals: dict[type[Message], list[ErrorCode]] = {}
        self._context: AppContext | None = None

    def context(self) -> AppContext:
        """An `AppContext` whose services talk to this fake. The newest one is the running app's
        (an older one is a process that was replaced): `settle` tells it of updates."""
        self._context = AppContext(self, self.app_scope, self.instance_id)
        return self._context

    async def settle(self) -> None:
        """Tell the app what the runtime has told its process by now: its interactions' answers
        and ends (`on_interaction_updated`), and the session data updates of the instances it
        subscribed to, one at a time in revision order, through its context's `SessionData`
        (which calls the app's handlers). Raises `RuntimeError` if the
        app's handlers keep writing without end."""
        for _ in range(MAX_SETTLE_EVENTS):
            if self.surfaces.untold:
                closed = self.surfaces.untold.pop(0)
                if self.app is not None:
                    await self.app.on_surface_closed(closed)
                continue
            if self.interactions.untold:
                record = self.interactions.untold.pop(0)
                if self._context is not None:
                    self._context.ui._updated(record)
                if self.app is not None:
                    await self.app.on_interaction_updated(record)
                continue
            if not self.session_data.pending:
                return
            event = self.session_data.pending.pop(0)
            if self._context is not None:
                await self._context.session_data._updated(event)
        raise RuntimeError("session data updates never settled: a handler writes on every update")

    async def send_surface_event(
        self, name: str, data: dict[str, Any] | None = None, *, instance_id: str | None = None
    ) -> None:
        """The instance's open Surface sends the app an event (`on_surface_event`), checked as
        focus checks it: `surface_not_found` (none open), `bridge_method_unknown` (a name its
        entrypoint does not declare), `bridge_message_too_large`. Settles afterwards."""
        surface = self.surfaces.of(instance_id or self.instance_id)
        if surface is None:
            raise LineUpError(ErrorCode.SURFACE_NOT_FOUND, instance_id or self.instance_id)
        if name not in surface.events:
            raise LineUpError(ErrorCode.BRIDGE_METHOD_UNKNOWN, name)
        data = data or {}
        if len(_compact(data).encode()) > p.MAX_SURFACE_EVENT_BYTES:
            raise LineUpError(ErrorCode.BRIDGE_MESSAGE_TOO_LARGE, name)
        event = p.SurfaceEvent(
            instance_id=surface.instance_id, surface_id=surface.surface_id, name=name, data=data
        )
        if self.app is not None:
            # As the bus carries it: JSON, never the test's own objects.
            await self.app.on_surface_event(
                p.SurfaceEvent.model_validate_json(event.model_dump_json())
            )
        await self.settle()

    def refuse(self, request: type[Message], code: ErrorCode, times: int = 1) -> None:
        """Refuse the next `times` requests of this type with `code`."""
        self._refusals.setdefault(request, []).extend([code] * times)

    # ------------------------------------------------------------------ RuntimeChannel

    async def call(self, peer: str, request: Message, expect: type[M]) -> M:
        refusals = self._refusals.get(type(request))
        if refusals:
            raise LineUpError(refusals.pop(0), request.TYPE)
        # As the bus carries it: JSON (NaN arrives as null), never the app's own objects.
        request = type(request).model_validate_json(request.model_dump_json())
        reply = self._answer(request)
        if not isinstance(reply, expect):
            raise LineUpError(ErrorCode.FRAME_MALFORMED, f"{request.TYPE} does not answer {expect}")
        return reply

    def _answer(self, request: Message) -> Message:
        artifact = self.artifacts.answer(request, self.app_scope, self.instances)
        if artifact is not None:
            return artifact
        if isinstance(request, p.CapabilityRequest):
            return self.capabilities._answer(request, self.instances)
        if isinstance(request, p.InboxListRequest):
            return self.inbox._list(request)
        if isinstance(request, p.InboxAckRequest):
            return self.inbox._ack(request)
        if isinstance(request, p.InboxAckManyRequest):
            return self.inbox._ack_many(request)
        if isinstance(request, p.ConversationSendTextRequest):
            return self.conversation._send(request)
        if isinstance(request, p.ConversationRetryRequest):
            return self.conversation._retry(request)
        if isinstance(request, p.ConversationHistoryRequest):
            return self.conversation._history(request)
        if isinstance(request, p.ViewUpdateRequest | p.ViewItemsPutRequest):
            return self._view(request)
        if isinstance(request, p.LifecycleRequest):
            return self._lifecycle(request)
        if isinstance(request, p.SessionDataGetRequest):
            self._owned(request.instance_id)
            return self.session_data._snapshot(request.instance_id)
        if isinstance(request, p.SessionDataReplaceRequest):
            self._owned(request.instance_id)
            return self.session_data._replace(request)
        if isinstance(request, p.SessionDataSubscribeRequest):
            self._owned(request.instance_id)
            return self.session_data._subscribe(request)
        if isinstance(request, p.InteractionAskRequest):
            if request.instance_id not in self.instances:
                raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, request.instance_id)
            if request.parent_call_id is not None:
                parent = self.calls.get(request.parent_call_id)
                if parent is None or parent.instance_id != request.instance_id:
                    raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, request.parent_call_id)
                if parent.final:
                    raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, request.parent_call_id)
            return self.interactions._ask(request, self.app_scope)
        if isinstance(request, p.InteractionGetRequest):
            return p.InteractionReceipt(
                interaction=self.interactions._own(request.interaction_id), changed=False
            )
        if isinstance(request, p.InteractionCancelRequest):
            before = self.interactions._own(request.interaction_id)
            after = self.interactions.end(request.interaction_id, "cancelled", request.reason)
            return p.InteractionReceipt(interaction=after, changed=after is not before)
        if isinstance(
            request, p.SurfaceOpenRequest | p.SurfaceUpdateRequest | p.SurfaceCloseRequest
        ):
            return self._surface(request)
        if isinstance(request, p.RegistryListRequest):
            return self.registry._list(self.app_scope)
        if isinstance(request, p.ContextRequest):
            if request.instance_id not in self.instances:
                raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, request.instance_id)
            return p.ContextReply(
                app_scope=self.app_scope,
                instance_id=request.instance_id,
                conversation_id=self.conversation_id,
                state=self.states.get(request.instance_id, "foreground"),
                mode="im" if self.app_scope == CHAT else "app",
            )
        raise LineUpError(ErrorCode.NO_HANDLER, request.TYPE)

    def _view(self, request: p.ViewUpdateRequest | p.ViewItemsPutRequest) -> Message:
        if isinstance(request, p.ViewUpdateRequest):
            if request.instance_id not in self.instances:
                raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, request.instance_id)
            if len(request.view) > MAX_VIEW_KEYS:
                raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "view too wide")
            compact = json.dumps(request.view, separators=(",", ":"), ensure_ascii=False)
            if len(compact.encode()) > p.MAX_VIEW_BYTES:
                raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "view too large")
            self.ui.renders.append((request.instance_id, request.view))
            return p.CommandReceipt(id=request.instance_id)
        if request.instance_id not in self.instances:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, request.instance_id)
        if len(request.model_dump_json().encode()) > p.MAX_VIEW_ITEMS_PUT_BYTES + 1024:
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "items too large")
        self.ui.puts += 1
        kept = self.ui.items.setdefault(request.instance_id, {})
        kept.update((item.id, item) for item in request.items)
        for item in sorted(kept.values(), key=lambda i: (i.order, i.id))[: -p.MAX_VIEW_ITEMS]:
            del kept[item.id]
        return p.CommandReceipt(id=request.instance_id)

    def _surface(
        self, request: p.SurfaceOpenRequest | p.SurfaceUpdateRequest | p.SurfaceCloseRequest
    ) -> p.SurfaceReply:
        if isinstance(request, p.SurfaceUpdateRequest):
            return self.surfaces._update(request)
        if isinstance(request, p.SurfaceCloseRequest):
            return self.surfaces._close(request)
        if request.instance_id not in self.instances:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, request.instance_id)
        info = getattr(type(self.app), "app_info", None)
        return self.surfaces._open(request, info.entrypoints if isinstance(info, AppInfo) else ())

    def _owned(self, instance_id: str) -> None:
        """Focus answers only for the app's own instances, open or closed."""
        if instance_id not in self.instances and instance_id not in self.closed:
            raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, instance_id)

    def _lifecycle(self, request: p.LifecycleRequest) -> p.CommandReceipt:
        self._owned(request.instance_id)
        if request.instance_id not in self.instances:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, request.instance_id)
        if request.action == "close":
            self.instances.discard(request.instance_id)
            self.closed.add(request.instance_id)
            self.surfaces._ended(request.instance_id)
        self.lifecycle.requests.append((request.instance_id, request.action))
        return p.CommandReceipt(id=request.instance_id)

    # ------------------------------------------------------------------ ToolSink

    def _record(self, call_id: str) -> CallRecord:
        record = self.calls.get(call_id)
        if record is None:  # a call dispatched directly, not through call_tool
            record = self.calls[call_id] = CallRecord(call_id, "", self.instance_id)
        return record

    def _open(self, call_id: str) -> CallRecord:
        record = self._record(call_id)
        if record.final:
            raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, call_id)
        return record

    async def progress(self, call_id: str, progress: dict[str, Any]) -> None:
        self._open(call_id).progress.append(progress)

    async def complete(self, call_id: str, result: dict[str, Any]) -> None:
        record = self._open(call_id)
        if record.output_schema is not None and validate(record.output_schema, result):
            raise LineUpError(ErrorCode.TOOL_OUTPUT_INVALID, call_id)
        record.result = result

    async def fail(self, call_id: str, code: str, message: str = "") -> None:
        record = self._open(call_id)
        record.error_code = code
        record.error_message = message

    async def cancel(self, call_id: str, reason: str) -> None:
        self._open(call_id).cancelled_reason = reason


async def start(
    app: MiniApp,
    *,
    runtime: FakeRuntime | None = None,
    app_scope: str | None = None,
    instance_id: str = DEFAULT_INSTANCE,
) -> FakeRuntime:
    """Call `app.start` with an `AppContext` on a `FakeRuntime` (given, or a new one whose
    scope is the app's `app_info.app_scope`). Later `call_tool(app, ...)` use the same fake."""
    if runtime is None:
        runtime = FakeRuntime(app_scope or _scope_of(app), instance_id)
    _RUNTIMES[app] = runtime
    runtime.app = app
    info = getattr(type(app), "app_info", None)
    if info is not None and runtime.capabilities.declared is None:
        runtime.capabilities.declared = frozenset(info.requested_capabilities)
    await app.start(runtime.context())
    await runtime.settle()
    return runtime


async def call_tool(
    app: MiniApp,
    tool_id: str,
    input: dict[str, Any],
    *,
    call_id: str | None = None,
    runtime: FakeRuntime | None = None,
) -> CallRecord:
    """Run one call of `tool_id` on `app` through `dispatch_tool`, as the runtime would after
    admitting it. Returns the call's record (still `running` if the handler completes later).
    Raises `tool_not_advertised` if the app declares no such tool."""
    spec: ToolSpec | None = tools_of(type(app)).get(tool_id)
    if spec is None:
        raise LineUpError(ErrorCode.TOOL_NOT_ADVERTISED, tool_id)
    if runtime is None:
        runtime = _RUNTIMES.get(app) or FakeRuntime(_scope_of(app))
        _RUNTIMES[app] = runtime
    call_id = call_id or str(uuid.uuid4())
    if call_id in runtime.calls:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, f"call_id {call_id} already used")
    record = runtime.calls[call_id] = CallRecord(
        call_id, tool_id, runtime.instance_id, output_schema=spec.descriptor.output_schema
    )
    await dispatch_tool(app, spec, call_id, tool_id, runtime.instance_id, input, runtime)
    await runtime.settle()
    return record


def _bounded_json(value: dict[str, Any]) -> str:
    """`value` as the store keeps it: compact JSON text. Raises `invalid_arguments` for what
    the store refuses: not strict JSON (NaN, Infinity), too deep, or too large."""
    deepest, pending = 0, [(value, 0)]
    while pending:  # iterative, as the store's check is
        item, depth = pending.pop()
        if isinstance(item, dict | list | tuple):
            deepest = max(deepest, depth + 1)
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
    if deepest > MAX_JSON_DEPTH:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "session data nests too deep")
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "session data is not strict JSON") from exc
    if len(text.encode()) > MAX_SESSION_DATA_BYTES:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "session data is too large")
    return text


SURFACE_PREFIX: Final = "lu:surface:"  # a Surface is named after its instance, as focus does


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _bounded_surface(document: dict[str, Any]) -> None:
    if len(_compact(document).encode()) > p.MAX_SURFACE_STATE_BYTES:
        raise LineUpError(ErrorCode.ENVELOPE_TOO_LARGE, "surface document bytes")


def _scope_of(app: MiniApp) -> str:
    info = getattr(type(app), "app_info", None)
    return info.app_scope if isinstance(info, AppInfo) else "test-app"


# ---------------------------------------------------------------------------------- artifacts

MAX_APP_ARTIFACT_BYTES: Final = 32 * 1024 * 1024  # one app's artifacts, as the gateway bounds
MAX_APP_ARTIFACTS: Final = 1000


class FakeArtifacts:
    """The gateway's artifacts, in memory, checked as the gateway checks them: the media type,
    the name, strict base64, the size, the instance, the app's quota; idempotent by request id;
    an app reads only its own (`put_foreign` plants another app's, for a test of that)."""

    def __init__(self) -> None:
        self.infos: dict[str, p.ArtifactInfo] = {}
        self.contents: dict[str, bytes] = {}
        self.max_app_bytes = MAX_APP_ARTIFACT_BYTES
        self.max_app_count = MAX_APP_ARTIFACTS
        self._clock = itertools.count(1)

    @staticmethod
    def artifact_id(app_scope: str, request_id: str) -> str:
        key = f"{app_scope}\x00{request_id}".encode()
        return "art_" + hashlib.sha256(key).hexdigest()[:32]

    def put_foreign(self, app_scope: str, data: bytes, name: str = "theirs.txt") -> str:
        info = self._record(app_scope, None, f"foreign-{len(self.infos)}", name, "text/plain", data)
        return info.artifact_id

    def _record(
        self,
        app_scope: str,
        instance_id: str | None,
        request_id: str,
        name: str,
        media_type: str,
        data: bytes,
    ) -> p.ArtifactInfo:
        info = p.ArtifactInfo(
            artifact_id=self.artifact_id(app_scope, request_id),
            app_scope=app_scope,
            instance_id=instance_id,
            name=name,
            media_type=media_type,
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            created_at=float(next(self._clock)),
        )
        self.infos[info.artifact_id] = info
        self.contents[info.artifact_id] = data
        return info

    def _create(
        self, msg: p.ArtifactCreateRequest, app_scope: str, instances: set[str]
    ) -> p.ArtifactInfo:
        if msg.media_type not in p.ARTIFACT_MEDIA_TYPES:
            raise LineUpError(ErrorCode.ARTIFACT_INVALID, "media type not allowed")
        name = msg.name
        if name in {".", ".."} or "/" in name or "\\" in name:
            raise LineUpError(ErrorCode.ARTIFACT_INVALID, "the name is a path")
        if any(unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp"} for ch in name):
            raise LineUpError(ErrorCode.ARTIFACT_INVALID, "the name holds a control character")
        try:
            data = base64.b64decode(msg.content_b64.encode("ascii"), validate=True)
        except (UnicodeEncodeError, binascii.Error) as exc:
            raise LineUpError(ErrorCode.ARTIFACT_INVALID, "content is not base64") from exc
        if len(data) > p.MAX_ARTIFACT_BYTES:
            raise LineUpError(ErrorCode.ARTIFACT_TOO_LARGE, "content too large")
        found = self.infos.get(self.artifact_id(app_scope, msg.request_id))
        if found is not None:
            return found
        if msg.instance_id not in instances:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, msg.instance_id)
        mine = [i for i in self.infos.values() if i.app_scope == app_scope]
        if (
            sum(i.size for i in mine) + len(data) > self.max_app_bytes
            or len(mine) + 1 > self.max_app_count
        ):
            raise LineUpError(ErrorCode.QUOTA_EXCEEDED, "the app's artifacts are at quota")
        return self._record(app_scope, msg.instance_id, msg.request_id, name, msg.media_type, data)

    def _read(self, msg: p.ArtifactReadRequest, app_scope: str) -> p.ArtifactContent:
        info = self.infos.get(msg.artifact_id)
        if info is None or info.app_scope != app_scope:
            raise LineUpError(ErrorCode.ARTIFACT_NOT_FOUND, msg.artifact_id)
        content = base64.b64encode(self.contents[msg.artifact_id]).decode("ascii")
        return p.ArtifactContent(info=info, content_b64=content)

    def _list(self, msg: p.ArtifactListRequest, app_scope: str) -> p.ArtifactListReply:
        mine = [
            i
            for i in self.infos.values()
            if i.app_scope == app_scope and msg.instance_id in (None, i.instance_id)
        ]
        mine.sort(key=lambda i: (i.created_at, i.artifact_id), reverse=True)
        return p.ArtifactListReply(artifacts=tuple(mine[: msg.limit]))

    def answer(self, request: Message, app_scope: str, instances: set[str]) -> Message | None:
        """The gateway's answer to `request`, or None if it is not an artifact request."""
        if isinstance(request, p.ArtifactCreateRequest):
            return self._create(request, app_scope, instances)
        if isinstance(request, p.ArtifactReadRequest):
            return self._read(request, app_scope)
        if isinstance(request, p.ArtifactListRequest):
            return self._list(request, app_scope)
        return None


class FakeCapabilities:
    """The capability gateway, in memory: every request is recorded (`requests`); one for a
    capability the app does not declare (once `start` read its `app_info`) is
    `permission_denied` (`capability_denied`), one whose input the catalog's model refuses is
    `failed` (`invalid_arguments`), an instance not the app's `failed`
    (`app_instance_not_found`); otherwise the result `set_result` gave the capability (default:
    `completed` with output `{}`). A repeated request id gets its first result, as the
    gateway answers a repeat."""

    def __init__(self) -> None:
        self.requests: list[p.CapabilityRequest] = []
        self.declared: frozenset[str] | None = None  # None: not known, nothing refused for it
        self._set: dict[str, tuple[str, str | None, dict[str, Any] | None]] = {}
        self._given: dict[str, p.CapabilityResult] = {}

    def set_result(
        self,
        capability: str,
        status: str = "completed",
        code: str | None = None,
        output: dict[str, Any] | None = None,
    ) -> None:
        """The result of the next requests for `capability` (the user's and host's answer)."""
        self._set[capability] = (status, code, output)

    def last(self, capability: str | None = None) -> p.CapabilityRequest | None:
        return next(
            (r for r in reversed(self.requests) if capability in (None, r.capability)), None
        )

    def _answer(self, msg: p.CapabilityRequest, instances: set[str]) -> p.CapabilityResult:
        self.requests.append(msg)
        given = self._given.get(msg.request_id)
        if given is not None:
            return given
        status, code, output = self._decide(msg, instances)
        result = p.CapabilityResult.model_validate(
            {
                "request_id": msg.request_id,
                "capability": msg.capability,
                "status": status,
                "code": code,
                "output": output if status == "completed" else None,
            }
        )
        self._given[msg.request_id] = result
        return result

    def _decide(
        self, msg: p.CapabilityRequest, instances: set[str]
    ) -> tuple[str, str | None, dict[str, Any] | None]:
        if self.declared is not None and msg.capability not in self.declared:
            return "permission_denied", ErrorCode.CAPABILITY_DENIED.value, None
        if msg.instance_id not in instances:
            return "failed", ErrorCode.APP_INSTANCE_NOT_FOUND.value, None
        if msg.capability not in CATALOG:
            return "unsupported_on_host", ErrorCode.UNSUPPORTED_ON_HOST.value, None
        try:
            parse_input(msg.capability, msg.input)
        except ValueError:  # pydantic's ValidationError is one
            return "failed", ErrorCode.INVALID_ARGUMENTS.value, None
        status, code, output = self._set.get(msg.capability, ("completed", None, {}))
        return status, code, output if output is not None else {}
