"""The MiniApp side of the SDK: what an app's code sees, and the process that hosts it.

Theory of operation
-------------------
A MiniApp is a `MiniApp` subclass. Its process runs `MiniAppHost`, an actor of kind `miniapp`
whose only channels go to the router, focus and gateway (the ACL table). Every event the
runtime sends the app (a delivery, a user action, a state change) is queued in arrival order
and handed to the app's hooks one at a time, so app code never races with itself. Every write
the app makes is a request the runtime may refuse with a stable `ErrorCode`.

Deliveries are at-least-once: the inbox is the reliable path (listed at start and whenever the
runtime asks for a refresh, and read again for a delivery whose hook was refused, which is
offered again after a pause) and events are the fast one, so hooks must be idempotent by id.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import logging
import math
import re
import uuid
from collections.abc import Awaitable, Iterable, Mapping
from typing import Any, Final, Literal, Protocol, TypeVar

import trio
from pydantic import BaseModel

from lineup.actors.kernel import (
    Actor,
    ActorKind,
    Envelope,
    ErrorCode,
    LineUpError,
    Message,
    handles,
)

from . import protocol as p

__all__ = [
    "AppContext",
    "Apps",
    "Artifacts",
    "Capabilities",
    "Conversation",
    "Inbox",
    "Lifecycle",
    "MiniApp",
    "MiniAppHost",
    "Registry",
    "RuntimeChannel",
    "SessionData",
    "Surfaces",
    "Ui",
]

log = logging.getLogger("lineup.sdk")

M = TypeVar("M", bound=Message)
EVENT_QUEUE: Final = 1024
DELIVERY_BURST: Final = 200  # deliveries handed to one `on_deliveries`
CALL_TIMEOUT: Final = 15.0
# A capability request may wait for the user (the permission prompt, then a file picker): the
# gateway answers within the caller's deadline, so it may be longer than the default prompt
# and provider timeouts together.
CAPABILITY_TIMEOUT: Final = 300.0
# A `rate_limited` refusal asks the app to slow down: it waits this long, doubling up to a
# second, and asks again (within CALL_TIMEOUT), instead of dropping what it was doing.
RATE_PAUSE: Final = 0.01
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
# A delivery whose hook was refused (the app raised, or its acknowledgement did not reach
# the store) is still in the inbox: it is offered again after each of these pauses, read from
# the inbox (what was acknowledged meanwhile is not), about a minute in all; after that it
# waits for the app's next start or refresh.
REOFFER_PAUSES: Final = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
INBOX_PAGE: Final = 100
MAX_KEPT_RECORDS: Final = 256  # answered interactions the app's `Ui.wait` remembers
FINAL_INTERACTION: Final = frozenset({"completed", "cancelled", "expired", "failed"})


class RuntimeChannel(Protocol):
    """The runtime side of a MiniApp's channel, as the SDK's services use it: `MiniAppHost` in
    the process, an in-memory fake (`lineup.sdk.testkit.FakeRuntime`) in an author's tests."""

    async def call(self, peer: str, request: Message, expect: type[M]) -> M: ...


class Inbox:
    """The app's deliveries in the current conversation (seed 003 §3.1). An app sees one inbox
    per instance it names, plus the conversation-level one (`instance_id=None`, e.g. the chat's)
    for what the Agent addressed to no instance; `Delivery.instance_id` says which it is in."""

    def __init__(self, host: RuntimeChannel) -> None:
        self._host = host

    async def list(
        self, after_seq: int = 0, limit: int = 100, *, instance_id: str | None = None
    ) -> tuple[p.Delivery, ...]:
        reply = await self._host.call(
            "router",
            p.InboxListRequest(instance_id=instance_id, after_seq=after_seq, limit=limit),
            p.InboxListReply,
        )
        return reply.deliveries

    async def acknowledge(
        self, delivery_id: str, *, instance_id: str | None = None
    ) -> p.CommandReceipt:
        """Remove a delivery once handled (`changed=False`: it was not in that inbox)."""
        return await self._host.call(
            "router",
            p.InboxAckRequest(delivery_id=delivery_id, instance_id=instance_id),
            p.CommandReceipt,
        )

    async def acknowledge_many(self, deliveries: Iterable[p.Delivery]) -> frozenset[str]:
        """Remove deliveries once handled, each from the inbox it is in: one request per inbox
        (and per `protocol.MAX_BATCH` of them), however many there are. Returns the ids that
        were removed; any other was not in its inbox (already acknowledged, or never)."""
        by_inbox: dict[str | None, list[str]] = {}
        for delivery in deliveries:
            ids = by_inbox.setdefault(delivery.instance_id, [])
            if delivery.delivery_id not in ids:
                ids.append(delivery.delivery_id)
        acked: set[str] = set()
        for instance_id, ids in by_inbox.items():
            for start in range(0, len(ids), p.MAX_BATCH):
                reply = await self._host.call(
                    "router",
                    p.InboxAckManyRequest(
                        delivery_ids=tuple(ids[start : start + p.MAX_BATCH]),
                        instance_id=instance_id,
                    ),
                    p.InboxAckManyReply,
                )
                acked.update(reply.acked)
        return frozenset(acked)


