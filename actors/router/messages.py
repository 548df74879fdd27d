"""The router's whole public protocol. Every tag starts with `router.`.

`router.inbound.*` comes from the transport; `router.sdk.*` (from MiniApps) is declared in
`lineup.sdk.protocol`, the SDK's side of the contract. Besides these the router answers the
kernel's `kernel.health.request`.
"""

from typing import Annotated, Any, Final, Literal

from pydantic import Field, model_validator

from lineup.actors.kernel import ErrorCode, Message
from lineup.actors.kernel.control import HealthReply, HealthRequest
from lineup.facts.instances import InstanceState
from lineup.hostbridge.messages import AppSessionView, InteractionView
from lineup.sdk._protocol.agent_messages import MAX_LIST, AgentMessage
from lineup.wire import DismissEnvelope, TextEnvelope, ToolCallEnvelope

__all__ = [
    "AppSessionContinueReply",
    "AppSessionContinueRequest",
    "EnvelopeOutcome",
    "HealthReply",
    "HealthRequest",
    "InboundEnvelope",
    "InboundEnvelopesReply",
    "InboundEnvelopesRequest",
    "IndexedInstance",
    "InstanceEvent",
    "InstanceEventKind",
    "InstanceIndexEvent",
    "InstancesRecoveredEvent",
    "InteractionAnswerReply",
    "InteractionAnswerRequest",
    "InteractionsListReply",
    "InteractionsListRequest",
    "InventoryChangedEvent",
    "OutboxSettledEvent",
    "RefusedEnvelope",
    "SessionStartedEvent",
    "SurfaceAgentMessagesReply",
    "SurfaceAgentMessagesRequest",
    "SurfaceAskReply",
    "SurfaceAskRequest",
    "SurfaceContextReply",
    "SurfaceContextRequest",
]


class RefusedEnvelope(Message):
    """An envelope of a sync page, within the wire's limits, that is no Agent envelope of this
    version (`lineup.wire.agent_envelope` refused it: `unsupported_version`,
    `envelope_type_unknown`, `envelope_malformed`). It travels in its place so that the router
    answers and audits it as it does every refusal of its filter chain, in the page's order;
    it carries only what is safe to audit (its code, its id and type if sane), never its body."""

    type: Literal["router.inbound.refused"] = "router.inbound.refused"
    code: ErrorCode
    message_id: str | None = Field(default=None, max_length=200)
    message_type: str | None = Field(default=None, max_length=100)


# One envelope of a page as the transport hands it over: parsed once, by the wire's own model
# (`lineup.wire.AgentEnvelope`), or refused there with its code. The router parses nothing again.
InboundEnvelope = Annotated[
    TextEnvelope | ToolCallEnvelope | DismissEnvelope | RefusedEnvelope,
    Field(discriminator="type"),
]


class InboundEnvelopesRequest(Message):
    """Envelopes from one sync page, in order (`InboundEnvelope`). The reply comes once every
    accepted one is persisted: only then may the transport advance its cursor. `cursor`, the
    sync cursor past these envelopes, is written by the router in the transaction of the
    texts they end with, if they end with texts (`cursor_saved` in the reply); otherwise the
    transport writes it."""

    type: Literal["router.inbound.envelopes"] = "router.inbound.envelopes"
    conversation_id: str = Field(min_length=1, max_length=200)
    agent_id: str = Field(min_length=1, max_length=200)
    envelopes: tuple[InboundEnvelope, ...] = Field(max_length=500)
    cursor: str | None = Field(default=None, max_length=1000)


class EnvelopeOutcome(Message):
    type: Literal["router.inbound.outcome"] = "router.inbound.outcome"
    message_id: str | None
    status: Literal["accepted", "duplicate", "rejected"]
    code: str | None = None


class InboundEnvelopesReply(Message):
    type: Literal["router.inbound.envelopes.reply"] = "router.inbound.envelopes.reply"
    outcomes: tuple[EnvelopeOutcome, ...]
    cursor_saved: bool = False  # the request's cursor is persisted with its last texts


class OutboxSettledEvent(Message):
    """The transport's word on one outbox row: the AppServer took it, or refused it for good.
    What the row speaks for, as the store's acknowledgement named it: `message_id`, the
    conversation message it carries, with the app that sent it (`app_scope`) and that app's
    id for it (`client_id`, if it gave one); `call_id`, the call whose terminal row it is."""

    type: Literal["router.inbound.outbox_settled"] = "router.inbound.outbox_settled"
    outbox_id: str = Field(min_length=1, max_length=200)
    state: Literal["sent", "failed"]
    code: str | None = None
    message_id: str | None = Field(default=None, min_length=1, max_length=200)
    app_scope: str | None = Field(default=None, min_length=1, max_length=200)
    client_id: str | None = Field(default=None, min_length=1, max_length=200)
    call_id: str | None = Field(default=None, min_length=1, max_length=200)


