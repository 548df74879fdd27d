"""The MiniApp protocol: every message between a MiniApp process and the runtime.

A MiniApp may send only `router.sdk.*`, `focus.sdk.*` and `gateway.sdk.*` (the ACL table), and
receives only `miniapp.*`. Its `app_scope` is never a field here: the runtime derives it from
the channel the message arrived on, so a MiniApp cannot speak for another app.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from lineup.actors.kernel import Message
from lineup.facts.apps import AppSource, AppState
from lineup.facts.interactions import WAITING as WAITING_INTERACTION
from lineup.facts.interactions import InteractionState

__all__ = [
    "ARTIFACT_MEDIA_TYPES",
    "BUNDLE_MEDIA_TYPE",
    "MAX_ARTIFACT_BYTES",
    "MAX_ITEM_ORDER",
    "MAX_SURFACE_EVENT_BYTES",
    "MAX_SURFACE_STATE_BYTES",
    "MAX_VIEW_BYTES",
    "MAX_VIEW_ITEMS",
    "MAX_VIEW_ITEMS_PUT_BYTES",
    "MAX_VIEW_ITEM_BYTES",
    "UI_APP_OPENED",
    "AppOpenReply",
    "AppOpenRequest",
    "AppOperationInfo",
    "ArtifactContent",
    "ArtifactCreateRequest",
    "ArtifactInfo",
    "ArtifactListReply",
    "ArtifactListRequest",
    "ArtifactReadRequest",
    "CapabilityRequest",
    "CapabilityResult",
    "CatalogEntry",
    "CommandReceipt",
    "ContextReply",
    "ContextRequest",
    "ConversationHistoryReply",
    "ConversationHistoryRequest",
    "ConversationItem",
    "ConversationRetryRequest",
    "ConversationSendTextRequest",
    "ConversationUpdatedEvent",
    "DeliveriesEvent",
    "Delivery",
    "DeliveryEvent",
    "InboxAckManyReply",
    "InboxAckManyRequest",
    "InboxAckRequest",
    "InboxListReply",
    "InboxListRequest",
    "InteractionAskRequest",
    "InteractionCancelRequest",
    "InteractionGetRequest",
    "InteractionReceipt",
    "InteractionRecord",
    "InteractionUpdatedEvent",
    "LifecycleRequest",
    "RegistryAppInfo",
    "RegistryListReply",
    "RegistryListRequest",
    "SessionDataEvent",
    "SessionDataGetRequest",
    "SessionDataReplaceRequest",
    "SessionDataSnapshot",
    "SessionDataSubscribeRequest",
    "SurfaceCloseRequest",
    "SurfaceClosedEvent",
    "SurfaceEvent",
    "SurfaceOpenRequest",
    "SurfaceReply",
    "SurfaceUpdateRequest",
    "ToolAcceptRequest",
    "ToolCallEvent",
    "ToolCancelRequest",
    "ToolCancelledEvent",
    "ToolCompleteRequest",
    "ToolFailRequest",
    "ToolPendingReply",
    "ToolPendingRequest",
    "ToolProgressRequest",
    "UiEvent",
    "ViewItem",
    "ViewItemsPutRequest",
    "ViewRefreshEvent",
    "ViewUpdateRequest",
    "merge_patch",
]

Id = Annotated[str, Field(min_length=1, max_length=200)]
MAX_TEXT = 64 * 1024
MAX_BATCH = 500  # deliveries in one event, ids in one acknowledgement


class CommandReceipt(Message):
    """The runtime accepted (and persisted) a MiniApp's write. Refusals are error codes."""

    type: Literal["router.sdk.receipt"] = "router.sdk.receipt"
    id: Id
    seq: int | None = None
    changed: bool = True


# ---------------------------------------------------------------------------------- inbox