class Conversation:
    def __init__(self, host: RuntimeChannel) -> None:
        self._host = host

    async def send_text(self, message_id: str, markdown: str) -> p.CommandReceipt:
        """Persist the user's text for the Agent (idempotent by `message_id`)."""
        return await self._host.call(
            "router",
            p.ConversationSendTextRequest(message_id=message_id, markdown=markdown),
            p.CommandReceipt,
        )

    async def retry(self, message_id: str) -> p.CommandReceipt:
        return await self._host.call(
            "router", p.ConversationRetryRequest(message_id=message_id), p.CommandReceipt
        )

    async def history(self, after_seq: int = 0, limit: int = 200) -> tuple[p.ConversationItem, ...]:
        reply = await self._host.call(
            "router",
            p.ConversationHistoryRequest(after_seq=after_seq, limit=limit),
            p.ConversationHistoryReply,
        )
        return reply.items


class Ui:
    """The app's view, and the standard interactions it asks the user (seed 003 §3.4)."""

    def __init__(self, host: RuntimeChannel, instance_id: str = "") -> None:
        self._host = host
        self._instance_id = instance_id
        # Waiters for an interaction's answer, by id: resolved by the host as the runtime's
        # word arrives, not through the event queue (a hook may be the one waiting).
        self._waiters: dict[str, list[trio.Event]] = {}
        self._records: dict[str, p.InteractionRecord] = {}

    async def request(
        self,
        request: BaseModel | Mapping[str, Any],
        *,
        instance_id: str | None = None,
        parent_call_id: str | None = None,
        presentation: p.Presentation = "default",
        expires_in_ms: int | None = None,
        request_id: str | None = None,
    ) -> p.InteractionRecord:
        """Ask the user a standard interaction (`lineup.sdk.interactions`' requests: notice,
        choice, confirm, input), shown in this app's own container. The runtime injects the
        owner (this app and `instance_id`, one of its live instances): nothing here names
        another. `parent_call_id` ties it to one of that instance's calls still running;
        `request_id` is the idempotency key (a retry asks nothing new; a fresh one by default).
        Returns the record as recorded; the answer comes as `on_interaction_updated`, or
        through `wait`. Raises `LineUpError`: `tool_input_invalid` (not a standard request, or
        an expiry outside 1 min..24 h), `app_instance_not_found`, `app_scope_mismatch`,
        `call_already_final`."""
        body = (
            request.model_dump(mode="json", exclude_none=True)
            if isinstance(request, BaseModel)
            else dict(request)
        )
        reply = await self._host.call(
            "router",
            p.InteractionAskRequest(
                instance_id=instance_id or self._instance_id,
                request_id=request_id or uuid.uuid4().hex,
                request=body,
                parent_call_id=parent_call_id,
                presentation=presentation,
                expires_in_ms=expires_in_ms,
            ),
            p.InteractionReceipt,
        )
        self._updated(reply.interaction)
        return reply.interaction

    async def get(self, interaction_id: str) -> p.InteractionRecord:
        """One of this app's interactions as the runtime holds it (`interaction_not_found`
        for any other)."""
        reply = await self._host.call(
            "router", p.InteractionGetRequest(interaction_id=interaction_id), p.InteractionReceipt
        )
        self._updated(reply.interaction)
        return reply.interaction

    async def cancel(
        self, interaction_id: str, reason: str = "cancelled_by_app"
    ) -> p.InteractionReceipt:
        """Withdraw a question not answered yet (`changed` False: it had its end already)."""
        reply = await self._host.call(
            "router",
            p.InteractionCancelRequest(interaction_id=interaction_id, reason=reason),
            p.InteractionReceipt,
        )
        self._updated(reply.interaction)
        return reply

    async def wait(self, interaction_id: str, *, timeout: float) -> p.InteractionRecord:
        """The interaction once it has its answer or its end (a `result`, or a terminal
        state). Raises `trio.TooSlowError` after `timeout` seconds."""
        with trio.fail_after(timeout):
            while True:
                ready = trio.Event()
                self._waiters.setdefault(interaction_id, []).append(ready)
                try:
                    record = self._records.get(interaction_id) or await self.get(interaction_id)
                    if _answered(record):
                        return record
                    await ready.wait()
                finally:
                    waiting = self._waiters.get(interaction_id, [])
                    if ready in waiting:
                        waiting.remove(ready)
                    if not waiting:
                        self._waiters.pop(interaction_id, None)

    def _updated(self, record: p.InteractionRecord) -> None:
        if not _answered(record):
            return  # nothing a waiter waits for
        self._records[record.interaction_id] = record
        while len(self._records) > MAX_KEPT_RECORDS:
            self._records.pop(next(iter(self._records)))
        for ready in self._waiters.get(record.interaction_id, []):
            ready.set()

    async def render(self, instance_id: str, view: dict[str, Any]) -> None:
        """Replace the instance's whole view state (the Shell renders it with trusted parts).
        A view is small (`p.MAX_VIEW_BYTES`); what grows goes in items (`put_items`)."""
        await self._host.call(
            "focus", p.ViewUpdateRequest(instance_id=instance_id, view=view), p.CommandReceipt
        )

    async def put_items(self, instance_id: str, items: Iterable[p.ViewItem]) -> None:
        """Add or replace items of the instance's list, in as many requests as their size
        takes (each within `p.MAX_VIEW_ITEMS_PUT_BYTES`). Raises `LineUpError` as focus
        refuses: `invalid_arguments` for an item over `p.MAX_VIEW_ITEM_BYTES`,
        `permission_denied` for an app not trusted with a component that shows items."""
        batch: list[p.ViewItem] = []
        used = 0
        for item in items:
            size = len(item.model_dump_json().encode())
            if batch and (
                used + size > p.MAX_VIEW_ITEMS_PUT_BYTES or len(batch) >= p.MAX_VIEW_ITEMS
            ):
                await self._put(instance_id, batch)
                batch, used = [], 0
            batch.append(item)
            used += size
        if batch:
            await self._put(instance_id, batch)

    async def _put(self, instance_id: str, batch: list[p.ViewItem]) -> None:
        await self._host.call(
            "focus",
            p.ViewItemsPutRequest(instance_id=instance_id, items=tuple(batch)),
            p.CommandReceipt,
        )