class SessionStartedEvent(Message):
    """transport → router: logged in to the AppServer (publish the inventory now)."""

    type: Literal["router.inbound.session_started"] = "router.inbound.session_started"


class InventoryChangedEvent(Message):
    """focus → router: the inventory has a new revision (publish it to the Agent)."""

    type: Literal["router.inventory.changed"] = "router.inventory.changed"
    revision: str


InstanceEventKind = Literal["started", "ready", "ended", "failed"]


class InstanceEvent(Message):
    """focus → router: an instance's life moved on, already persisted (an event: focus waits on
    nothing, so router and focus never wait on each other).

    - `started`: it exists and its process is starting (calls for it that need the app wait);
    - `ready`: its app is up (held calls run, in arrival order);
    - `ended`: it was closed; `failed`: it failed (its app broke, or never came up).

    On `ended` or `failed` every call of the instance that is not decided converges exactly once:
    one still held for its activation to `rejected(activation_cancelled | activation_failed)`,
    any other to `cancelled(app_closed)`; a submitted result is still delivered. A router that
    missed the event (it was down) does the same for every ended instance when it starts."""

    type: Literal["router.instance.event"] = "router.instance.event"
    instance_id: str = Field(min_length=1, max_length=200)
    app_scope: str = Field(min_length=1, max_length=100)
    event: InstanceEventKind


# Instances an index names at most: past this focus sends an empty index (every lookup then
# asks focus, as a router without an index does).
MAX_INDEXED: Final = 1024


class IndexedInstance(Message):
    """One instance of focus's index (`InstanceIndexEvent`): its app and its state."""

    type: Literal["router.instance.indexed"] = "router.instance.indexed"
    instance_id: str = Field(min_length=1, max_length=200)
    app_scope: str = Field(min_length=1, max_length=100)
    state: InstanceState


class InstanceIndexEvent(Message):
    """focus → router: every instance on focus's stack, bottom first, with its state, as focus
    has just persisted it (only those of apps focus would find a call an instance of now).
    The router looks a call's instance up here instead of asking focus each time
    (`actors/router/_instance_index`); `version` orders the indexes of every focus process (a
    monotonic clock's ns), so an older one arriving late is dropped."""

    type: Literal["router.instance.index"] = "router.instance.index"
    version: int = Field(ge=0)
    instances: tuple[IndexedInstance, ...] = Field(default=(), max_length=MAX_INDEXED)


class InstancesRecoveredEvent(Message):
    """focus → router: focus (re)started with every instance's state persisted. The router
    converges the calls of every instance that has ended, as it does when it starts itself: an
    `ended` event lost with a focus that died just after persisting the end is made up here."""

    type: Literal["router.instance.recovered"] = "router.instance.recovered"


# ------------------------------------------------------------ the Shell's interactions (issue 12)
# hostbridge → router (`router.ui.*`): what the user does with a standard interaction's card.
# The views are the hostbridge's protocol types: the router fills them, the Shell shows them.


class InteractionsListRequest(Message):
    """hostbridge → router, when it (re)starts or a Shell connects: every interaction that is
    not final, the newest `recent` final ones, and the app sub-sessions (open ones, and the
    newest closed)."""

    type: Literal["router.ui.interactions.list"] = "router.ui.interactions.list"
    recent: int = Field(default=100, ge=0, le=500)


class InteractionsListReply(Message):
    type: Literal["router.ui.interactions.list.reply"] = "router.ui.interactions.list.reply"
    interactions: tuple[InteractionView, ...]
    sessions: tuple[AppSessionView, ...]


class InteractionAnswerRequest(Message):
    """hostbridge → router: the user answered (sender kind `user`). Only the id and the answer:
    the runtime takes everything else from the stored record. `answer` is one of
    `{"acknowledged": true}`, `{"action_ids": [...]}`, `{"approved": bool}`,
    `{"values": {field_id: value}}`, or `{"cancelled": true}` (an input's or a choice's cancel
    button). Refused with `interaction_not_found`, `answer_invalid`; an answer to a final
    interaction is answered with that interaction as it is (`changed` False), writing nothing."""

    type: Literal["router.ui.interaction.answer"] = "router.ui.interaction.answer"
    interaction_id: str = Field(min_length=1, max_length=200)
    answer: dict[str, Any]


class InteractionAnswerReply(Message):
    type: Literal["router.ui.interaction.answer.reply"] = "router.ui.interaction.answer.reply"
    interaction: InteractionView
    changed: bool