class Delivery(Message):
    """One persisted delivery to this app, normalised (the app never sees a wire envelope)."""

    type: Literal["miniapp.delivery"] = "miniapp.delivery"
    delivery_id: Id
    seq: int
    envelope: dict[str, Any]  # a RuntimeEnvelope (seed 004 §5.1) as JSON
    instance_id: Id | None = None  # the instance it is for; None: the app's conversation


class DeliveryEvent(Message):
    """Runtime → app: a new delivery is in your inbox (acknowledge it when handled)."""

    type: Literal["miniapp.inbox.delivery"] = "miniapp.inbox.delivery"
    delivery: Delivery


class DeliveriesEvent(Message):
    """Runtime → app: new deliveries are in your inbox, in `seq` order (one sync page's, or
    several's): a burst costs one event. Acknowledge them when handled."""

    type: Literal["miniapp.inbox.deliveries"] = "miniapp.inbox.deliveries"
    deliveries: tuple[Delivery, ...] = Field(min_length=1, max_length=MAX_BATCH)


class InboxListRequest(Message):
    """The app's deliveries in the current conversation for `instance_id` (seed 003 §3.1);
    None lists those addressed to no instance (the app's conversation-level inbox)."""

    type: Literal["router.sdk.inbox.list"] = "router.sdk.inbox.list"
    instance_id: Id | None = None
    after_seq: int = Field(default=0, ge=0)
    limit: int = Field(default=100, ge=1, le=500)


class InboxListReply(Message):
    type: Literal["router.sdk.inbox.list.reply"] = "router.sdk.inbox.list.reply"
    deliveries: tuple[Delivery, ...]


class InboxAckRequest(Message):
    """Remove a delivery of the inbox `instance_id` names (as for listing); a delivery of any
    other inbox is left alone and the receipt says `changed=False`."""

    type: Literal["router.sdk.inbox.ack"] = "router.sdk.inbox.ack"
    delivery_id: Id
    instance_id: Id | None = None


class InboxAckManyRequest(Message):
    """`InboxAckRequest` for several deliveries of one inbox, in one request and one
    transaction (a burst handled together is acknowledged together)."""

    type: Literal["router.sdk.inbox.ack_many"] = "router.sdk.inbox.ack_many"
    delivery_ids: tuple[Id, ...] = Field(min_length=1, max_length=MAX_BATCH)
    instance_id: Id | None = None


class InboxAckManyReply(Message):
    """The ids this request removed from the inbox (in request order); any other was not in
    that inbox (already acknowledged, another inbox's, or never delivered)."""

    type: Literal["router.sdk.inbox.ack_many.reply"] = "router.sdk.inbox.ack_many.reply"
    acked: tuple[Id, ...]


# ---------------------------------------------------------------------------------- conversation


class ConversationItem(Message):
    """One message of the app's conversation, as the IM shows it. `app_session_id`: the app
    sub-session an Agent's text is a short result of (the runtime checked it was open then)."""

    type: Literal["miniapp.conversation.item"] = "miniapp.conversation.item"
    message_id: Id
    seq: int
    author: Literal["agent", "user"]
    state: Literal["received", "pending", "sent", "failed"]
    markdown: str
    at: float
    app_session_id: Id | None = None


class ConversationSendTextRequest(Message):
    """Send the user's text to the Agent. Idempotent by `message_id` (the app chooses it)."""

    type: Literal["router.sdk.conversation.send_text"] = "router.sdk.conversation.send_text"
    message_id: Id
    markdown: str = Field(min_length=1, max_length=MAX_TEXT)


class ConversationRetryRequest(Message):
    type: Literal["router.sdk.conversation.retry"] = "router.sdk.conversation.retry"
    message_id: Id


class ConversationHistoryRequest(Message):
    type: Literal["router.sdk.conversation.history"] = "router.sdk.conversation.history"
    after_seq: int = Field(default=0, ge=0)
    limit: int = Field(default=200, ge=1, le=500)