class Lifecycle:
    """An app *asks* for focus changes; the runtime decides (seed 003 §3.3)."""

    def __init__(self, host: RuntimeChannel) -> None:
        self._host = host

    async def _ask(
        self, instance_id: str, action: Literal["foreground", "background", "close"]
    ) -> p.CommandReceipt:
        return await self._host.call(
            "focus", p.LifecycleRequest(instance_id=instance_id, action=action), p.CommandReceipt
        )

    async def request_foreground(self, instance_id: str) -> p.CommandReceipt:
        return await self._ask(instance_id, "foreground")

    async def request_background(self, instance_id: str) -> p.CommandReceipt:
        return await self._ask(instance_id, "background")

    async def request_close(self, instance_id: str) -> p.CommandReceipt:
        """Close the instance: its unfinished calls are cancelled, focus goes back."""
        return await self._ask(instance_id, "close")


class Apps:
    """Navigation: an app may ask to open another app; the runtime decides."""

    def __init__(self, host: RuntimeChannel) -> None:
        self._host = host

    async def open(self, app_scope: str, request_id: str) -> p.AppOpenReply:
        """Open `app_scope` in front (idempotent by `request_id`). Refused with
        `app_not_installed` or `app_disabled`."""
        return await self._host.call(
            "focus", p.AppOpenRequest(app_scope=app_scope, request_id=request_id), p.AppOpenReply
        )


class SessionData:
    """Per-instance JSON with a revision, owned by the runtime (seed 004 §6.3)."""

    def __init__(self, host: RuntimeChannel) -> None:
        self._host = host
        self._handlers: dict[str, list[Any]] = {}
        self._seen: dict[str, int] = {}

    async def get(self, instance_id: str) -> p.SessionDataSnapshot:
        return await self._host.call(
            "focus", p.SessionDataGetRequest(instance_id=instance_id), p.SessionDataSnapshot
        )

    async def replace(self, instance_id: str, data: dict[str, Any], expected_revision: int) -> int:
        """Write the whole value; returns the new revision. Refused with `stale_revision`
        when another write came first: re-read, merge as the app sees fit, try again. Refused
        with `invalid_arguments`, before anything is sent, when `data` is not strict JSON (NaN,
        Infinity, a lone surrogate): the bus would otherwise carry NaN as null."""
        _check_strict_json(data)
        receipt = await self._host.call(
            "focus",
            p.SessionDataReplaceRequest(
                instance_id=instance_id, data=data, expected_revision=expected_revision
            ),
            p.CommandReceipt,
        )
        return int(receipt.seq or expected_revision)

    async def subscribe(self, instance_id: str, handler: Any) -> None:
        """`await handler(snapshot)` now with the full value, then on every newer revision."""
        snapshot = await self._host.call(
            "focus", p.SessionDataSubscribeRequest(instance_id=instance_id), p.SessionDataSnapshot
        )
        self._handlers.setdefault(instance_id, []).append(handler)
        self._seen[instance_id] = snapshot.revision
        await handler(snapshot)

    async def _updated(self, event: p.SessionDataEvent) -> None:
        if event.revision <= self._seen.get(event.instance_id, -1):
            return  # a repeat or an old one: revisions only go up
        self._seen[event.instance_id] = event.revision
        snapshot = p.SessionDataSnapshot(
            instance_id=event.instance_id, data=event.data, revision=event.revision
        )
        for handler in self._handlers.get(event.instance_id, []):
            await handler(snapshot)


