"""Tool calls (`store.tool_call.*`): the runtime's record of every Agent tool call (seed 003
§3.2 `RuntimeToolCallRecord`). Re-exported by `lineup.actors.store.messages`.

A call moves only by `ToolCallStepRequest`, one event of the machine in `machine` (DESIGN §5)
per request: its new state, its outbox rows (receipts, the one terminal row) and its audit row
in one transaction. Progress is a replayable protocol fact, not a step: one outbox row each,
idempotent by `outbox_id`. The store checks ownership (`expected_app_scope`,
`expected_instance_id`) before it looks at the state, so a caller never learns anything about a
call that is not its own.
"""

from typing import Any, Literal

from pydantic import Field, model_validator

from lineup.actors.kernel.messages import Message
from lineup.facts.tool_calls import BIRTH, CODED, ROWS, TABLE, Row, ToolCallEvent, ToolCallState

from .._fields import Id, Limit, Name, Seq, wire_kind

__all__ = [
    "OutboxRowIn",
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

ToolHandling = Literal["direct", "interactive", "launch", "foreground", "operation"]

Wire = dict[str, Any]
MAX_TIMEOUT_MS = 7 * 24 * 3600 * 1000
# The births no recorded call can take (`admit`, `ask`, `refuse`): without the facts they mean
# nothing.
_BIRTH_ONLY = frozenset(e for e in BIRTH if not any(e in moves for moves in TABLE.values()))


class ToolCallRow(Message):
    """One call as recorded. `seq` orders calls by arrival (paging); `deadline_at` is
    `created_at + timeout_ms`; `error_code` is set only on a failed, cancelled, expired or
    rejected call, `result` only on a submitted or completed one; `progress` is the latest
    reported."""

    type: Literal["store.tool_call.row"] = "store.tool_call.row"
    seq: int
    call_id: Id
    tool: Name
    inventory_revision: str  # "" only for a call recorded before schema 3 without one
    app_scope: Name
    instance_id: Id | None
    conversation_id: str  # likewise
    handling: ToolHandling
    state: ToolCallState
    input: dict[str, Any]
    result: dict[str, Any] | None
    error_code: Name | None
    progress: dict[str, Any] | None
    timeout_ms: int
    created_at: float
    updated_at: float
    deadline_at: float


class ToolCallFacts(Message):
    """What a call is, as it arrives: the fields a birth event records (`ToolCallStepRequest.new`).
    `deadline_at` is `created_at + timeout_ms`."""

    type: Literal["store.tool_call.facts"] = "store.tool_call.facts"
    tool: Name
    inventory_revision: Name
    app_scope: Name
    conversation_id: Id
    handling: ToolHandling
    input: dict[str, Any]
    timeout_ms: int = Field(ge=1, le=MAX_TIMEOUT_MS)


class OutboxRowIn(Message):
    """One outbox row a step writes: a receipt (`row` its status) or the call's terminal row."""

    type: Literal["store.tool_call.row_in"] = "store.tool_call.row_in"
    row: Row
    outbox_id: Id
    wire: Wire

    @model_validator(mode="after")
    def _wire(self) -> "OutboxRowIn":
        wire_kind(self.wire)
        return self


class ToolCallStepRequest(Message):
    """Move a call by one `event` of the machine (`facts/tool_calls.py`), in ONE transaction: its
    new state, what the event binds or decides (`instance_id`; the `result` of `submit`; the
    `code` of an ending), the outbox rows the event writes (`rows`, exactly `ROWS[event]` in
    that order; each written once) and one audit row (ids, states and codes, never a body).

    A birth event (`admit`, `hold`, `hand_over`, `ask`, `refuse`) carries the call's facts in `new`;
    for a call already recorded it is a repeat of its arrival (another envelope of the same call)
    and writes nothing (`created` False), whatever its event. Without `new` the call must exist.

    Idempotent: a step to the state the call is already in, whose rows are written, is answered
    `changed` False and writes nothing. Refused, writing nothing, with `app_scope_mismatch` /
    `app_instance_not_found` when the call is not the expected scope's / instance's (checked
    first, so a foreign caller learns nothing), `call_already_final` for an event on a decided
    call, `invalid_arguments` for an unknown call, a move the table lacks, a call bound to
    another instance, a result or wire over its bounds, or an `outbox_id` already used."""

    type: Literal["store.tool_call.step"] = "store.tool_call.step"
    call_id: Id
    event: ToolCallEvent
    new: ToolCallFacts | None = None
    instance_id: Id | None = None
    result: dict[str, Any] | None = None
    code: Name | None = None
    rows: tuple[OutboxRowIn, ...] = ()
    expected_app_scope: Name | None = None
    expected_instance_id: Id | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "ToolCallStepRequest":
        if tuple(r.row for r in self.rows) != ROWS[self.event]:
            raise ValueError(f"{self.event} writes the rows {ROWS[self.event]}")
        if (self.result is not None) != (self.event == "submit"):
            raise ValueError("a result goes with submit, and only with it")
        if self.event in ("settle", "settle_refused"):
            raise ValueError("only the outbox's acknowledgement settles a call")
        if (self.code is not None) != (self.event in CODED):
            raise ValueError(f"{self.event} {'needs' if self.event in CODED else 'takes no'} code")
        if self.new is not None and self.event not in BIRTH:
            raise ValueError(f"{self.event} is not how a call is born")
        if self.new is None and self.event in _BIRTH_ONLY:
            raise ValueError(f"{self.event} bears a call: it carries the call's facts in new")
        if self.event in ("hold", "hand_over", "activated") and self.instance_id is None:
            raise ValueError(f"{self.event} binds the call to its instance_id")
        return self


class ToolCallStepReply(Message):
    """`call` as it is now; `before` its state before the step (None: born by it); `changed`
    whether anything was written; `created` whether the step recorded the call;
    `operation_ended` whether the step ended the call's running deadline operation (the call
    ended another way: its app closed, it expired; or the user's interruption raced the
    operation's start)."""

    type: Literal["store.tool_call.step.reply"] = "store.tool_call.step.reply"
    call: ToolCallRow
    before: ToolCallState | None
    changed: bool
    created: bool = False
    operation_ended: bool = False


class ToolCallProgressRequest(Message):
    """Record a call's latest progress and queue it for the Agent (`outbox_id`, `wire`), in one
    transaction. Progress is a replayable protocol fact, not a result: no output schema, any
    number per call, none once the call is final (`call_already_final`). Idempotent by
    `outbox_id`, also after the call became final. Ownership as in `transition`."""

    type: Literal["store.tool_call.progress"] = "store.tool_call.progress"
    call_id: Id
    progress: dict[str, Any]
    outbox_id: Id
    wire: Wire
    expected_app_scope: Name
    expected_instance_id: Id

    @model_validator(mode="after")
    def _wire(self) -> "ToolCallProgressRequest":
        wire_kind(self.wire)
        return self


class ToolCallProgressReply(Message):
    type: Literal["store.tool_call.progress.reply"] = "store.tool_call.progress.reply"
    call_id: Id
    outbox_id: Id
    created: bool


class ToolCallGetRequest(Message):
    type: Literal["store.tool_call.get"] = "store.tool_call.get"
    call_id: Id


class ToolCallGetReply(Message):
    """`call` is None for a call never recorded."""

    type: Literal["store.tool_call.get.reply"] = "store.tool_call.get.reply"
    call: ToolCallRow | None


class ToolCallListRequest(Message):
    """Calls in `seq` order after `after_seq`, filtered by scope, instance and finality:
    `non_final_only`, none final; `undecided_only`, none decided either (a `submitted` call
    waits only for the AppServer's word on its result: nothing the router does moves it)."""

    type: Literal["store.tool_call.list"] = "store.tool_call.list"
    app_scope: Name | None = None
    instance_id: Id | None = None
    non_final_only: bool = False
    undecided_only: bool = False
    after_seq: Seq = 0
    limit: Limit = 100


class ToolCallListReply(Message):
    """May hold fewer than `limit` rows when they would not fit one frame; page on with
    `after_seq` = the last row's seq."""

    type: Literal["store.tool_call.list.reply"] = "store.tool_call.list.reply"
    calls: tuple[ToolCallRow, ...]
