"""A Surface's `agent_messages` (seed 004 §5.4 through the bridge, §6: "the same semantics,
restricted"): the bridge's `lineup/agent-messages/*`, checked here and asked of the router for
the Surface's own app and instance (`router.ui.surface.agent_messages`).

    lineup/agent-messages/list         {conversation_id?, after?, limit?}
                                       → {messages: [AgentMessage...], cursor}
    lineup/agent-messages/subscribe    {conversation_id?, types?, include_pending?}
                                       → {messages: [...what waits, with include_pending]}
    lineup/agent-messages/acknowledge  {message_id} → {acknowledged: bool}

`after` is a cursor `list` gave (`bridge_params_invalid` otherwise), `types` those an app may be
handed (`protocol.AGENT_MESSAGE_TYPES`). A subscription's news comes as
`hostbridge.surface.notify` (`agent_messages`); the Shell's bridge applies its filter and
hands each message to the Surface once (`lineup/notifications/agent-message`), acknowledging a
display message itself once handed (rule 3), as the SDK does once its handler took one.
"""

from typing import Annotated, Any, Final

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    field_validator,
    model_validator,
)

from lineup.actors.kernel import Bus, LineUpError
from lineup.actors.router.messages import SurfaceAgentMessagesReply, SurfaceAgentMessagesRequest
from lineup.sdk._protocol.agent_messages import MAX_LIST, check_types, seq_of_cursor

__all__ = ["AGENT_MESSAGE_METHODS", "AgentMessagesParams", "relay_agent_messages"]

ASK_TIMEOUT: Final = 5.0
_Name = Annotated[str, Field(min_length=1, max_length=200)]


class _Params(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class ListParams(_Params):
    conversation_id: _Name | None = None
    after: _Name | None = None
    limit: StrictInt = Field(default=100, ge=1, le=MAX_LIST)

    @field_validator("after")
    @classmethod
    def _a_cursor(cls, after: str | None) -> str | None:
        try:
            seq_of_cursor(after)
        except LineUpError as bad:
            raise ValueError("not a cursor list made") from bad
        return after


class SubscribeParams(_Params):
    conversation_id: _Name | None = None
    types: tuple[_Name, ...] | None = Field(default=None, max_length=16)
    include_pending: StrictBool = False

    @field_validator("types")
    @classmethod
    def _handed_types(cls, types: tuple[str, ...] | None) -> tuple[str, ...] | None:
        try:
            check_types(types)
        except LineUpError as bad:
            raise ValueError("a type no app is handed") from bad
        return types


class AcknowledgeParams(_Params):
    """One message (the Surface's `acknowledge`), or the display messages the Shell's bridge
    handed together (`message_ids`, its own request: one for a burst, not one apiece)."""

    message_id: _Name | None = None
    message_ids: tuple[_Name, ...] = Field(default=(), max_length=MAX_LIST)

    @model_validator(mode="after")
    def _names_one_way(self) -> "AcknowledgeParams":
        if (self.message_id is None) == (not self.message_ids):
            raise ValueError("a message_id or message_ids")
        return self


AgentMessagesParams = ListParams | SubscribeParams | AcknowledgeParams

# The bridge methods and their params models (`_surface_params.METHODS` takes them).
AGENT_MESSAGE_METHODS: Final[dict[str, type[_Params]]] = {
    "lineup/agent-messages/list": ListParams,
    "lineup/agent-messages/subscribe": SubscribeParams,
    "lineup/agent-messages/acknowledge": AcknowledgeParams,
}


async def relay_agent_messages(
    bus: Bus,
    app_scope: str,
    instance_id: str,
    surface_id: str,
    params: AgentMessagesParams,
    timeout: float = ASK_TIMEOUT,
) -> dict[str, Any]:
    """Ask the router for the Surface's request (its params checked whole: a cursor `list` did
    not make, a type no app is handed are `bridge_params_invalid`, audited by the relay); the
    JSON-RPC result. Raises the router's `LineUpError`."""
    if isinstance(params, ListParams):
        request = SurfaceAgentMessagesRequest(
            instance_id=instance_id,
            app_scope=app_scope,
            surface_id=surface_id,
            op="list",
            after_seq=seq_of_cursor(params.after),  # checked with the params
            limit=params.limit,
        )
    elif isinstance(params, SubscribeParams):
        request = SurfaceAgentMessagesRequest(
            instance_id=instance_id,
            app_scope=app_scope,
            surface_id=surface_id,
            op="subscribe",
            include_pending=params.include_pending,
            limit=MAX_LIST,
        )
    else:
        request = SurfaceAgentMessagesRequest(
            instance_id=instance_id,
            app_scope=app_scope,
            surface_id=surface_id,
            op="acknowledge",
            message_id=params.message_id,
            message_ids=params.message_ids,
        )
    reply = await bus.request(
        "router",
        request,
        expect=SurfaceAgentMessagesReply,
        timeout=timeout,
        retry=request.op != "acknowledge",  # listing and subscribing again change nothing
    )
    if isinstance(params, AcknowledgeParams):
        return {"acknowledged": reply.acknowledged}
    messages = [m.model_dump(mode="json") for m in reply.messages]
    if isinstance(params, SubscribeParams):
        return {"messages": messages}
    # The conversation is filtered after the cut, as the SDK's `list`: a page may come short.
    cursor = messages[-1]["cursor"] if messages else params.after
    if params.conversation_id is not None:
        messages = [m for m in messages if m["conversation_id"] == params.conversation_id]
    return {"messages": messages, "cursor": cursor}