class Surfaces:
    """An instance's Surface: its UI in a sandboxed iframe of the Shell, from the app's own
    web assets (seed 003 §3.5). The runtime decides whether one opens and names it; the app
    sends it state (JSON merge patches) and hears its declared events (`on_surface_event`)
    and its end (`on_surface_closed`). Its session data is the instance's (`session_data`).
    After `on_view_refresh` (the runtime restarted its focus) the app opens it again."""

    def __init__(self, host: RuntimeChannel) -> None:
        self._host = host

    async def request_open(
        self,
        instance_id: str,
        *,
        entrypoint: str | None = None,
        state: dict[str, Any] | None = None,
        tool_input: dict[str, Any] | None = None,
    ) -> p.SurfaceReply:
        """Open the instance's Surface from the manifest's `surface` entrypoint `entrypoint`
        (None: the first), showing `state` first; an open one is returned as it is (`changed`
        False, its state kept). Raises `LineUpError`: `surface_unavailable` (no such
        entrypoint, or a `surface_version` this host does not run), `app_instance_not_found`,
        `envelope_too_large` (state over `protocol.MAX_SURFACE_STATE_BYTES`)."""
        return await self._host.call(
            "focus",
            p.SurfaceOpenRequest(
                instance_id=instance_id,
                entrypoint=entrypoint,
                state=state or {},
                tool_input=tool_input,
            ),
            p.SurfaceReply,
        )

    async def update(
        self,
        surface_id: str,
        patch: dict[str, Any] | None = None,
        *,
        tool_result: dict[str, Any] | None = None,
    ) -> p.SurfaceReply:
        """Merge `patch` (RFC 7396: a null removes a key) into the Surface's state, one
        revision on; `tool_result` reaches it as the tool result. Raises `surface_not_found`
        (closed, or never this app's), `envelope_too_large`."""
        return await self._host.call(
            "focus",
            p.SurfaceUpdateRequest(
                surface_id=surface_id, patch=patch or {}, tool_result=tool_result
            ),
            p.SurfaceReply,
        )

    async def request_close(self, surface_id: str) -> p.SurfaceReply:
        """Close the Surface (`changed` False if it was closed already). Raises
        `surface_not_found` for one that is not this app's."""
        return await self._host.call(
            "focus", p.SurfaceCloseRequest(surface_id=surface_id), p.SurfaceReply
        )


class Artifacts:
    """Runtime-owned files this app makes (seed 004 §6.3): the runtime writes the bytes under
    its data dir and keeps their metadata; the app reads back only its own. An artifact's id
    (and metadata, never the bytes) is what a tool result hands the Agent."""

    def __init__(self, host: RuntimeChannel) -> None:
        self._host = host

    async def create(
        self,
        instance_id: str,
        media_type: str,
        data: bytes,
        name: str,
        *,
        request_id: str | None = None,
    ) -> p.ArtifactInfo:
        """Make an artifact of `data` (`media_type` in `ARTIFACT_MEDIA_TYPES`), owned by this
        app and `instance_id`. Idempotent by `request_id` (None: derived from the instance,
        name, type and bytes, so a retry of the same content is the same artifact). Raises
        `LineUpError` with `artifact_too_large` (before anything is sent: over
        `MAX_ARTIFACT_BYTES`), `artifact_invalid`, `quota_exceeded`, `app_instance_not_found`."""
        if len(data) > p.MAX_ARTIFACT_BYTES:
            raise LineUpError(ErrorCode.ARTIFACT_TOO_LARGE, f"over {p.MAX_ARTIFACT_BYTES} bytes")
        if request_id is None:
            key = hashlib.sha256()
            for part in (instance_id, media_type, name):
                key.update(part.encode("utf-8", "surrogatepass") + b"\x00")
            key.update(data)
            request_id = "auto-" + key.hexdigest()[:40]
        return await self._host.call(
            "gateway",
            p.ArtifactCreateRequest(
                request_id=request_id,
                instance_id=instance_id,
                name=name,
                media_type=media_type,
                content_b64=base64.b64encode(data).decode("ascii"),
            ),
            p.ArtifactInfo,
        )

    async def read(self, artifact_id: str) -> tuple[p.ArtifactInfo, bytes]:
        """One of this app's artifacts and its bytes; another app's is `artifact_not_found`."""
        got = await self._host.call(
            "gateway", p.ArtifactReadRequest(artifact_id=artifact_id), p.ArtifactContent
        )
        return got.info, base64.b64decode(got.content_b64)

    async def list(self, instance_id: str | None = None) -> tuple[p.ArtifactInfo, ...]:
        """This app's artifacts (of one instance, or all), newest first."""
        reply = await self._host.call(
            "gateway", p.ArtifactListRequest(instance_id=instance_id), p.ArtifactListReply
        )
        return reply.artifacts


