"""The SDK's services: what an app's code calls on the runtime, each a thin, typed front on
the requests its channel carries (`AppContext` hands them to the app).

Every write is a request the runtime may refuse with a stable `ErrorCode`; nothing here keeps
state the runtime does not also keep, save `Ui`'s memory of answered interactions for `wait`.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, Protocol, TypeVar

import trio
from pydantic import BaseModel

from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.facts.interactions import FINAL

from . import protocol as p

__all__ = [
    "Apps",
    "Artifacts",
    "Capabilities",
    "Conversation",
    "Inbox",
    "Lifecycle",
    "Registry",
    "RuntimeChannel",
    "SessionData",
    "Surfaces",
    "Ui",
]

M = TypeVar("M", bound=Message)
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
MAX_KEPT_RECORDS: Final = 256  # answered interactions the app's `Ui.wait` remembers


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
    return record.result is not None or record.state in FINAL


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
