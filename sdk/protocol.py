"""The MiniApp protocol: every message between a MiniApp process and the runtime.

A MiniApp may send only `router.sdk.*`, `focus.sdk.*` and `gateway.sdk.*` (the ACL table), and
receives only `miniapp.*`. Its `app_scope` is never a field here: the runtime derives it from
the channel the message arrived on, so a MiniApp cannot speak for another app.

The messages are defined per service of the SDK, one module each in `lineup.sdk._protocol`
(the inbox, the conversation, the view, tools, the app's instances, session data,
interactions, Surfaces, artifacts, capabilities, the registry); this module gathers them, and
it is the one authors and the runtime import (`lineup.sdk.protocol.X`, `sdk.X`).
"""

from __future__ import annotations

from ._protocol.artifacts import (
    ARTIFACT_MEDIA_TYPES,
    BUNDLE_MEDIA_TYPE,
    MAX_ARTIFACT_BYTES,
    ArtifactContent,
    ArtifactCreateRequest,
    ArtifactInfo,
    ArtifactListReply,
    ArtifactListRequest,
    ArtifactReadRequest,
)
from ._protocol.capabilities import (
    CapabilityRequest,
    CapabilityResult,
    CapabilityStatusValue,
)
from ._protocol.common import (
    CommandReceipt,
    Id,
)
from ._protocol.conversation import (
    MAX_TEXT,
    ConversationHistoryReply,
    ConversationHistoryRequest,
    ConversationItem,
    ConversationRetryRequest,
    ConversationSendTextRequest,
    ConversationUpdatedEvent,
)
from ._protocol.inbox import (
    MAX_BATCH,
    DeliveriesEvent,
    Delivery,
    DeliveryEvent,
    InboxAckManyReply,
    InboxAckManyRequest,
    InboxAckRequest,
    InboxListReply,
    InboxListRequest,
)
from ._protocol.instances import (
    AppOpenReply,
    AppOpenRequest,
    ContextReply,
    ContextRequest,
    LifecycleRequest,
)
from ._protocol.interactions import (
    InteractionAskRequest,
    InteractionCancelRequest,
    InteractionGetRequest,
    InteractionReceipt,
    InteractionRecord,
    InteractionUpdatedEvent,
    Presentation,
)
from ._protocol.registry import (
    AppOperationInfo,
    CatalogEntry,
    RegistryAppInfo,
    RegistryListReply,
    RegistryListRequest,
)
from ._protocol.session_data import (
    SessionDataEvent,
    SessionDataGetRequest,
    SessionDataReplaceRequest,
    SessionDataSnapshot,
    SessionDataSubscribeRequest,
)
from ._protocol.surfaces import (
    MAX_SURFACE_EVENT_BYTES,
    MAX_SURFACE_STATE_BYTES,
    SurfaceClosedEvent,
    SurfaceCloseRequest,
    SurfaceEvent,
    SurfaceOpenRequest,
    SurfaceReply,
    SurfaceUpdateRequest,
    merge_patch,
)
from ._protocol.tools import (
    ToolAcceptRequest,
    ToolCallEvent,
    ToolCancelledEvent,
    ToolCancelRequest,
    ToolCompleteRequest,
    ToolFailRequest,
    ToolPendingReply,
    ToolPendingRequest,
    ToolProgressRequest,
)
from ._protocol.ui import (
    MAX_ITEM_ORDER,
    MAX_VIEW_BYTES,
    MAX_VIEW_ITEM_BYTES,
    MAX_VIEW_ITEMS,
    MAX_VIEW_ITEMS_PUT_BYTES,
    UI_APP_OPENED,
    UiEvent,
    ViewItem,
    ViewItemsPutRequest,
    ViewRefreshEvent,
    ViewUpdateRequest,
)

__all__ = [
    "ARTIFACT_MEDIA_TYPES",
    "BUNDLE_MEDIA_TYPE",
    "MAX_ARTIFACT_BYTES",
    "MAX_BATCH",
    "MAX_ITEM_ORDER",
    "MAX_SURFACE_EVENT_BYTES",
    "MAX_SURFACE_STATE_BYTES",
    "MAX_TEXT",
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
    "CapabilityStatusValue",
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
    "Id",
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
    "Presentation",
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