class Registry:
    """The runtime's registry of apps, read-only: what the App Registry MiniApp lists. The
    runtime answers `focus.sdk.registry.list` to `miniapp:app-registry` alone (any other app
    is refused `permission_denied`); a change to the registry is never a call here but a
    capability the user confirms (`app.install`, `app.manage`)."""

    def __init__(self, host: RuntimeChannel) -> None:
        self._host = host

    async def list(self) -> p.RegistryListReply:
        """Every app the runtime offers (version, kind, source, enabled, state, predecessor,
        latest operation), the default app and the newest operations. Raises `LineUpError`
        `permission_denied` for any app but the App Registry."""
        return await self._host.call("focus", p.RegistryListRequest(), p.RegistryListReply)


class Capabilities:
    """System powers the runtime grants case by case (seed 004 §6.3; the catalog, inputs and
    the order of the checks are `lineup.sdk.capabilities`). Only a capability the manifest
    declares in `requested_capabilities` can ever run; the runtime may ask the user first."""

    def __init__(self, host: RuntimeChannel, instance_id: str) -> None:
        self._host = host
        self._instance_id = instance_id

    async def request(
        self,
        capability: str,
        purpose: str,
        input: Mapping[str, Any] | None = None,
        *,
        instance_id: str | None = None,
        request_id: str | None = None,
    ) -> p.CapabilityResult:
        """Ask for `capability` for `instance_id` (default: the process's own instance),
        saying why (`purpose`, shown to the user as text). Returns the one result, whatever
        the decision: its `status` (`completed` with `output`, `cancelled_by_user`,
        `permission_denied`, `unsupported_on_host`, `policy_denied`, `expired`, `failed`)
        and `code`. Never raises for a refusal; raises `LineUpError` only when the runtime
        cannot be reached or the request is malformed. Repeating `request_id` (default: a
        new one) gets the same result while the runtime keeps it, without asking again."""
        return await self._host.call(
            "gateway",
            p.CapabilityRequest(
                request_id=request_id or f"cap-{uuid.uuid4().hex}",
                instance_id=instance_id or self._instance_id,
                capability=capability,
                purpose=purpose,
                input=dict(input or {}),
            ),
            p.CapabilityResult,
        )


def _answered(record: p.InteractionRecord) -> bool:
    return record.result is not None or record.state in FINAL_INTERACTION


def _check_strict_json(data: dict[str, Any]) -> None:
    """Raise `LineUpError(invalid_arguments)` unless every number in `data` is finite and no
    string (key or value) holds a lone surrogate. Iterative: depth costs no stack (the store
    bounds depth and size itself)."""
    stack: list[object] = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii() and _SURROGATE.search(item):
                raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "session data is not strict JSON")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "session data is not strict JSON")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)


class AppContext:
    """What the runtime gives one MiniApp process (seed 003 §3 `MiniAppContext`): read-only
    facts the runtime injects — `app_scope` (from the channel), `instance_id` (the instance
    the process was started for), `conversation_id`, `app_version`, `state` of that instance,
    and `mode` (`im` for the chat) — plus the SDK's services. The app can neither pass nor
    change them: `refresh` reads them again from the runtime."""

    def __init__(
        self,
        host: RuntimeChannel,
        app_scope: str,
        instance_id: str,
        *,
        app_version: str = "",
        conversation_id: str | None = None,
        state: str = "starting",
    ) -> None:
        self._host = host
        self.app_scope = app_scope
        self.instance_id = instance_id
        self.app_version = app_version
        self.conversation_id = conversation_id
        self.state = state
        self.mode: Literal["im", "app"] = "im" if app_scope == "chat" else "app"
        self.inbox = Inbox(host)
        self.conversation = Conversation(host)
        self.ui = Ui(host, instance_id)
        self.lifecycle = Lifecycle(host)
        self.session_data = SessionData(host)
        self.artifacts = Artifacts(host)
        self.capabilities = Capabilities(host, instance_id)
        self.apps = Apps(host)
        self.surfaces = Surfaces(host)
        self.registry = Registry(host)  # answered to the App Registry alone

    async def refresh(self, instance_id: str | None = None) -> p.ContextReply:
        """The runtime's facts about `instance_id` (one of this app's; default: the process's
        own, whose fields here are updated). Raises `app_instance_not_found` for any other."""
        reply = await self._host.call(
            "router",
            p.ContextRequest(instance_id=instance_id or self.instance_id),
            p.ContextReply,
        )
        if reply.instance_id == self.instance_id:
            self.conversation_id = reply.conversation_id
            self.state = reply.state
        return reply


