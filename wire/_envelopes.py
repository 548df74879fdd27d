"""The `lineup.v1` wire envelope (DESIGN §12) as models: one union per direction, and builders.

Theory of operation
-------------------
Every envelope shares one header (`v`, `id`, `type`, `conversation_id`, optional `app_scope`
and `instance_id`, `sender`, `timestamp`, optional `correlation`, and the `seq` the AppServer
adds when it relays) and carries one typed payload, chosen by `type`. `AgentEnvelope` is what
an Agent may send a client; `ClientEnvelope` what a client sends the Agent. Each has one
module-level `TypeAdapter`. The builders are the only way the runtime, the reference Agent,
the drill and the bench make an envelope; `dump` gives the JSON body that travels.

The Agent's payloads are lenient where the router answers a bad field with its own code
(a tool call's input is whatever JSON the Agent sent, and the tool pipeline says
`tool_input_invalid` of it); the client's payloads are exact, because we write them.

`agent_envelope` is the one parse of what an Agent sent (the transport's, once a document is
within the limits): its version, then its type, then its shape, each refusal with its stable
code. What it returns travels on as the model; nobody parses that envelope again.
"""

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from lineup.actors.kernel.errors import ErrorCode, LineUpError

__all__ = [
    "AGENT_ENVELOPE",
    "AGENT_TYPES",
    "APP_SESSION_CONTEXT",
    "CLIENT_ENVELOPE",
    "DISMISS",
    "INVENTORY",
    "MAX_POINTER",
    "PROGRESS",
    "RECEIPT",
    "RESULT",
    "TEXT",
    "TOOL_CALL",
    "TOOL_ERROR",
    "AgentEnvelope",
    "AppContextPayload",
    "AppContextText",
    "AppSessionContextEnvelope",
    "ClientEnvelope",
    "Correlation",
    "DismissEnvelope",
    "DismissPayload",
    "EnvelopeInvalid",
    "InventoryEnvelope",
    "InventoryPayload",
    "ProgressEnvelope",
    "ProgressPayload",
    "ReceiptEnvelope",
    "ReceiptPayload",
    "ReceiptStatus",
    "ResultEnvelope",
    "ResultPayload",
    "Sender",
    "TextEnvelope",
    "TextPayload",
    "ToolCallEnvelope",
    "ToolCallPayload",
    "ToolErrorEnvelope",
    "ToolErrorPayload",
    "agent_envelope",
    "dump",
    "envelope",
    "new_message_id",
    "utc_timestamp",
]

TEXT: Final = "lineup.v1.text"
TOOL_CALL: Final = "lineup.v1.tool.call"
DISMISS: Final = "lineup.v1.interaction.dismiss"
INVENTORY: Final = "lineup.v1.client.inventory"
RECEIPT: Final = "lineup.v1.tool.receipt"
PROGRESS: Final = "lineup.v1.tool.progress"
RESULT: Final = "lineup.v1.tool.result"
TOOL_ERROR: Final = "lineup.v1.tool.error"
APP_SESSION_OPENED: Final = "lineup.v1.app_session.opened"
APP_SESSION_CLOSED: Final = "lineup.v1.app_session.closed"
APP_SESSION_CONTEXT: Final = "lineup.v1.app_session.context"
AGENT_TYPES: Final = frozenset({TEXT, TOOL_CALL, DISMISS})

_Id = Annotated[str, Field(min_length=1, max_length=200)]
_OptionalId = Annotated[str | None, Field(max_length=200)]
ReceiptStatus = Literal[
    "accepted",
    "starting",
    "activation_ready",
    "activation_failed",
    "activation_cancelled",
    "rejected",
]


