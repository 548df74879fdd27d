"""The SDK's services: what an app's code calls on the runtime, each a thin, typed front on
the requests its channel carries (`AppContext` hands them to the app).

Every write is a request the runtime may refuse with a stable `ErrorCode`; nothing here keeps
state the runtime does not also keep, save `Ui`'s memory of answered interactions for `wait`.

`Ui` (the view and the interactions: the one service with state) is `_ui`, the channel they
all call through `_channel`; this module has the others and gathers those two.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal

from lineup.actors.kernel import ErrorCode, LineUpError

from . import protocol as p
from ._channel import RuntimeChannel
from ._ui import Ui

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

_SURROGATE: Final = re.compile("[\ud800-\udfff]")


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