class MiniApp:
    """Base class of a MiniApp's logic. Override the hooks you need; each runs alone."""

    async def start(self, app: AppContext) -> None:
        """Called once when the process starts, before any other hook."""

    async def on_delivery(self, delivery: p.Delivery) -> None:
        """A delivery to this app's inbox; acknowledge it once handled."""

    async def on_deliveries(self, deliveries: tuple[p.Delivery, ...]) -> None:
        """Deliveries that were waiting together, in order (one or more). By default
        `on_delivery` for each; override it to handle a burst at once (render once)."""
        for delivery in deliveries:
            await self.on_delivery(delivery)

    async def on_ui_event(self, event: p.UiEvent) -> None:
        """The user acted on one of this app's views."""

    async def on_conversation_updated(self, event: p.ConversationUpdatedEvent) -> None:
        """One of this app's outgoing messages changed state."""

    async def on_view_refresh(self) -> None:
        """The runtime lost its copy of the view, or the conversation changed (a first login
        after the history was read): render again, re-reading the history and the inbox."""

    async def on_tool_cancelled(self, call_id: str, code: str) -> None:
        """A call of this app expired, was cancelled, or its instance closed: stop on it."""

    async def on_interaction_updated(self, record: p.InteractionRecord) -> None:
        """One of this app's interactions has its answer (`record.result`) or ended
        (cancelled, expired, failed: `record.terminal_code`). Told at least once."""

    async def on_surface_event(self, event: p.SurfaceEvent) -> None:
        """One of this app's Surfaces sent an event its entrypoint declares (`event.name`).
        Not retried by the runtime: a Surface re-sends what it needs acknowledged."""

    async def on_surface_closed(self, event: p.SurfaceClosedEvent) -> None:
        """One of this app's Surfaces is gone: `closed` (the app asked) or `instance_ended`."""