class ConversationHistoryReply(Message):
    type: Literal["router.sdk.conversation.history.reply"] = "router.sdk.conversation.history.reply"
    items: tuple[ConversationItem, ...]


class ConversationUpdatedEvent(Message):
    """Runtime → app: an outbound message changed state (the AppServer took it, or refused)."""

    type: Literal["miniapp.conversation.updated"] = "miniapp.conversation.updated"
    message_id: Id
    state: Literal["pending", "sent", "failed"]
    code: str | None = None


# ---------------------------------------------------------------------------------- ui


# A view is small and replaced whole; what grows (a timeline's messages) travels as items, each
# on its own, so no frame on the way to the Shell grows with their number.
MAX_VIEW_BYTES = 64 * 1024  # a view document, compact UTF-8 JSON
# One item: a wire message's text (the wire's 256 KiB envelope limit) and the fields around it.
MAX_VIEW_ITEM_BYTES = 256 * 1024 + 8 * 1024
MAX_VIEW_ITEMS_PUT_BYTES = 384 * 1024  # the items of one put: well inside a MiniApp's frame
MAX_VIEW_ITEMS = 256  # items focus keeps per instance (the newest by order)
MAX_ITEM_ORDER = 2**53 - 1  # an order a JavaScript Shell reads back exactly


class ViewUpdateRequest(Message):
    """The app's whole view state for the Shell's trusted components (replace, never merge).
    Bounded: at most `MAX_VIEW_BYTES` (focus refuses a larger one, `invalid_arguments`)."""

    type: Literal["focus.sdk.view.update"] = "focus.sdk.view.update"
    instance_id: Id
    view: dict[str, Any]


class ViewItem(Message):
    """One entry of an instance's item list (a chat message): kept by id, shown by `order`
    (then id), replaced whole when put again. `fields` is what the trusted component shows."""

    type: Literal["focus.view.item"] = "focus.view.item"
    id: Id
    order: int = Field(ge=0, le=MAX_ITEM_ORDER)
    fields: dict[str, Any]
    # The runtime's stamp of this version (focus sets it; an app's is ignored): a Shell keeps
    # the version with the highest, whatever order versions reach it in.
    rev: int = Field(default=0, ge=0, le=MAX_ITEM_ORDER)


class ViewItemsPutRequest(Message):
    """Add or replace items of the instance's list (only an app trusted with a component
    that shows items may). At most `MAX_VIEW_ITEMS_PUT_BYTES` in all; `Ui.put_items` splits."""

    type: Literal["focus.sdk.view.items.put"] = "focus.sdk.view.items.put"
    instance_id: Id
    items: tuple[ViewItem, ...] = Field(min_length=1, max_length=MAX_VIEW_ITEMS)


class ViewRefreshEvent(Message):
    """Runtime → app: send your whole view again, from what the runtime holds now (its side
    lost its copy, or the conversation your history was read from changed)."""

    type: Literal["miniapp.view.refresh"] = "miniapp.view.refresh"


class UiEvent(Message):
    """Shell → app, through hostbridge and focus: a user action on the app's view."""

    type: Literal["miniapp.ui.event"] = "miniapp.ui.event"
    instance_id: Id
    event: dict[str, Any]


# The `UiEvent` focus sends an app for an instance the user opened from the Shell (a deep link
# `#open=<app_scope>`, or the default app at start): `{"kind": "app.opened"}`. No tool call
# comes for that instance, so the app shows what it offers without one (or nothing).
UI_APP_OPENED = "app.opened"


# ---------------------------------------------------------------------------------- tools


class ToolCallEvent(Message):
    """Runtime → app: a tool call for one of this app's instances (seed 003 §3.2). The input
    was already checked against the tool's input schema; the app completes it through the
    runtime, never by contacting the Agent."""

    type: Literal["miniapp.tool.call"] = "miniapp.tool.call"
    call_id: Id
    tool: Id
    instance_id: Id
    input: dict[str, Any]


