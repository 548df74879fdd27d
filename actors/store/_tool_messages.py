"""Tool calls (`store.tool_call.*`): the runtime's record of every Agent tool call (seed 003
§3.2 `RuntimeToolCallRecord`) and the protocol facts it sends back. Re-exported by `messages`.

A call moves by the table in `_tool_states` (DESIGN §5). Its terminal state, its result or code,
and the ONE outbox row that tells the Agent are written in one transaction (`finish`); receipts
and progress are replayable protocol facts, each one outbox row, idempotent by `outbox_id`.
The store checks ownership (`expected_app_scope`, `expected_instance_id`) before it looks at the
state, so a caller never learns anything about a call that is not its own.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from lineup.actors.kernel.messages import Message

from ._fields import Id, Limit, Name, Seq, wire_kind

__all__ = [
    "ReceiptStatus",
    "ToolCallFinalState",
    "ToolCallFinishReply",
    "ToolCallFinishRequest",
    "ToolCallGetReply",
    "ToolCallGetRequest",
    "ToolCallListReply",
    "ToolCallListRequest",
    "ToolCallOutcome",
    "ToolCallProgressReply",
    "ToolCallProgressRequest",
    "ToolCallReceiptReply",
    "ToolCallReceiptRequest",
    "ToolCallRecordReply",
    "ToolCallRecordRequest",
    "ToolCallRow",
    "ToolCallState",
    "ToolCallStep",
    "ToolCallTransitionReply",
    "ToolCallTransitionRequest",
    "ToolHandling",
]

ToolCallState = Literal[
    "received", "routing", "waiting_for_app", "running", "submitted",
    "completed", "failed", "cancelled", "expired", "rejected",
]  # fmt: skip
ToolCallFinalState = Literal["completed", "failed", "cancelled", "expired", "rejected"]
# What `finish` may decide: a final state, or `submitted` (a MiniApp's accepted result, which
# becomes `completed` once the AppServer acknowledged its outbox row, seed 000 §7.2).
ToolCallOutcome = Literal["submitted", "completed", "failed", "cancelled", "expired", "rejected"]
# The states `transition` may move a call to; the final ones are reached only by `finish`.
ToolCallStep = Literal["routing", "waiting_for_app", "running", "submitted"]
ToolHandling = Literal["direct", "interactive", "launch", "foreground", "operation"]
ReceiptStatus = Literal[
    "accepted", "starting", "activation_ready", "activation_failed", "activation_cancelled",
    "rejected",
]  # fmt: skip

Wire = dict[str, Any]
MAX_TIMEOUT_MS = 7 * 24 * 3600 * 1000


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


class ToolCallRecordRequest(Message):
    """Record a call as it arrives: `received`, or directly `rejected` with `code` for a call the
    router refused. A rejected record may carry its rejection for the Agent (`outbox_id` and
    `wire`), queued in the same transaction as its terminal outbox row.

    Idempotent by `call_id`: a repeat writes nothing and returns the recorded call (`created`
    False), whatever its fields. Refused with `invalid_arguments` for an input that is not
    strict JSON or over its bounds, or an `outbox_id` already used."""

    type: Literal["store.tool_call.record"] = "store.tool_call.record"
    call_id: Id
    tool: Name
    inventory_revision: Name
    app_scope: Name
    instance_id: Id | None = None
    conversation_id: Id
    handling: ToolHandling
    input: dict[str, Any]
    timeout_ms: int = Field(ge=1, le=MAX_TIMEOUT_MS)
    state: Literal["received", "rejected"] = "received"
    code: Name | None = None
    outbox_id: Id | None = None
    wire: Wire | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ToolCallRecordRequest:
        if (self.state == "rejected") != (self.code is not None):
            raise ValueError("a rejected call needs a code, a received one has none")
        if (self.outbox_id is None) != (self.wire is None):
            raise ValueError("outbox_id and wire go together")
        if self.wire is not None:
            if self.state != "rejected":
                raise ValueError("only a rejected record carries an outbox row")
            wire_kind(self.wire)
        return self


class ToolCallRecordReply(Message):
    type: Literal["store.tool_call.record.reply"] = "store.tool_call.record.reply"
    call: ToolCallRow
    created: bool


class ToolCallTransitionRequest(Message):
    """Move a call one legal step (`_tool_states`), optionally binding it to `instance_id` (once:
    a call bound to another instance is refused with `invalid_arguments`) and recording its
    latest `progress` (no outbox row; use `progress` for that). `code` says why, for the audit.

    Moving a call to the state it is in is a repeat: `changed` False unless it binds an instance
    or records new progress. Refused with `invalid_arguments` for an unknown call or an illegal
    step, `call_already_final` for a final call, and `app_scope_mismatch` /
    `app_instance_not_found` when the call is not the expected scope's / instance's."""

    type: Literal["store.tool_call.transition"] = "store.tool_call.transition"
    call_id: Id
    to_state: ToolCallStep
    expected_instance_id: Id | None = None
    expected_app_scope: Name | None = None
    instance_id: Id | None = None
    progress: dict[str, Any] | None = None
    code: Name | None = None


class ToolCallTransitionReply(Message):
    type: Literal["store.tool_call.transition.reply"] = "store.tool_call.transition.reply"
    call: ToolCallRow
    changed: bool


class ToolCallFinishRequest(Message):
    """Decide a call's outcome, in ONE transaction: the state, its `result` (submitted,
    completed) or `code` (any other), and one outbox row `outbox_id` carrying `wire` (kind
    `wire["type"]`), its terminal row.

    `submitted` is how a MiniApp's accepted result is recorded: the call is not final yet, but
    its outcome is decided — no finish, cancel or expiry touches it again (`call_already_final`);
    the outbox ack of its terminal row makes it `completed`, a permanent refusal of that row
    makes it `failed` with the refusal's code, each in the ack's or fail's own transaction.

    Exactly one terminal state and one terminal outbox row per call: a repeat of the finish that
    made the call final (same `outbox_id`, same state) writes nothing and answers `changed`
    False; any other finish of a final call is refused with `call_already_final` and writes
    nothing. Refused with `invalid_arguments` for an unknown call, an illegal step (a call not
    yet running cannot complete; a submitted one can only complete or fail), a result over its
    bounds or an `outbox_id` already used; ownership as in `transition`."""

    type: Literal["store.tool_call.finish"] = "store.tool_call.finish"
    call_id: Id
    to_state: ToolCallOutcome
    result: dict[str, Any] | None = None
    code: Name | None = None
    expected_app_scope: Name | None = None
    expected_instance_id: Id | None = None
    wire: Wire
    outbox_id: Id

    @model_validator(mode="after")
    def _consistent(self) -> ToolCallFinishRequest:
        if self.to_state in ("submitted", "completed"):
            if self.result is None or self.code is not None:
                raise ValueError(f"a {self.to_state} call has a result and no code")
        elif self.code is None or self.result is not None:
            raise ValueError(f"a {self.to_state} call has a code and no result")
        wire_kind(self.wire)
        return self


class ToolCallFinishReply(Message):
    type: Literal["store.tool_call.finish.reply"] = "store.tool_call.finish.reply"
    call: ToolCallRow
    changed: bool


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
    def _wire(self) -> ToolCallProgressRequest:
        wire_kind(self.wire)
        return self


class ToolCallProgressReply(Message):
    type: Literal["store.tool_call.progress.reply"] = "store.tool_call.progress.reply"
    call_id: Id
    outbox_id: Id
    created: bool


class ToolCallReceiptRequest(Message):
    """Queue a protocol receipt for a recorded call (seed 004 §7.3: accepted, starting,
    activation_ready | activation_failed | activation_cancelled, or rejected). Receipts do not
    move the call and are accepted in any state. Idempotent by `outbox_id`; refused with
    `invalid_arguments` for an unknown call or an `outbox_id` used for anything else."""

    type: Literal["store.tool_call.receipt"] = "store.tool_call.receipt"
    call_id: Id
    status: ReceiptStatus
    code: Name | None = None
    outbox_id: Id
    wire: Wire

    @model_validator(mode="after")
    def _wire(self) -> ToolCallReceiptRequest:
        wire_kind(self.wire)
        return self


class ToolCallReceiptReply(Message):
    type: Literal["store.tool_call.receipt.reply"] = "store.tool_call.receipt.reply"
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
    """Calls in `seq` order after `after_seq`, filtered by scope, instance and finality."""

    type: Literal["store.tool_call.list"] = "store.tool_call.list"
    app_scope: Name | None = None
    instance_id: Id | None = None
    non_final_only: bool = False
    after_seq: Seq = 0
    limit: Limit = 100


class ToolCallListReply(Message):
    """May hold fewer than `limit` rows when they would not fit one frame; page on with
    `after_seq` = the last row's seq."""

    type: Literal["store.tool_call.list.reply"] = "store.tool_call.list.reply"
    calls: tuple[ToolCallRow, ...]
