"""Deadline operations (`store.deadline_operation.*`): the record of a runtime operation bound
to one of an app's tool calls (`facts/deadline_operations.py`). Re-exported by
`lineup.actors.store.messages`.

An operation is started with the `started` progress of its call (one transaction: that progress
exists only if the operation does) and ended with its call's step (one transaction: the ending
and the call's one terminal row). Ownership is the channel's: the router names the app and the
instance the request comes from, and the store refuses a call that is not theirs before it looks
at anything else. `result` is the app's, kept only to be submitted at `ends_at`: never audited,
never listed to another app.
"""

from typing import Any, Literal

from pydantic import Field

from lineup.actors.kernel.messages import Message
from lineup.facts.deadline_operations import DeadlineOperationEvent, DeadlineOperationState

from .._fields import Id, Limit, Name
from ..tool_calls.messages import ToolCallProgressRequest, ToolCallRow, ToolCallStepRequest

__all__ = [
    "DeadlineOperationEndReply",
    "DeadlineOperationEndRequest",
    "DeadlineOperationListReply",
    "DeadlineOperationListRequest",
    "DeadlineOperationRow",
    "DeadlineOperationStartReply",
    "DeadlineOperationStartRequest",
]


class DeadlineOperationRow(Message):
    type: Literal["store.deadline_operation.row"] = "store.deadline_operation.row"
    operation_id: Id
    call_id: Id
    app_scope: Name
    instance_id: Id
    state: DeadlineOperationState
    ends_at: float
    result: dict[str, Any]
    created_at: float
    updated_at: float


class DeadlineOperationStartRequest(Message):
    """Start an operation for `call_id` (the app's, `running`, with its instance in front),
    ending at `ends_at` (after now, not after the call's own deadline), in ONE transaction with
    the call's `started` progress (`progress`, its outbox row) and an audit row. Idempotent by
    the call: a second start of a call that has one answers that one (`created` False) and
    writes nothing. Refused, writing nothing: `app_scope_mismatch` / `app_instance_not_found`
    (not the caller's call), `call_already_final` (decided), `invalid_arguments` (no such call,
    not taken yet, `ends_at` out of bounds, a result over its bound), `foreground_required`
    (its instance is not in front)."""

    type: Literal["store.deadline_operation.start"] = "store.deadline_operation.start"
    operation_id: Id
    call_id: Id
    app_scope: Name
    instance_id: Id
    ends_at: float
    result: dict[str, Any]
    progress: ToolCallProgressRequest


class DeadlineOperationStartReply(Message):
    type: Literal["store.deadline_operation.start.reply"] = "store.deadline_operation.start.reply"
    operation: DeadlineOperationRow
    created: bool


class DeadlineOperationEndRequest(Message):
    """End the operation of `call_id` by `event` (`fire`, `interrupt`), in ONE transaction with
    its call's step (`step`: `submit` with the operation's result, or `cancel`). If the call was
    decided meanwhile, `step` is not applied and the operation is `interrupted` (an
    interruption of a call the user's interruption ended first: it raced the start) or
    `abandoned` (closed, expired). An operation already ended is answered as it is (`changed`
    False). `app_scope`, when given, is the caller's: another app's operation is refused
    `app_scope_mismatch`."""

    type: Literal["store.deadline_operation.end"] = "store.deadline_operation.end"
    call_id: Id
    event: Literal["fire", "interrupt"]
    step: ToolCallStepRequest
    app_scope: Name | None = None


class DeadlineOperationEndReply(Message):
    """The operation as it is now, and its call after the step (None: the step was not
    applied)."""

    type: Literal["store.deadline_operation.end.reply"] = "store.deadline_operation.end.reply"
    operation: DeadlineOperationRow
    call: ToolCallRow | None
    changed: bool
    event: DeadlineOperationEvent | None = Field(default=None)


class DeadlineOperationListRequest(Message):
    """Operations by app (`app_scope`), call (`call_id`), and whether only running ones, oldest
    `ends_at` first."""

    type: Literal["store.deadline_operation.list"] = "store.deadline_operation.list"
    app_scope: Name | None = None
    call_id: Id | None = None
    running_only: bool = False
    limit: Limit = 100


class DeadlineOperationListReply(Message):
    type: Literal["store.deadline_operation.list.reply"] = "store.deadline_operation.list.reply"
    operations: tuple[DeadlineOperationRow, ...]