class MiniAppHost(Actor):
    """The process of one MiniApp. Config: `{"app": "module:Class", "instance_id": str}`."""

    kind = ActorKind.MINIAPP

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._events_in, self._events_out = trio.open_memory_channel[Message](EVENT_QUEUE)
        self._offers: dict[str, int] = {}  # refused deliveries: times offered again

    async def call(self, peer: str, request: Message, expect: type[M]) -> M:
        wait = CAPABILITY_TIMEOUT if isinstance(request, p.CapabilityRequest) else CALL_TIMEOUT
        deadline = trio.current_time() + wait
        pause = RATE_PAUSE
        while True:
            try:
                return await self.bus.request(
                    peer, request, expect=expect, timeout=deadline - trio.current_time(), retry=True
                )
            except LineUpError as exc:
                if (
                    exc.code is not ErrorCode.RATE_LIMITED
                    or trio.current_time() + pause >= deadline
                ):
                    raise
            await trio.sleep(pause)
            pause = min(2 * pause, 1.0)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        from .tools import tools_of  # the authoring side imports this module

        module_name, _, class_name = str(self.ctx.config["app"]).partition(":")
        module = importlib.import_module(module_name)
        app_class = getattr(module, class_name) if class_name else _the_app_in(module)
        app: MiniApp = app_class()
        self._app = app
        self._tools = tools_of(app_class)
        self._running: dict[str, trio.CancelScope] = {}
        self._cancelled: dict[str, p.ToolCancelledEvent] = {}
        scope = self.ctx.identity.name.removeprefix("miniapp:")
        self._context = AppContext(
            self,
            scope,
            str(self.ctx.config.get("instance_id", scope)),
            app_version=str(self.ctx.config.get("app_version", "")),
        )
        await app.start(self._context)
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            nursery.start_soon(self._refresh_context)
            if self._tools:  # calls handed over while the app was down, or before a crash
                pending = await self.call("router", p.ToolPendingRequest(), p.ToolPendingReply)
                for call in pending.calls:
                    self._start_tool(call)
            held: Message | None = None
            while True:
                if held is None:
                    try:
                        event = await self._events_out.receive()
                    except trio.EndOfChannel:
                        return
                else:
                    event, held = held, None
                if isinstance(event, p.DeliveriesEvent | p.DeliveryEvent):
                    if _takes_bursts(app):
                        deliveries, held = self._waiting_deliveries(event)
                        await self._hand(app.on_deliveries(deliveries), deliveries, event.TYPE)
                        continue
                    for delivery in _deliveries_in(event):  # each refused alone
                        await self._hand(app.on_delivery(delivery), (delivery,), event.TYPE)
                    continue
                try:
                    await _dispatch(app, event, self._context)
                except LineUpError as exc:
                    log.warning("sdk.hook_refused type=%s code=%s", event.TYPE, exc.code.value)

    async def _hand(
        self, hook: Awaitable[None], deliveries: tuple[p.Delivery, ...], kind: str
    ) -> None:
        """Run a delivery hook; if it is refused, its deliveries are offered again later."""
        try:
            await hook
        except LineUpError as exc:
            log.warning("sdk.hook_refused type=%s code=%s", kind, exc.code.value)
            self._offer_again(deliveries)
            return
        for delivery in deliveries:
            self._offers.pop(delivery.delivery_id, None)

    def _offer_again(self, deliveries: tuple[p.Delivery, ...]) -> None:
        offered = max(self._offers.get(d.delivery_id, 0) for d in deliveries)
        if offered == len(REOFFER_PAUSES):
            for delivery in deliveries:
                self._offers.pop(delivery.delivery_id, None)
            log.warning("sdk.deliveries_left_in_inbox count=%d", len(deliveries))
            return
        self._offers.update((d.delivery_id, offered + 1) for d in deliveries)
        self._nursery.start_soon(self._reoffer, deliveries, REOFFER_PAUSES[offered])

    async def _reoffer(self, deliveries: tuple[p.Delivery, ...], pause: float) -> None:
        await trio.sleep(pause)
        try:
            waiting = await self._still_in_inbox(deliveries)
            if waiting:
                self._enqueue(p.DeliveriesEvent(deliveries=waiting))
        except LineUpError as exc:  # not read, or not queued: again after the next pause
            log.info("sdk.deliveries_not_reoffered code=%s", exc.code.value)
            self._offer_again(deliveries)
            return
        taken = {d.delivery_id for d in waiting}
        for delivery in deliveries:
            if delivery.delivery_id not in taken:  # acknowledged meanwhile
                self._offers.pop(delivery.delivery_id, None)

    async def _still_in_inbox(self, deliveries: tuple[p.Delivery, ...]) -> tuple[p.Delivery, ...]:
        """Those of `deliveries` their inboxes still hold, as the inboxes hold them."""
        wanted = {d.delivery_id for d in deliveries}
        found: list[p.Delivery] = []
        for instance_id in dict.fromkeys(d.instance_id for d in deliveries):
            seqs = [d.seq for d in deliveries if d.instance_id == instance_id]
            after, last = max(0, min(seqs) - 1), max(seqs)
            while after < last:
                page = await self._context.inbox.list(
                    after_seq=after, limit=INBOX_PAGE, instance_id=instance_id
                )
                if not page:
                    break
                found.extend(d for d in page if d.delivery_id in wanted)
                after = page[-1].seq
        return tuple(found)

    def _waiting_deliveries(
        self, first: p.DeliveryEvent | p.DeliveriesEvent
    ) -> tuple[tuple[p.Delivery, ...], Message | None]:
        """`first`'s deliveries and those queued right behind it, at most `DELIVERY_BURST`,
        and the next event not taken (what is left of a cut event, or another kind), held
        back so the queue's order holds."""
        deliveries: list[p.Delivery] = []
        batch = first
        while True:
            more = _deliveries_in(batch)
            room = DELIVERY_BURST - len(deliveries)
            deliveries.extend(more[:room])
            if len(more) > room:
                return tuple(deliveries), p.DeliveriesEvent(deliveries=more[room:])
            if len(deliveries) == DELIVERY_BURST:
                return tuple(deliveries), None
            try:
                event = self._events_out.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                return tuple(deliveries), None
            if not isinstance(event, p.DeliveryEvent | p.DeliveriesEvent):
                return tuple(deliveries), event
            batch = event

    async def _refresh_context(self) -> None:
        """The facts focus could not give at the spawn (the conversation, the state): asked
        once the process is up, so the start never waits on the router."""
        try:
            await self._context.refresh()
        except LineUpError as exc:
            log.info("sdk.context_not_refreshed code=%s", exc.code.value)

    # ------------------------------------------------------------------ tools

    def _start_tool(self, event: p.ToolCallEvent) -> None:
        if event.call_id not in self._running:  # told twice (pushed and listed): taken once
            self._running[event.call_id] = trio.CancelScope()
            self._nursery.start_soon(self._run_tool, event)

    async def _run_tool(self, event: p.ToolCallEvent) -> None:
        from .tools import dispatch_tool

        spec = self._tools.get(event.tool)
        try:
            with self._running[event.call_id]:
                # Taken first: a call the runtime refuses (decided meanwhile, not ours) is not
                # run, and the refusal's code is logged, not lost.
                await self.call(
                    "router", p.ToolAcceptRequest(call_id=event.call_id), p.CommandReceipt
                )
                if spec is None:
                    await self.fail(event.call_id, ErrorCode.TOOL_NOT_ADVERTISED.value)
                    return
                await dispatch_tool(
                    self._app, spec, event.call_id, event.tool, event.instance_id, event.input, self
                )
        except LineUpError as exc:
            log.warning("sdk.tool_refused call=%s code=%s", event.call_id, exc.code.value)
        finally:
            self._running.pop(event.call_id, None)
            cancelled = self._cancelled.pop(event.call_id, None)
            if cancelled is not None:
                self._enqueue(cancelled)

    async def progress(self, call_id: str, progress: dict[str, Any]) -> None:
        await self.call(
            "router", p.ToolProgressRequest(call_id=call_id, progress=progress), p.CommandReceipt
        )

    async def complete(self, call_id: str, result: dict[str, Any]) -> None:
        await self.call(
            "router", p.ToolCompleteRequest(call_id=call_id, result=result), p.CommandReceipt
        )

    async def fail(self, call_id: str, code: str, message: str = "") -> None:
        await self.call(
            "router",
            p.ToolFailRequest(call_id=call_id, code=code, message=message[:1000]),
            p.CommandReceipt,
        )

    async def cancel(self, call_id: str, reason: str) -> None:
        await self.call(
            "router", p.ToolCancelRequest(call_id=call_id, reason=reason), p.CommandReceipt
        )

    @handles(p.SessionDataEvent)
    def on_session_data(self, msg: p.SessionDataEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.ToolCallEvent)
    def on_tool_call(self, msg: p.ToolCallEvent, env: Envelope) -> None:
        self._start_tool(msg)

    @handles(p.ToolCancelledEvent)
    def on_tool_cancelled(self, msg: p.ToolCancelledEvent, env: Envelope) -> None:
        running = self._running.get(msg.call_id)
        if running is None:
            self._enqueue(msg)
            return
        # Stop the handler; the app's hook runs once it has really stopped (`_run_tool`).
        self._cancelled[msg.call_id] = msg
        running.cancel()

    def _enqueue(self, event: Message) -> None:
        try:
            self._events_in.send_nowait(event)
        except trio.WouldBlock:
            # Deliveries stay in the inbox; a refresh re-reads it.
            raise LineUpError(ErrorCode.MAILBOX_FULL, event.TYPE) from None

    @handles(p.DeliveryEvent)
    def on_delivery(self, msg: p.DeliveryEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.DeliveriesEvent)
    def on_delivery_batch(self, msg: p.DeliveriesEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.UiEvent)
    def on_ui_event(self, msg: p.UiEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.ConversationUpdatedEvent)
    def on_conversation_updated(self, msg: p.ConversationUpdatedEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.ViewRefreshEvent)
    def on_view_refresh(self, msg: p.ViewRefreshEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.SurfaceEvent)
    def on_surface_event(self, msg: p.SurfaceEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.SurfaceClosedEvent)
    def on_surface_closed(self, msg: p.SurfaceClosedEvent, env: Envelope) -> None:
        self._enqueue(msg)

    @handles(p.InteractionUpdatedEvent)
    def on_interaction_updated(self, msg: p.InteractionUpdatedEvent, env: Envelope) -> None:
        self._context.ui._updated(msg.interaction)  # a `wait` (maybe in a hook) goes on now
        self._enqueue(msg)