class ToolCancelledEvent(Message):
    """Runtime → app: stop working on this call (expired, cancelled, or its app closed)."""

    type: Literal["miniapp.tool.cancelled"] = "miniapp.tool.cancelled"
    call_id: Id
    code: str


class ToolProgressRequest(Message):
    type: Literal["router.sdk.tool.progress"] = "router.sdk.tool.progress"
    call_id: Id
    progress: dict[str, Any]


class ToolCompleteRequest(Message):
    type: Literal["router.sdk.tool.complete"] = "router.sdk.tool.complete"
    call_id: Id
    result: dict[str, Any]


class ToolFailRequest(Message):
    type: Literal["router.sdk.tool.fail"] = "router.sdk.tool.fail"
    call_id: Id
    code: str = Field(min_length=1, max_length=100)
    message: str = Field(default="", max_length=1000)


class ToolCancelRequest(Message):
    """The app ends its own call as cancelled; `reason` is the code the Agent sees."""

    type: Literal["router.sdk.tool.cancel"] = "router.sdk.tool.cancel"
    call_id: Id
    reason: str = Field(min_length=1, max_length=100)


class ToolAcceptRequest(Message):
    """The app takes a call it was told of (pushed, or listed at its start), before it runs
    it: the router moves the call to `running` and answers; a call that is not the app's, or
    is decided already (cancelled, expired, its result submitted), is refused with its code,
    and the app does not run it. This is the one way a call reaches a handler: a call told
    twice is accepted (and run) once by the process that runs it."""

    type: Literal["router.sdk.tool.accept"] = "router.sdk.tool.accept"
    call_id: Id


class ToolPendingRequest(Message):
    """The app's calls handed to it and not decided yet, for it to accept when it starts: the
    ones never accepted, and the ones a previous process of the app accepted and did not
    finish. Read only: listing moves nothing."""

    type: Literal["router.sdk.tool.pending"] = "router.sdk.tool.pending"


class ToolPendingReply(Message):
    type: Literal["router.sdk.tool.pending.reply"] = "router.sdk.tool.pending.reply"
    calls: tuple[ToolCallEvent, ...]


# ---------------------------------------------------------------------------------- lifecycle


class LifecycleRequest(Message):
    """An app asks for focus changes; the runtime decides (seed 003 §3.3)."""

    type: Literal["focus.sdk.lifecycle"] = "focus.sdk.lifecycle"
    instance_id: Id
    action: Literal["foreground", "background", "close"]


# ---------------------------------------------------------------------------------- session data


class SessionDataGetRequest(Message):
    """The instance's app session data: `{data: None, revision: 0}` until first written."""

    type: Literal["focus.sdk.session_data.get"] = "focus.sdk.session_data.get"
    instance_id: Id


class SessionDataReplaceRequest(Message):
    """Replace the whole value; refused with `stale_revision` unless `expected_revision` is
    the current one (seed 004 §6.3: an old write never overwrites a newer one)."""

    type: Literal["focus.sdk.session_data.replace"] = "focus.sdk.session_data.replace"
    instance_id: Id
    data: dict[str, Any]
    expected_revision: int = Field(ge=0)


class SessionDataSubscribeRequest(Message):
    """Subscribe; the reply is the full snapshot at registration, then `SessionDataEvent`s
    follow with strictly increasing revisions."""

    type: Literal["focus.sdk.session_data.subscribe"] = "focus.sdk.session_data.subscribe"
    instance_id: Id


class SessionDataSnapshot(Message):
    type: Literal["focus.sdk.session_data.snapshot"] = "focus.sdk.session_data.snapshot"
    instance_id: Id
    data: dict[str, Any] | None
    revision: int


class SessionDataEvent(Message):
    type: Literal["miniapp.session_data.updated"] = "miniapp.session_data.updated"
    instance_id: Id
    data: dict[str, Any] | None
    revision: int


# ---------------------------------------------------------------------------------- navigation