class AppSessionContinueRequest(Message):
    """hostbridge → router: the user chose "Continue" on an ended sub-session. A new instance of
    its app starts with a new sub-session that references the old one (seed 000 §7.3); the old
    one stays closed and nothing is appended to it. A second "Continue" of the same old one
    while its continuation is still open answers that continuation (and brings it forward).
    Refused `app_session_invalid` for an unknown or still open sub-session."""

    type: Literal["router.ui.app_session.continue"] = "router.ui.app_session.continue"
    app_session_id: str = Field(min_length=1, max_length=200)


class AppSessionContinueReply(Message):
    type: Literal["router.ui.app_session.continue.reply"] = "router.ui.app_session.continue.reply"
    session: AppSessionView  # the new sub-session


class SurfaceAskRequest(Message):
    """hostbridge → router: a Surface asks the user a standard interaction (the bridge's
    `lineup/ui/request`). `app_scope` is the app whose view the hostbridge relays for
    `instance_id` (focus confirms the instance is live and that app's); `surface_id` is the
    Surface that asked (the hostbridge checked it is that instance's open one). Recorded as
    that app's own question (`source` "miniapp", owned by the app and instance, no parent
    call), under the same per-app quota (`quota_exceeded`), and idempotent by (instance,
    `request_id`): a retry asks nothing new. Refused `tool_input_invalid` (not a standard
    request), `app_instance_not_found`, `quota_exceeded`."""

    type: Literal["router.ui.surface.ask"] = "router.ui.surface.ask"
    instance_id: str = Field(min_length=1, max_length=200)
    app_scope: str = Field(min_length=1, max_length=100)
    surface_id: str = Field(min_length=1, max_length=250)
    request: dict[str, Any]
    request_id: str = Field(min_length=1, max_length=64)


class SurfaceContextRequest(Message):
    """hostbridge → router: an MCP App's `ui/update-model-context` (the hostbridge checked it
    and its size). Told to the Agent as `lineup.v1.app_session.context` in the sub-session of
    `instance_id` (focus confirms it is live and `app_scope`'s), replacing what the app said
    before; idempotent by (instance, `request_id`). Refused `app_instance_not_found`,
    `app_session_invalid` (no open sub-session), `not_connected` (never logged in)."""

    type: Literal["router.ui.surface.context"] = "router.ui.surface.context"
    instance_id: str = Field(min_length=1, max_length=200)
    app_scope: str = Field(min_length=1, max_length=100)
    request_id: str = Field(min_length=1, max_length=250)
    content: tuple[str, ...] = ()  # the text blocks' texts
    structured_content: dict[str, Any] | None = None


class SurfaceContextReply(Message):
    type: Literal["router.ui.surface.context.reply"] = "router.ui.surface.context.reply"
    revision: int  # the update's, in its sub-session
    changed: bool  # False: a repeat, or the same as the app's last (nothing told)


class SurfaceAgentMessagesRequest(Message):
    """hostbridge → router: a Surface's `lineup/agent-messages/*` for its own app and instance
    (`_surface_messages`): `list` (after `after_seq`, at most `limit`), `subscribe` (the
    hostbridge is pushed its new messages; with `include_pending`, what waits now is
    answered), `acknowledge` (`message_id`, or `message_ids`: the display messages the Shell's
    bridge handed together). Refused `app_instance_not_found` (not a live instance of
    `app_scope`), audited."""

    type: Literal["router.ui.surface.agent_messages"] = "router.ui.surface.agent_messages"
    instance_id: str = Field(min_length=1, max_length=200)
    app_scope: str = Field(min_length=1, max_length=100)
    surface_id: str = Field(min_length=1, max_length=250)
    op: Literal["list", "subscribe", "acknowledge"]
    after_seq: int = Field(default=0, ge=0)
    limit: int = Field(default=100, ge=1, le=MAX_LIST)
    include_pending: bool = False
    message_id: str | None = Field(default=None, min_length=1, max_length=200)
    message_ids: tuple[Annotated[str, Field(min_length=1, max_length=200)], ...] = Field(
        default=(), max_length=MAX_LIST
    )

    @model_validator(mode="after")
    def _ack_names_one(self) -> "SurfaceAgentMessagesRequest":
        named = (self.message_id is not None) + bool(self.message_ids)
        if named != (1 if self.op == "acknowledge" else 0):
            raise ValueError("acknowledge, and only it, names its messages, one way")
        return self


class SurfaceAgentMessagesReply(Message):
    type: Literal["router.ui.surface.agent_messages.reply"] = (
        "router.ui.surface.agent_messages.reply"
    )
    messages: tuple[AgentMessage, ...] = ()
    acknowledged: bool = False


class SurfaceAskReply(Message):
    type: Literal["router.ui.surface.ask.reply"] = "router.ui.surface.ask.reply"
    interaction: InteractionView
    changed: bool  # False: a repeat of a request already recorded
