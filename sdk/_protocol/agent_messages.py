"""The Agent's messages as an app reads them (seed 004 §5.4, `AgentMessageAPI`), without I/O.

Theory of operation
-------------------
An Agent's message reaches an app only through the runtime's filter chain (seed 004 §5.3:
`lineup.actors.router._subscriptions`), which persists it in the app's inbox before anyone is
told. The SDK's `agent_messages` (`lineup.sdk._agent_messages`) is built on that inbox: a
`Delivery` becomes an `AgentMessage`, its place in the inbox an opaque `cursor`, and the app's
own subscribe filter (`AgentMessageFilter`, the chain's last step, which runs in the app's
process because the handlers are there) picks which handler hears it.

What must be acknowledged (rule 3): a display message (`DISPLAY_TYPES`: the Agent's text) is
acknowledged by the SDK once a handler took it; every other type (`lineup.tool.invoke`,
`lineup.app.state.patch`, whatever asks for business handling) stays in the inbox until the
app calls `acknowledge(message_id)`. `AGENT_MESSAGE_TYPES` are the types the runtime may ever
hand an app; any other is the runtime's own (inventory, receipts, dismissals) and never is.
"""

from collections.abc import Iterable
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from lineup.actors.kernel import ErrorCode, LineUpError

from .inbox import Delivery

__all__ = [
    "AGENT_MESSAGE_TYPES",
    "DISPLAY_TYPES",
    "MAX_LIST",
    "AgentMessage",
    "AgentMessageFilter",
    "AgentMessagePage",
    "cursor_of",
    "message_of",
    "seq_of_cursor",
]

TEXT: Final = "lineup.v1.text"
TOOL_INVOKE: Final = "lineup.tool.invoke"
STATE_PATCH: Final = "lineup.app.state.patch"
# Seed 004 §5.4: the types an app may subscribe to and be handed. Only the text reaches an
# inbox today (a tool call goes through the tool pipeline, `on_tool_call`); the others are the
# seed's names a manifest may already subscribe to.
AGENT_MESSAGE_TYPES: Final = frozenset({TEXT, TOOL_INVOKE, STATE_PATCH})
# Acknowledged by the SDK once a handler took it (rule 3); any other type explicitly.
DISPLAY_TYPES: Final = frozenset({TEXT})
MAX_LIST: Final = 500  # messages in one page (`protocol.MAX_BATCH`)
_CURSOR_PREFIX: Final = "c1."


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class AgentMessage(_Model):
    """One Agent message in this app's inbox, normalised (never a wire envelope). Handle it
    idempotently by `message_id` (rule 2): the runtime delivers at least once."""

    message_id: str
    type: str  # the Agent message's type, e.g. `lineup.v1.text`
    conversation_id: str | None
    instance_id: str | None  # the instance it is for; None: the app's conversation
    seq: int
    cursor: str  # pass as `after` to list what came after it
    requires_ack: bool  # True: stays in the inbox until `acknowledge(message_id)`
    payload: dict[str, Any]


class AgentMessagePage(_Model):
    """`list`'s answer: the messages in order, and the cursor to pass next (`after`): the last
    message's, or the one asked with when the page is empty."""

    messages: tuple[AgentMessage, ...]
    cursor: str | None


class AgentMessageFilter(_Model):
    """A subscription's filter, the SDK's step of the chain: a conversation (None: any), types
    (None: any), and whether what was already waiting at subscribe time is handed too."""

    conversation_id: str | None = Field(default=None, min_length=1, max_length=200)
    types: frozenset[str] | None = None
    include_pending: bool = False

    def matches(self, message: AgentMessage) -> bool:
        if self.conversation_id is not None and message.conversation_id != self.conversation_id:
            return False
        return self.types is None or message.type in self.types


def check_types(types: Iterable[str] | None) -> frozenset[str] | None:
    """The types a subscription names; raises `invalid_arguments` for one no app is handed."""
    if types is None:
        return None
    chosen = frozenset(types)
    if not chosen or not chosen <= AGENT_MESSAGE_TYPES:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "unknown agent message type")
    return chosen


def cursor_of(seq: int) -> str:
    return f"{_CURSOR_PREFIX}{seq}"


def seq_of_cursor(cursor: str | None) -> int:
    """The inbox position a cursor stands for (None: the start). Raises `invalid_arguments` for
    anything `cursor_of` did not make."""
    if cursor is None:
        return 0
    digits = cursor.removeprefix(_CURSOR_PREFIX)
    if digits == cursor or not digits.isascii() or not digits.isdigit() or len(digits) > 18:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "not an agent message cursor")
    return int(digits)


def message_of(delivery: Delivery) -> AgentMessage:
    """A delivery of the inbox as an `AgentMessage`."""
    envelope = delivery.envelope
    kind = envelope.get("type")
    scope = envelope.get("scope")
    conversation = scope.get("conversation_id") if isinstance(scope, dict) else None
    payload = envelope.get("payload")
    kind = kind if isinstance(kind, str) else ""
    return AgentMessage(
        message_id=delivery.delivery_id,
        type=kind,
        conversation_id=conversation if isinstance(conversation, str) else None,
        instance_id=delivery.instance_id,
        seq=delivery.seq,
        cursor=cursor_of(delivery.seq),
        requires_ack=kind not in DISPLAY_TYPES,
        payload=payload if isinstance(payload, dict) else {},
    )