class AppOpenRequest(Message):
    """An app asks the runtime to open another app (a new instance, brought forward). The
    runtime decides: a disabled or unknown app is refused with its code."""

    type: Literal["focus.sdk.apps.open"] = "focus.sdk.apps.open"
    app_scope: Id
    request_id: Id  # the asking app's idempotency key: a retry opens nothing new


class AppOpenReply(Message):
    type: Literal["focus.sdk.apps.open.reply"] = "focus.sdk.apps.open.reply"
    instance_id: Id
    app_scope: Id


# ---------------------------------------------------------------------------------- context


class ContextRequest(Message):
    """The runtime's facts about one of the app's own instances (seed 003 §3 `MiniAppContext`).
    Another app's instance, or one that is not live, is refused `app_instance_not_found`."""

    type: Literal["router.sdk.context"] = "router.sdk.context"
    instance_id: Id


class ContextReply(Message):
    """Injected by the runtime, never passed by the app: its scope, the instance, the
    conversation it belongs to (None before the runtime's first login), the instance's state,
    and `mode` (`im` for the chat, `app` for any other)."""

    type: Literal["router.sdk.context.reply"] = "router.sdk.context.reply"
    app_scope: Id
    instance_id: Id
    conversation_id: Id | None
    state: str = Field(max_length=40)
    mode: Literal["im", "app"]


# ---------------------------------------------------------------------------------- interactions

Presentation = Literal["default", "inline", "modal"]


class InteractionRecord(Message):
    """One standard interaction the app asked (seed 003 §3.4 `StandardInteractionRecord`), as
    the runtime holds it: `result` is the user's checked answer (from `submitted` on), or
    None; `terminal_code` the code of a cancelled, expired or failed one. `asked_by` says
    whether the app's process asked it or its Surface did (`lineup/ui/request`): an app acts
    on the answers to its own questions only."""

    type: Literal["miniapp.interaction.record"] = "miniapp.interaction.record"
    interaction_id: Id
    kind: Literal["notice", "choice", "confirm", "input"]
    state: InteractionState
    request: dict[str, Any]
    result: dict[str, Any] | None = None
    terminal_code: str | None = None
    instance_id: Id | None = None
    parent_call_id: Id | None = None
    presentation: Presentation = "default"
    created_at: float
    expires_at: float | None = None
    asked_by: Literal["app", "surface"] = "app"

    @property
    def is_open(self) -> bool:
        """Still waiting for the person (`pending` or `presented`): an answer, a cancel or an
        expiry may still end it."""
        return self.state in WAITING_INTERACTION


class InteractionAskRequest(Message):
    """Ask the user (`sdk.ui.request`): `request` is a standard interaction request
    (`lineup.sdk.interactions`). The owner is the app's channel and `instance_id`, one of its
    own live instances: nothing here can name another. `request_id` is the app's idempotency
    key (a retry asks nothing new); `parent_call_id`, if given, must be one of this instance's
    calls not yet decided. Refused with `tool_input_invalid` (a bad request or expiry),
    `app_instance_not_found`, `app_scope_mismatch`, `call_already_final`."""

    type: Literal["router.sdk.interaction.request"] = "router.sdk.interaction.request"
    instance_id: Id
    request_id: Id
    request: dict[str, Any]
    parent_call_id: Id | None = None
    presentation: Presentation = "default"
    expires_in_ms: int | None = Field(default=None, ge=1)


class InteractionGetRequest(Message):
    """One of the app's own interactions; any other is refused `interaction_not_found`."""

    type: Literal["router.sdk.interaction.get"] = "router.sdk.interaction.get"
    interaction_id: Id


class InteractionCancelRequest(Message):
    """Withdraw one of the app's own interactions not yet answered (`changed` False if it is
    final already); another's is refused `interaction_not_found`."""

    type: Literal["router.sdk.interaction.cancel"] = "router.sdk.interaction.cancel"
    interaction_id: Id
    reason: str = Field(default="cancelled_by_app", min_length=1, max_length=100)


