"""The store's whole public protocol: every request it serves and every reply it gives.

Every tag starts with `store.<area>.`; each area is writable only by the actor that owns it
(`STORE_GRANTS` in actors/kernel/acl.py), and no MiniApp reaches the store at all.
Requests that change state are idempotent by a natural key the caller chooses (`outbox_id`,
`(app_scope, delivery_id)`, a cursor `name`, a conversation `message_id`, a tool `call_id`, an
`instance_id`, a `bump_id`) or by their content (a state already reached, a revision already
written): a retry after a crash or a lost reply applies nothing twice and answers like the first
attempt did (`created=False` / `changed=False`, the same `seq`).

A conversation message's wire type is its `kind`: `type` is every message's protocol tag.

Bodies are opaque JSON objects to the store; their size is bounded by the frame limit, and the
JSON it keeps in records (tool input, result and progress, session data, manifests) by the limits
in `_fields`. List replies are bounded by `limit` and by a byte budget, and page with
`after_seq`.

The classes live in modules by area, each area's in its `messages` (`outbox`, `inbox`,
`conversations`, `cursors`, `audit`, `tool_calls`, `interactions`: the standard interactions,
`app_sessions`: app sub-sessions, `instances`: instances and the focus stack,
`apps`: session data, registry, inventory, `dead_letters`: what was quarantined,
`artifacts`: the metadata of the files the gateway keeps, `capabilities`: the user's capability
grants), the stats in
`_stats_messages`; this module is the one to import. `__all__` names every message, the state
literals (`ToolCallState`, `InstanceState`, …) the bounds a caller must respect before asking
(`MAX_FOCUS_STACK`), and which tool call and interaction states are final
(`FINAL_TOOL_CALL_STATES`, `FINAL_INTERACTION_STATES`).

Its names are exported lazily (`lineup._lazy`): a process that names one area's messages loads
that area's module alone (the hostbridge, which names `AppSessionState`, no longer loads ~180
classes it never sends), and a store message it receives without having loaded its module is
found by the bus all the same (`lineup.actors.kernel.messages.lookup` loads this protocol whole
on the first tag of the store's it does not know).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lineup._lazy import exports
from lineup.facts.interactions import FINAL as FINAL_INTERACTION_STATES
from lineup.facts.tool_calls import FINAL as FINAL_TOOL_CALL_STATES

if TYPE_CHECKING:
    from ._stats_messages import StoreStatsReply, StoreStatsRequest
    from .app_sessions.messages import (
        AppSessionCloseReply,
        AppSessionCloseRequest,
        AppSessionGetReply,
        AppSessionGetRequest,
        AppSessionListReply,
        AppSessionListRequest,
        AppSessionOpenReply,
        AppSessionOpenRequest,
        AppSessionRow,
        AppSessionState,
    )
    from .apps.messages import (
        AppEnabledSetReply,
        AppEnabledSetRequest,
        AppInstallRecordReply,
        AppInstallRecordRequest,
        AppOperationKind,
        AppOperationListReply,
        AppOperationListRequest,
        AppOperationPutReply,
        AppOperationPutRequest,
        AppOperationRecoverReply,
        AppOperationRecoverRequest,
        AppOperationRow,
        AppOperationState,
        AppRecord,
        AppRegistryGetReply,
        AppRegistryGetRequest,
        AppRegistryListReply,
        AppRegistryListRequest,
        AppRegistryPutReply,
        AppRegistryPutRequest,
        AppRemoveReply,
        AppRemoveRequest,
        AppRollbackReply,
        AppRollbackRequest,
        AppRow,
        AppSource,
        AppState,
        AppStateSetReply,
        AppStateSetRequest,
        InventoryRevisionBumpReply,
        InventoryRevisionBumpRequest,
        InventoryRevisionGetReply,
        InventoryRevisionGetRequest,
        RevocationAddReply,
        RevocationAddRequest,
        RevocationListReply,
        RevocationListRequest,
        SessionDataGetReply,
        SessionDataGetRequest,
        SessionDataReplaceReply,
        SessionDataReplaceRequest,
        SettingGetReply,
        SettingGetRequest,
        SettingPutReply,
        SettingPutRequest,
    )
    from .artifacts.messages import (
        ArtifactCreateReply,
        ArtifactCreateRequest,
        ArtifactGetReply,
        ArtifactGetRequest,
        ArtifactListReply,
        ArtifactListRequest,
        ArtifactRow,
        ArtifactUsageReply,
        ArtifactUsageRequest,
    )
    from .audit.messages import (
        AuditAppendReply,
        AuditAppendRequest,
        AuditQueryReply,
        AuditQueryRequest,
        AuditRecord,
    )
    from .capabilities.messages import (
        CapabilityGrantDeleteReply,
        CapabilityGrantDeleteRequest,
        CapabilityGrantListReply,
        CapabilityGrantListRequest,
        CapabilityGrantPutReply,
        CapabilityGrantPutRequest,
        CapabilityGrantRow,
    )
    from .capabilities.request_messages import (
        RETAINED_S,
        CapabilityRequestEndReply,
        CapabilityRequestEndRequest,
        CapabilityRequestListReply,
        CapabilityRequestListRequest,
        CapabilityRequestOpenReply,
        CapabilityRequestOpenRequest,
        CapabilityRequestRow,
    )
    from .conversations.messages import (
        ConversationHistoryReply,
        ConversationHistoryRequest,
        ConversationMessageReply,
        ConversationMessageRequest,
        ConversationReceiveManyReply,
        ConversationReceiveManyRequest,
        ConversationReceiveReply,
        ConversationReceiveRequest,
        ConversationSendReply,
        ConversationSendRequest,
        MessageDirection,
        MessageRow,
        MessageState,
    )
    from .cursors.messages import CursorGetReply, CursorGetRequest, CursorSetReply, CursorSetRequest
    from .dead_letters.messages import (
        DEAD_LETTER_SOURCES,
        DeadLetterListReply,
        DeadLetterListRequest,
        DeadLetterPutReply,
        DeadLetterPutRequest,
        DeadLetterRow,
        DeadLetterSummaryReply,
        DeadLetterSummaryRequest,
    )
    from .deadline_operations.messages import (
        DeadlineOperationEndReply,
        DeadlineOperationEndRequest,
        DeadlineOperationListReply,
        DeadlineOperationListRequest,
        DeadlineOperationRow,
        DeadlineOperationStartReply,
        DeadlineOperationStartRequest,
    )
    from .inbox.messages import (
        InboxAckManyReply,
        InboxAckManyRequest,
        InboxAckReply,
        InboxAckRequest,
        InboxListReply,
        InboxListRequest,
        InboxPutReply,
        InboxPutRequest,
        InboxRow,
    )
    from .instances.messages import (
        MAX_FOCUS_STACK,
        FocusStackGetReply,
        FocusStackGetRequest,
        FocusStackSetReply,
        FocusStackSetRequest,
        InstanceCommitReply,
        InstanceCommitRequest,
        InstanceListReply,
        InstanceListRequest,
        InstanceModeSet,
        InstanceMove,
        InstanceRecoverReply,
        InstanceRecoverRequest,
        InstanceRow,
        InstanceState,
        InstanceTransitionReply,
        InstanceTransitionRequest,
        InstanceUpsertReply,
        InstanceUpsertRequest,
    )
    from .interactions.messages import (
        InteractionCountReply,
        InteractionCountRequest,
        InteractionEvent,
        InteractionFacts,
        InteractionGetReply,
        InteractionGetRequest,
        InteractionKind,
        InteractionListReply,
        InteractionListRequest,
        InteractionRow,
        InteractionSource,
        InteractionState,
        InteractionStepReply,
        InteractionStepRequest,
        Presentation,
    )
    from .outbox.messages import (
        OutboxAckReply,
        OutboxAckRequest,
        OutboxAppendReply,
        OutboxAppendRequest,
        OutboxFailReply,
        OutboxFailRequest,
        OutboxPendingReply,
        OutboxPendingRequest,
        OutboxRetryReply,
        OutboxRetryRequest,
        OutboxRow,
        OutboxState,
    )
    from .tool_calls.messages import (
        OutboxRowIn,
        ToolCallFacts,
        ToolCallGetReply,
        ToolCallGetRequest,
        ToolCallListReply,
        ToolCallListRequest,
        ToolCallProgressReply,
        ToolCallProgressRequest,
        ToolCallRow,
        ToolCallState,
        ToolCallStepReply,
        ToolCallStepRequest,
        ToolHandling,
    )

__all__ = [
    "DEAD_LETTER_SOURCES",
    "FINAL_INTERACTION_STATES",
    "FINAL_TOOL_CALL_STATES",
    "MAX_FOCUS_STACK",
    "RETAINED_S",
    "AppEnabledSetReply",
    "AppEnabledSetRequest",
    "AppInstallRecordReply",
    "AppInstallRecordRequest",
    "AppOperationKind",
    "AppOperationListReply",
    "AppOperationListRequest",
    "AppOperationPutReply",
    "AppOperationPutRequest",
    "AppOperationRecoverReply",
    "AppOperationRecoverRequest",
    "AppOperationRow",
    "AppOperationState",
    "AppRecord",
    "AppRegistryGetReply",
    "AppRegistryGetRequest",
    "AppRegistryListReply",
    "AppRegistryListRequest",
    "AppRegistryPutReply",
    "AppRegistryPutRequest",
    "AppRemoveReply",
    "AppRemoveRequest",
    "AppRollbackReply",
    "AppRollbackRequest",
    "AppRow",
    "AppSessionCloseReply",
    "AppSessionCloseRequest",
    "AppSessionGetReply",
    "AppSessionGetRequest",
    "AppSessionListReply",
    "AppSessionListRequest",
    "AppSessionOpenReply",
    "AppSessionOpenRequest",
    "AppSessionRow",
    "AppSessionState",
    "AppSource",
    "AppState",
    "AppStateSetReply",
    "AppStateSetRequest",
    "ArtifactCreateReply",
    "ArtifactCreateRequest",
    "ArtifactGetReply",
    "ArtifactGetRequest",
    "ArtifactListReply",
    "ArtifactListRequest",
    "ArtifactRow",
    "ArtifactUsageReply",
    "ArtifactUsageRequest",
    "AuditAppendReply",
    "AuditAppendRequest",
    "AuditQueryReply",
    "AuditQueryRequest",
    "AuditRecord",
    "CapabilityGrantDeleteReply",
    "CapabilityGrantDeleteRequest",
    "CapabilityGrantListReply",
    "CapabilityGrantListRequest",
    "CapabilityGrantPutReply",
    "CapabilityGrantPutRequest",
    "CapabilityGrantRow",
    "CapabilityRequestEndReply",
    "CapabilityRequestEndRequest",
    "CapabilityRequestListReply",
    "CapabilityRequestListRequest",
    "CapabilityRequestOpenReply",
    "CapabilityRequestOpenRequest",
    "CapabilityRequestRow",
    "ConversationHistoryReply",
    "ConversationHistoryRequest",
    "ConversationMessageReply",
    "ConversationMessageRequest",
    "ConversationReceiveManyReply",
    "ConversationReceiveManyRequest",
    "ConversationReceiveReply",
    "ConversationReceiveRequest",
    "ConversationSendReply",
    "ConversationSendRequest",
    "CursorGetReply",
    "CursorGetRequest",
    "CursorSetReply",
    "CursorSetRequest",
    "DeadLetterListReply",
    "DeadLetterListRequest",
    "DeadLetterPutReply",
    "DeadLetterPutRequest",
    "DeadLetterRow",
    "DeadLetterSummaryReply",
    "DeadLetterSummaryRequest",
    "DeadlineOperationEndReply",
    "DeadlineOperationEndRequest",
    "DeadlineOperationListReply",
    "DeadlineOperationListRequest",
    "DeadlineOperationRow",
    "DeadlineOperationStartReply",
    "DeadlineOperationStartRequest",
    "FocusStackGetReply",
    "FocusStackGetRequest",
    "FocusStackSetReply",
    "FocusStackSetRequest",
    "InboxAckManyReply",
    "InboxAckManyRequest",
    "InboxAckReply",
    "InboxAckRequest",
    "InboxListReply",
    "InboxListRequest",
    "InboxPutReply",
    "InboxPutRequest",
    "InboxRow",
    "InstanceCommitReply",
    "InstanceCommitRequest",
    "InstanceListReply",
    "InstanceListRequest",
    "InstanceModeSet",
    "InstanceMove",
    "InstanceRecoverReply",
    "InstanceRecoverRequest",
    "InstanceRow",
    "InstanceState",
    "InstanceTransitionReply",
    "InstanceTransitionRequest",
    "InstanceUpsertReply",
    "InstanceUpsertRequest",
    "InteractionCountReply",
    "InteractionCountRequest",
    "InteractionEvent",
    "InteractionFacts",
    "InteractionGetReply",
    "InteractionGetRequest",
    "InteractionKind",
    "InteractionListReply",
    "InteractionListRequest",
    "InteractionRow",
    "InteractionSource",
    "InteractionState",
    "InteractionStepReply",
    "InteractionStepRequest",
    "InventoryRevisionBumpReply",
    "InventoryRevisionBumpRequest",
    "InventoryRevisionGetReply",
    "InventoryRevisionGetRequest",
    "MessageDirection",
    "MessageRow",
    "MessageState",
    "OutboxAckReply",
    "OutboxAckRequest",
    "OutboxAppendReply",
    "OutboxAppendRequest",
    "OutboxFailReply",
    "OutboxFailRequest",
    "OutboxPendingReply",
    "OutboxPendingRequest",
    "OutboxRetryReply",
    "OutboxRetryRequest",
    "OutboxRow",
    "OutboxRowIn",
    "OutboxState",
    "Presentation",
    "RevocationAddReply",
    "RevocationAddRequest",
    "RevocationListReply",
    "RevocationListRequest",
    "SessionDataGetReply",
    "SessionDataGetRequest",
    "SessionDataReplaceReply",
    "SessionDataReplaceRequest",
    "SettingGetReply",
    "SettingGetRequest",
    "SettingPutReply",
    "SettingPutRequest",
    "StoreStatsReply",
    "StoreStatsRequest",
    "ToolCallFacts",
    "ToolCallGetReply",
    "ToolCallGetRequest",
    "ToolCallListReply",
    "ToolCallListRequest",
    "ToolCallProgressReply",
    "ToolCallProgressRequest",
    "ToolCallRow",
    "ToolCallState",
    "ToolCallStepReply",
    "ToolCallStepRequest",
    "ToolHandling",
]

# Each area's module (`..`: this module is no package, its homes are its siblings) and the names
# it exports here: importing this module loads none of them, and reading a name loads its area's
# module alone.
_AREAS: dict[str, str] = {
    ".._stats_messages": "StoreStatsReply StoreStatsRequest",
    "..app_sessions.messages": (
        "AppSessionCloseReply AppSessionCloseRequest AppSessionGetReply AppSessionGetRequest "
        "AppSessionListReply AppSessionListRequest AppSessionOpenReply AppSessionOpenRequest "
        "AppSessionRow AppSessionState"
    ),
    "..apps.messages": (
        "AppEnabledSetReply AppEnabledSetRequest AppInstallRecordReply AppInstallRecordRequest "
        "AppOperationKind AppOperationListReply AppOperationListRequest AppOperationPutReply "
        "AppOperationPutRequest AppOperationRecoverReply AppOperationRecoverRequest "
        "AppOperationRow AppOperationState AppRecord AppRegistryGetReply AppRegistryGetRequest "
        "AppRegistryListReply AppRegistryListRequest AppRegistryPutReply AppRegistryPutRequest "
        "AppRemoveReply AppRemoveRequest AppRollbackReply AppRollbackRequest AppRow AppSource "
        "AppState AppStateSetReply AppStateSetRequest InventoryRevisionBumpReply "
        "InventoryRevisionBumpRequest InventoryRevisionGetReply InventoryRevisionGetRequest "
        "RevocationAddReply RevocationAddRequest RevocationListReply RevocationListRequest "
        "SessionDataGetReply SessionDataGetRequest SessionDataReplaceReply "
        "SessionDataReplaceRequest SettingGetReply SettingGetRequest SettingPutReply "
        "SettingPutRequest"
    ),
    "..artifacts.messages": (
        "ArtifactCreateReply ArtifactCreateRequest ArtifactGetReply ArtifactGetRequest "
        "ArtifactListReply ArtifactListRequest ArtifactRow ArtifactUsageReply ArtifactUsageRequest"
    ),
    "..audit.messages": (
        "AuditAppendReply AuditAppendRequest AuditQueryReply AuditQueryRequest AuditRecord"
    ),
    "..capabilities.messages": (
        "CapabilityGrantDeleteReply CapabilityGrantDeleteRequest CapabilityGrantListReply "
        "CapabilityGrantListRequest CapabilityGrantPutReply CapabilityGrantPutRequest "
        "CapabilityGrantRow"
    ),
    "..capabilities.request_messages": (
        "RETAINED_S CapabilityRequestEndReply CapabilityRequestEndRequest "
        "CapabilityRequestListReply CapabilityRequestListRequest CapabilityRequestOpenReply "
        "CapabilityRequestOpenRequest CapabilityRequestRow"
    ),
    "..conversations.messages": (
        "ConversationHistoryReply ConversationHistoryRequest ConversationMessageReply "
        "ConversationMessageRequest ConversationReceiveManyReply ConversationReceiveManyRequest "
        "ConversationReceiveReply ConversationReceiveRequest ConversationSendReply "
        "ConversationSendRequest MessageDirection MessageRow MessageState"
    ),
    "..cursors.messages": "CursorGetReply CursorGetRequest CursorSetReply CursorSetRequest",
    "..dead_letters.messages": (
        "DEAD_LETTER_SOURCES DeadLetterListReply DeadLetterListRequest DeadLetterPutReply "
        "DeadLetterPutRequest DeadLetterRow DeadLetterSummaryReply DeadLetterSummaryRequest"
    ),
    "..deadline_operations.messages": (
        "DeadlineOperationEndReply DeadlineOperationEndRequest DeadlineOperationListReply "
        "DeadlineOperationListRequest DeadlineOperationRow DeadlineOperationStartReply "
        "DeadlineOperationStartRequest"
    ),
    "..inbox.messages": (
        "InboxAckManyReply InboxAckManyRequest InboxAckReply InboxAckRequest InboxListReply "
        "InboxListRequest InboxPutReply InboxPutRequest InboxRow"
    ),
    "..instances.messages": (
        "MAX_FOCUS_STACK FocusStackGetReply FocusStackGetRequest FocusStackSetReply "
        "FocusStackSetRequest InstanceCommitReply InstanceCommitRequest InstanceListReply "
        "InstanceListRequest InstanceModeSet InstanceMove InstanceRecoverReply "
        "InstanceRecoverRequest InstanceRow InstanceState InstanceTransitionReply "
        "InstanceTransitionRequest InstanceUpsertReply InstanceUpsertRequest"
    ),
    "..interactions.messages": (
        "InteractionCountReply InteractionCountRequest InteractionEvent InteractionFacts "
        "InteractionGetReply InteractionGetRequest InteractionKind InteractionListReply "
        "InteractionListRequest InteractionRow InteractionSource InteractionState "
        "InteractionStepReply InteractionStepRequest Presentation"
    ),
    "..outbox.messages": (
        "OutboxAckReply OutboxAckRequest OutboxAppendReply OutboxAppendRequest OutboxFailReply "
        "OutboxFailRequest OutboxPendingReply OutboxPendingRequest OutboxRetryReply "
        "OutboxRetryRequest OutboxRow OutboxState"
    ),
    "..tool_calls.messages": (
        "OutboxRowIn ToolCallFacts ToolCallGetReply ToolCallGetRequest ToolCallListReply "
        "ToolCallListRequest ToolCallProgressReply ToolCallProgressRequest ToolCallRow "
        "ToolCallState ToolCallStepReply ToolCallStepRequest ToolHandling"
    ),
}
_HOMES: dict[str, str] = {name: home for home, names in _AREAS.items() for name in names.split()}


__getattr__ = exports(__name__, _HOMES)