def _deliveries_in(event: p.DeliveryEvent | p.DeliveriesEvent) -> tuple[p.Delivery, ...]:
    return (event.delivery,) if isinstance(event, p.DeliveryEvent) else event.deliveries


def _takes_bursts(app: MiniApp) -> bool:
    # An app that keeps the default gets one `on_delivery` per event, each refused alone.
    return type(app).on_deliveries is not MiniApp.on_deliveries


def _the_app_in(module: Any) -> type[MiniApp]:
    """The one MiniApp class a package exports with an `app_info` (a development app)."""
    found = {
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, MiniApp)
        and getattr(value, "app_info", None) is not None
    }
    if len(found) != 1:
        raise LineUpError(ErrorCode.APP_NOT_INSTALLED, f"{module.__name__}: no single MiniApp")
    return found.pop()


async def _dispatch(app: MiniApp, event: Message, context: AppContext) -> None:
    if isinstance(event, p.SessionDataEvent):
        await context.session_data._updated(event)
    elif isinstance(event, p.UiEvent):
        await app.on_ui_event(event)
    elif isinstance(event, p.ConversationUpdatedEvent):
        await app.on_conversation_updated(event)
    elif isinstance(event, p.ViewRefreshEvent):
        await app.on_view_refresh()
    elif isinstance(event, p.ToolCancelledEvent):
        await app.on_tool_cancelled(event.call_id, event.code)
    elif isinstance(event, p.InteractionUpdatedEvent):
        await app.on_interaction_updated(event.interaction)
    elif isinstance(event, p.SurfaceEvent):
        await app.on_surface_event(event)
    elif isinstance(event, p.SurfaceClosedEvent):
        await app.on_surface_closed(event)