class InteractionReceipt(Message):
    type: Literal["router.sdk.interaction.reply"] = "router.sdk.interaction.reply"
    interaction: InteractionRecord
    changed: bool = True


class InteractionUpdatedEvent(Message):
    """Runtime → app: one of its interactions has its answer, or ended (to that app only)."""

    type: Literal["miniapp.interaction.updated"] = "miniapp.interaction.updated"
    interaction: InteractionRecord


# ---------------------------------------------------------------------------------- surfaces
#
# A Surface is an instance's UI in a sandboxed iframe of the Shell (seed 003 §3.5, §5.3): the
# app's own web assets, declared by a `surface` entrypoint of its manifest. The runtime decides
# whether one opens, names it (`surface_id`), and carries everything between it and the app:
# the app sends the Surface its `state` (JSON merge patches, RFC 7396); the Surface sends the
# app the events its entrypoint declares. One Surface per instance at most.

MAX_SURFACE_STATE_BYTES = 64 * 1024  # the Surface's state, as compact UTF-8 JSON
MAX_SURFACE_EVENT_BYTES = 64 * 1024  # one event's `data`, likewise


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396, as the runtime applies a `SurfaceUpdateRequest`'s patch: `patch` applied to
    `target` (neither is changed; the result is new)."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class SurfaceOpenRequest(Message):
    """Open the instance's Surface (or get the one already open: idempotent). `entrypoint` is a
    `surface` entrypoint's id (None: the manifest's first). `state` is what the Surface is shown
    first; `tool_input` what its `ui/notifications/tool-input` carries. Refused with
    `surface_unavailable` (no such entrypoint, or its `surface_version` is not one this host
    runs), `app_instance_not_found` (not a live instance of the sender's),
    `envelope_too_large` (state over `MAX_SURFACE_STATE_BYTES`)."""

    type: Literal["focus.sdk.surface.open"] = "focus.sdk.surface.open"
    instance_id: Id
    entrypoint: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    state: dict[str, Any] = Field(default_factory=dict)
    tool_input: dict[str, Any] | None = None


class SurfaceUpdateRequest(Message):
    """Merge `patch` (RFC 7396) into the Surface's state; the Surface gets the new state as
    `lineup/notifications/state` with its revision. `tool_result`, if set, reaches it as
    `ui/notifications/tool-result`. Refused with `surface_not_found`, `envelope_too_large`."""

    type: Literal["focus.sdk.surface.update"] = "focus.sdk.surface.update"
    surface_id: Id
    patch: dict[str, Any] = Field(default_factory=dict)
    tool_result: dict[str, Any] | None = None


class SurfaceCloseRequest(Message):
    """Close the Surface (the Shell tears it down: `ui/resource-teardown`). A repeat is a
    receipt with `changed` False. Refused with `surface_not_found` for another app's."""

    type: Literal["focus.sdk.surface.close"] = "focus.sdk.surface.close"
    surface_id: Id


class SurfaceReply(Message):
    type: Literal["focus.sdk.surface.reply"] = "focus.sdk.surface.reply"
    surface_id: Id
    instance_id: Id
    entrypoint: str
    state_revision: int = Field(ge=0)
    open: bool = True
    changed: bool = True


class SurfaceEvent(Message):
    """Runtime → app: the Surface sent one of its entrypoint's declared events (`name`), its
    `data` checked for size by the Shell, the hostbridge and focus."""

    type: Literal["miniapp.surface.event"] = "miniapp.surface.event"
    instance_id: Id
    surface_id: Id
    name: Annotated[str, Field(min_length=1, max_length=128)]
    data: dict[str, Any] = Field(default_factory=dict)


class SurfaceClosedEvent(Message):
    """Runtime → app: the Surface is gone (`reason`: `closed` by the app, `instance_ended`)."""

    type: Literal["miniapp.surface.closed"] = "miniapp.surface.closed"
    instance_id: Id
    surface_id: Id
    reason: Literal["closed", "instance_ended"]


