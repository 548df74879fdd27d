"""Standard interactions (`store.interaction.*`): the runtime's record of every question put to
the person (seed 003 §3.4 `StandardInteractionRecord`). Re-exported by
`lineup.actors.store.messages`. Written by the router only.

An interaction moves only by `InteractionStepRequest`, one event of `machine` per request, and
with it, in the SAME transaction, the step of the Agent's tool call it answers (`call_step`):
both or nothing. The store checks ownership (`expected_owner_scope`, `expected_instance_id`)
before it looks at anything else, so a foreign caller learns nothing
(`interaction_not_found`). The request and the result are opaque JSON to the store (the router
checked them with `lineup.sdk.interactions`), bounded by `MAX_REQUEST_BYTES` and
`MAX_RESULT_BYTES`.
"""

from typing import Any, Final, Literal

from pydantic import Field, model_validator

from lineup.actors.kernel.messages import Message
from lineup.facts.interactions import CODED, InteractionEvent, InteractionState

from .._fields import Id, Name
from ..tool_calls.messages import ToolCallRow, ToolCallStepRequest

__all__ = [
    "MAX_REQUEST_BYTES",
    "MAX_RESULT_BYTES",
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
    "Presentation",
]

MAX_REQUEST_BYTES: Final = 64 * 1024  # an interaction's request, compact UTF-8 JSON
MAX_RESULT_BYTES: Final = 64 * 1024  # its result

InteractionKind = Literal["notice", "choice", "confirm", "input"]
InteractionSource = Literal["agent_tool", "miniapp"]
Presentation = Literal["default", "inline", "modal"]


class _InteractionFacts(Message):
    """What an interaction is, as it is asked (`InteractionStepRequest.new`): its request as the
    router checked it, who owns it (`owner_scope`, `instance_id`: the Agent's interactions are
    `interaction`'s, a MiniApp's its own), where it belongs (`agent_id`, `conversation_id`,
    `app_session_id`), the Agent's `call_id` or the MiniApp's `parent_call_id`, and when it
    expires (None: never, a notice)."""

    interaction_id: Id
    kind: InteractionKind
    request: dict[str, Any]
    source: InteractionSource
    owner_scope: Name
    instance_id: Id | None = None
    agent_id: Id | None = None
    conversation_id: Id | None = None
    app_session_id: Id | None = None
    call_id: Id | None = None
    parent_call_id: Id | None = None
    surface_id: Id | None = None
    presentation: Presentation = "default"
    expires_at: float | None = None


class InteractionFacts(_InteractionFacts):
    """The facts a birth (`ask`) records."""

    type: Literal["store.interaction.facts"] = "store.interaction.facts"


class InteractionRow(_InteractionFacts):
    """One interaction as recorded: its facts, its `state`, the `result` that won (from
    `submitted` on) and the `terminal_code` of a cancelled, expired or failed one."""

    type: Literal["store.interaction.row"] = "store.interaction.row"
    state: InteractionState
    result: dict[str, Any] | None = None
    terminal_code: Name | None = None
    created_at: float
    updated_at: float


class InteractionStepRequest(Message):
    """Move an interaction by one `event` of the machine (`facts/interactions.py`), and, if
    given, its Agent's tool call by `call_step` (`ToolCallStepRequest`, with its rows), in ONE
    transaction with one audit row (ids, states and code; never the request or the result).

    `ask` carries the facts in `new` (a repeat of an ask for a recorded interaction writes
    nothing, `created` False); `answer` carries the `result`; `cancel`, `expire`, `fail` a
    `code`. If the interaction's step is a repeat or is refused, `call_step` is not applied.
    Refused, writing nothing, with `interaction_not_found` for an unknown interaction or one of
    another owner than `expected_owner_scope` / `expected_instance_id` (checked first),
    `interaction_final` for an event on a final one, `invalid_arguments` for a move the table
    lacks, a request or result over its bounds, a `call_step` for another call than the
    interaction's; and whatever the call step is refused with."""

    type: Literal["store.interaction.step"] = "store.interaction.step"
    interaction_id: Id
    event: InteractionEvent
    new: InteractionFacts | None = None
    result: dict[str, Any] | None = None
    code: Name | None = None
    call_step: ToolCallStepRequest | None = None
    expected_owner_scope: Name | None = None
    expected_instance_id: Id | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "InteractionStepRequest":
        if (self.new is not None) != (self.event == "ask"):
            raise ValueError("new goes with ask, and only with it")
        if self.new is not None and self.new.interaction_id != self.interaction_id:
            raise ValueError("new names another interaction")
        if (self.result is not None) != (self.event == "answer"):
            raise ValueError("a result goes with answer, and only with it")
        if (self.code is not None) != (self.event in CODED):
            raise ValueError(f"{self.event} {'needs' if self.event in CODED else 'takes no'} code")
        if self.event == "settle" and self.call_step is not None:
            raise ValueError("a call settles by its outbox row's acknowledgement")
        return self


class InteractionStepReply(Message):
    """`interaction` as it is now; `before` its state before the step (None: born by it);
    `changed` whether anything was written; `created` whether the step recorded it; `call` the
    Agent's call after its step (None without a `call_step`, or when it was not applied)."""

    type: Literal["store.interaction.step.reply"] = "store.interaction.step.reply"
    interaction: InteractionRow
    before: InteractionState | None
    changed: bool
    created: bool = False
    call: ToolCallRow | None = None


class InteractionGetRequest(Message):
    """One interaction by its id, or by the Agent's `call_id` (exactly one of them)."""

    type: Literal["store.interaction.get"] = "store.interaction.get"
    interaction_id: Id | None = None
    call_id: Id | None = None

    @model_validator(mode="after")
    def _one_key(self) -> "InteractionGetRequest":
        if (self.interaction_id is None) == (self.call_id is None):
            raise ValueError("name the interaction_id or the call_id")
        return self


class InteractionGetReply(Message):
    type: Literal["store.interaction.get.reply"] = "store.interaction.get.reply"
    interaction: InteractionRow | None


class InteractionListRequest(Message):
    """Every open (not final) interaction, oldest first, then (unless `open_only`) the newest
    `recent` final ones, newest first; filtered by `instance_id` and `app_session_id`."""

    type: Literal["store.interaction.list"] = "store.interaction.list"
    open_only: bool = False
    recent: int = Field(default=100, ge=0, le=1000)
    instance_id: Id | None = None
    app_session_id: Id | None = None


class InteractionListReply(Message):
    """May hold fewer rows than asked when they would not fit one frame (open ones first)."""

    type: Literal["store.interaction.list.reply"] = "store.interaction.list.reply"
    interactions: tuple[InteractionRow, ...]


class InteractionCountRequest(Message):
    """How many interactions still wait for their answer (pending or presented) of one
    `source`, and, for `miniapp`, of one owner app: what the router bounds (a quota), without
    reading their rows. An answered one (`submitted`) no longer counts."""

    type: Literal["store.interaction.count"] = "store.interaction.count"
    source: InteractionSource
    owner_scope: Name | None = None


class InteractionCountReply(Message):
    type: Literal["store.interaction.count.reply"] = "store.interaction.count.reply"
    open: int