def utc_timestamp() -> str:
    """Now, as ISO 8601 UTC with milliseconds: `2024-05-01T12:00:00.000Z`."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_message_id(prefix: str = "msg") -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


MAX_POINTER: Final = 200  # characters of a refusal's JSON pointer


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Sender(_Model):
    # Whatever a peer claims; the router compares it with the session, it never trusts it.
    kind: str = Field(max_length=20)
    id: str = Field(max_length=200)


class Correlation(_Model):
    call_id: _OptionalId = None
    reply_to: _OptionalId = None
    inventory_revision: _OptionalId = None


class _Header(_Model):
    v: Literal[1] = 1
    id: _Id
    conversation_id: _OptionalId = None
    app_scope: _OptionalId = None
    instance_id: _OptionalId = None
    sender: Sender
    timestamp: str = Field(max_length=64)
    correlation: Correlation | None = None
    seq: int | None = None  # the AppServer's, on what it relays


# ---------------------------------------------------------------------------- payloads


class TextPayload(_Model):
    """A text. `app_session_context` (`{"app_session_id": str}`, the shape a tool call's is),
    from the Agent only: the text is a short result of that app sub-session, shown in its
    folded group in the main IM. Whatever JSON the Agent sent, as for a tool call's: the router
    says `app_session_invalid` of anything but an open sub-session of its own. Left out of the
    body when absent, so a plain text travels and is stored as before."""

    markdown: str
    app_session_context: Any = Field(default=None, exclude_if=lambda value: value is None)


class ToolCallPayload(_Model):
    model_config = ConfigDict(frozen=True, extra="allow")  # e.g. app_session_context

    call_id: _Id
    tool: str = ""
    inventory_revision: str = ""
    input: Any = None


class DismissPayload(_Model):
    control_id: _Id
    call_id: _Id


class InventoryPayload(_Model):
    revision: str
    tools: tuple[dict[str, Any], ...]


class ReceiptPayload(_Model):
    call_id: _Id
    status: ReceiptStatus
    code: str | None = None


class ProgressPayload(_Model):
    call_id: _Id
    progress: dict[str, Any]


class ResultPayload(_Model):
    call_id: _Id
    result: dict[str, Any]


class ToolErrorPayload(_Model):
    """A call's failure. `pointer`, for `tool_input_invalid`: the RFC 6901 JSON pointer of the
    first offending field of the input (`""`: the input as a whole). A path is not content, so
    it travels to the Agent; it is never written into an audit row or a log."""

    call_id: _Id
    code: str
    message: str | None = None
    pointer: Annotated[str, Field(max_length=MAX_POINTER)] | None = None


class AppSessionPayload(_Model):
    """An app sub-session opened or closed (seed 000 §7.3). `pending_interaction_call_ids`, on
    `closed` only: the Agent's questions of that sub-session still waiting, which stay open."""

    agent_id: str
    conversation_id: _Id
    app_session_id: _Id
    app_scope: str
    instance_id: _Id
    previous_app_session_id: _Id | None = None
    pending_interaction_call_ids: tuple[_Id, ...] | None = None


class AppContextText(_Model):
    type: Literal["text"] = "text"
    text: str


class AppContextPayload(_Model):
    """An MCP App's context for the Agent (its `ui/update-model-context`), in the app's
    sub-session: what the app says of itself, never the user's words. Each replaces the one
    before it of the same sub-session (the spec: "each update overwrites"); `revision` orders
    them (a later one is higher). `content` (text blocks) and `structured_content` are the
    app's, both empty to clear what it said before."""

    agent_id: str
    conversation_id: _Id
    app_session_id: _Id
    app_scope: str
    instance_id: _Id
    revision: int = Field(ge=0)
    content: tuple[AppContextText, ...] = ()
    structured_content: dict[str, Any] | None = None


# ---------------------------------------------------------------------------- envelopes


class TextEnvelope(_Header):
    type: Literal["lineup.v1.text"] = TEXT
    payload: TextPayload


class ToolCallEnvelope(_Header):
    type: Literal["lineup.v1.tool.call"] = TOOL_CALL
    payload: ToolCallPayload


class DismissEnvelope(_Header):
    type: Literal["lineup.v1.interaction.dismiss"] = DISMISS
    payload: DismissPayload


class InventoryEnvelope(_Header):
    type: Literal["lineup.v1.client.inventory"] = INVENTORY
    payload: InventoryPayload


class ReceiptEnvelope(_Header):
    type: Literal["lineup.v1.tool.receipt"] = RECEIPT
    payload: ReceiptPayload


class ProgressEnvelope(_Header):
    type: Literal["lineup.v1.tool.progress"] = PROGRESS
    payload: ProgressPayload


class ResultEnvelope(_Header):
    type: Literal["lineup.v1.tool.result"] = RESULT
    payload: ResultPayload


class ToolErrorEnvelope(_Header):
    type: Literal["lineup.v1.tool.error"] = TOOL_ERROR
    payload: ToolErrorPayload


class AppSessionOpenedEnvelope(_Header):
    type: Literal["lineup.v1.app_session.opened"] = APP_SESSION_OPENED
    payload: AppSessionPayload


class AppSessionClosedEnvelope(_Header):
    type: Literal["lineup.v1.app_session.closed"] = APP_SESSION_CLOSED
    payload: AppSessionPayload


class AppSessionContextEnvelope(_Header):
    type: Literal["lineup.v1.app_session.context"] = APP_SESSION_CONTEXT
    payload: AppContextPayload


AgentEnvelope = Annotated[
    TextEnvelope | ToolCallEnvelope | DismissEnvelope, Field(discriminator="type")
]
ClientEnvelope = Annotated[
    TextEnvelope
    | InventoryEnvelope
    | ReceiptEnvelope
    | ProgressEnvelope
    | ResultEnvelope
    | ToolErrorEnvelope
    | AppSessionOpenedEnvelope
    | AppSessionClosedEnvelope
    | AppSessionContextEnvelope,
    Field(discriminator="type"),
]
AGENT_ENVELOPE: Final[TypeAdapter[AgentEnvelope]] = TypeAdapter(AgentEnvelope)
CLIENT_ENVELOPE: Final[TypeAdapter[ClientEnvelope]] = TypeAdapter(ClientEnvelope)


class EnvelopeInvalid(LineUpError):
    """A document within the wire's limits that is no Agent envelope of this version: `code` is
    `unsupported_version`, `envelope_type_unknown` or `envelope_malformed`."""


def agent_envelope(document: dict[str, Any]) -> AgentEnvelope:
    """Parse one document from an Agent (within the limits) as the wire's `AgentEnvelope`:
    its version, then its type, then its shape (seed 004 §5's order). Raises
    `EnvelopeInvalid`; never pydantic's error."""
    version = document.get("v")
    if version != 1 or type(version) is not int:
        malformed = type(version) is not int
        code = ErrorCode.ENVELOPE_MALFORMED if malformed else ErrorCode.UNSUPPORTED_VERSION
        raise EnvelopeInvalid(code, "version")
    kind = document.get("type")
    if isinstance(kind, str) and kind not in AGENT_TYPES:
        raise EnvelopeInvalid(ErrorCode.ENVELOPE_TYPE_UNKNOWN, "type")
    try:
        return AGENT_ENVELOPE.validate_python(document)
    except ValidationError as exc:
        raise EnvelopeInvalid(ErrorCode.ENVELOPE_MALFORMED, "shape") from exc


_BY_TYPE: Final[dict[str, type[_Header]]] = {
    cls.model_fields["type"].default: cls
    for cls in (
        TextEnvelope,
        ToolCallEnvelope,
        DismissEnvelope,
        InventoryEnvelope,
        ReceiptEnvelope,
        ProgressEnvelope,
        ResultEnvelope,
        ToolErrorEnvelope,
        AppSessionOpenedEnvelope,
        AppSessionClosedEnvelope,
        AppSessionContextEnvelope,
    )
}


def envelope(
    kind: str,
    payload: BaseModel,
    *,
    conversation_id: str,
    sender_kind: str,
    sender_id: str,
    message_id: str | None = None,
    app_scope: str | None = None,
    call_id: str | None = None,
) -> _Header:
    """Build one envelope of `kind` (a `lineup.v1.*` type) around its typed `payload`."""
    cls = _BY_TYPE[kind]
    return cls.model_validate(
        {
            "id": message_id or new_message_id(),
            "conversation_id": conversation_id,
            "app_scope": app_scope,
            "sender": Sender(kind=sender_kind, id=sender_id),
            "timestamp": utc_timestamp(),
            "correlation": Correlation(call_id=call_id) if call_id is not None else None,
            "payload": payload,
        }
    )


def dump(model: BaseModel) -> dict[str, Any]:
    """The JSON body of an envelope as it travels: absent optionals are left out."""
    return model.model_dump(mode="json", exclude_none=True)