# ---------------------------------------------------------------------------------- artifacts
#
# Runtime-owned files an app makes (seed 004 §6.3): the gateway writes the bytes under the data
# dir and the store keeps the metadata; an app reads only its own. Content travels base64.

MAX_ARTIFACT_BYTES = 256 * 1024  # one artifact's content: its base64 fits a MiniApp's frame
BUNDLE_MEDIA_TYPE = "application/vnd.lineup.bundle"  # a signed `.lineup` app bundle (binary)
ARTIFACT_MEDIA_TYPES = frozenset(
    {"image/png", "application/json", "text/plain", "text/markdown", "text/csv", BUNDLE_MEDIA_TYPE}
)


class ArtifactInfo(Message):
    type: Literal["gateway.sdk.artifact.info"] = "gateway.sdk.artifact.info"
    artifact_id: Id
    app_scope: str
    instance_id: Id | None = None
    name: Annotated[str, Field(min_length=1, max_length=128)]
    media_type: str
    size: int = Field(ge=0)
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    created_at: float


class ArtifactCreateRequest(Message):
    """Make an artifact of `content_b64` (at most `MAX_ARTIFACT_BYTES` decoded), owned by the
    sender's app and `instance_id`. Idempotent by `request_id` (the app chooses it). Refused
    with `artifact_invalid` (media type not in `ARTIFACT_MEDIA_TYPES`, name with a path
    separator or a control character, not base64), `artifact_too_large`, `quota_exceeded` (the
    app's total), `app_instance_not_found`."""

    type: Literal["gateway.sdk.artifact.create"] = "gateway.sdk.artifact.create"
    request_id: Id
    instance_id: Id
    name: Annotated[str, Field(min_length=1, max_length=128)]
    media_type: Annotated[str, Field(min_length=1, max_length=100)]
    content_b64: str = Field(max_length=(MAX_ARTIFACT_BYTES * 4) // 3 + 4)


class ArtifactReadRequest(Message):
    """One of the sender's own artifacts, with its content. Another app's is
    `artifact_not_found`, exactly as a missing one."""

    type: Literal["gateway.sdk.artifact.read"] = "gateway.sdk.artifact.read"
    artifact_id: Id


class ArtifactContent(Message):
    type: Literal["gateway.sdk.artifact.content"] = "gateway.sdk.artifact.content"
    info: ArtifactInfo
    content_b64: str


class ArtifactListRequest(Message):
    """The sender's artifacts, newest first (of one instance, or all of the app's)."""

    type: Literal["gateway.sdk.artifact.list"] = "gateway.sdk.artifact.list"
    instance_id: Id | None = None
    limit: int = Field(default=100, ge=1, le=500)


class ArtifactListReply(Message):
    type: Literal["gateway.sdk.artifact.list.reply"] = "gateway.sdk.artifact.list.reply"
    artifacts: tuple[ArtifactInfo, ...]


# ---------------------------------------------------------------------------------- capabilities
#
# A system power asked for by purpose and input (seed 004 §6.3). The catalog, the input shapes
# and the order of the gateway's checks are in `lineup.sdk.capabilities`.

CapabilityStatusValue = Literal[
    "completed",
    "cancelled_by_user",
    "permission_denied",
    "unsupported_on_host",
    "policy_denied",
    "expired",
    "failed",
]


class CapabilityRequest(Message):
    """Ask for `capability` for `instance_id` (one of the sender's live instances), saying why
    (`purpose`: shown to the user as text, never audited) with `input` (the capability's input
    model; at most `MAX_CAPABILITY_INPUT_BYTES` as JSON). `request_id` (the app's) names the
    request in the audit and makes a repeat of a decided request answer the same result. The
    reply is always a `CapabilityResult`; only a malformed message is refused
    (`invalid_arguments`, `frame_malformed`)."""

    type: Literal["gateway.sdk.capability.request"] = "gateway.sdk.capability.request"
    request_id: Id
    instance_id: Id
    capability: Annotated[
        str, Field(pattern=r"^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)+$", max_length=100)
    ]
    purpose: Annotated[str, Field(min_length=1, max_length=300)]
    input: dict[str, Any] = Field(default_factory=dict)


class CapabilityResult(Message):
    """The one outcome of a capability request. `code` says why for every status but
    `completed` (an `ErrorCode` value: `capability_denied`, `app_disabled`,
    `foreground_required`, `rate_limited`, `provider_failed`, `invalid_arguments`, …);
    `output` is the provider's, for `completed` only, and holds no path."""

    type: Literal["gateway.sdk.capability.result"] = "gateway.sdk.capability.result"
    request_id: Id
    capability: str
    status: CapabilityStatusValue
    code: str | None = None
    output: dict[str, Any] | None = None


# ---------------------------------------------------------------------------------- registry
#
# What the App Registry MiniApp reads (`focus.sdk.registry.list`, reserved to it by the ACL).
# It changes the registry only through capabilities (`app.install`, `app.manage`), which the
# user confirms in the runtime's own prompt.


class AppOperationInfo(Message):
    """One operation on the registry, as it moves: requested → running → completed | failed
    (`code` then says why)."""

    type: Literal["focus.sdk.registry.operation"] = "focus.sdk.registry.operation"
    operation_id: Id
    app_scope: str
    kind: Literal[
        "install", "update", "enable", "disable", "rollback", "revoke", "remove", "set_default"
    ]
    state: Literal["requested", "running", "completed", "failed"]
    version: str | None = None  # the version it installs, rolls back to, or revokes
    from_version: str | None = None
    code: str | None = None
    created_at: float
    updated_at: float


class RegistryAppInfo(Message):
    type: Literal["focus.sdk.registry.app"] = "focus.sdk.registry.app"
    app_scope: str
    title: str
    version: str
    kind: str  # the manifest's kind: system, core, bundled-reference, installed
    source: Literal["system"] | AppSource
    enabled: bool
    # active: runs; unavailable: revoked with no predecessor, or its cache does not verify;
    # incompatible: its runtime_sdk asks what this host does not have (`facts/apps.py`).
    state: AppState
    predecessor: str | None = None  # the verified version a rollback goes back to
    key_id: str | None = None  # the signer's, for an installed app
    removable: bool
    operation: AppOperationInfo | None = None  # the latest one on this app
    capabilities: tuple[str, ...] = ()  # the manifest's requested_capabilities


class CatalogEntry(Message):
    """One bundle of the local catalog folder (`lineup run --catalog DIR`), as the App
    Registry offers it: `file` is its plain name in the folder (what `app.install
    {catalog_file}` names). `code` None: it would install now; else why not — the
    verification's refusal (`signature_invalid`, `digest_mismatch`, `unknown_key`, …) or
    `app_version_mismatch` when that version (or a newer one) is installed. A file whose
    header cannot be read has no app_scope, version or key_id."""

    type: Literal["focus.sdk.registry.catalog_entry"] = "focus.sdk.registry.catalog_entry"
    file: str
    app_scope: str | None
    version: str | None
    key_id: str | None
    size: int
    code: str | None


class RegistryListRequest(Message):
    type: Literal["focus.sdk.registry.list"] = "focus.sdk.registry.list"


class RegistryListReply(Message):
    type: Literal["focus.sdk.registry.list.reply"] = "focus.sdk.registry.list.reply"
    apps: tuple[RegistryAppInfo, ...]
    default_app: str  # the user's default app; `chat` when none is chosen
    operations: tuple[AppOperationInfo, ...] = ()  # the newest first
    catalog: tuple[CatalogEntry, ...] = ()  # the local catalog's bundles, by file name
