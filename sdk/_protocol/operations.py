"""Deadline operations (seed 004 §6.3): an app asks the runtime to own the end of one of its
tool calls — at `ends_at`, or at the user's interruption — and the runtime writes that call's
one terminal result itself (`lineup.sdk.operations`). The app never completes such a call."""

from typing import Any, Literal

from pydantic import Field

from lineup.actors.kernel import Message
from lineup.facts.deadline_operations import DeadlineOperationState

from .common import Id

__all__ = [
    "OperationEndedEvent",
    "OperationInfo",
    "OperationInterruptReply",
    "OperationInterruptRequest",
    "OperationListReply",
    "OperationListRequest",
    "OperationReply",
    "OperationStartRequest",
]


class OperationInfo(Message):
    """One operation as its app sees it. `ends_at` is wall-clock seconds."""

    type: Literal["miniapp.operation.info"] = "miniapp.operation.info"
    operation_id: Id
    call_id: Id
    instance_id: Id
    state: DeadlineOperationState
    ends_at: float


class OperationStartRequest(Message):
    """Own the end of call `call_id` (this app's, taken, its instance in front): at `ends_at`
    the runtime submits `result` (checked now against the tool's output schema) as the call's
    result. Writes the call's `started` progress with it. A repeat answers the one started."""

    type: Literal["router.sdk.operation.start"] = "router.sdk.operation.start"
    call_id: Id
    ends_at: float
    result: dict[str, Any]


class OperationReply(Message):
    type: Literal["router.sdk.operation.reply"] = "router.sdk.operation.reply"
    operation: OperationInfo
    created: bool = True


class OperationInterruptRequest(Message):
    """The user interrupts: end `call_id` (or every open call of this app's tool `tool`) as
    cancelled by the user — with its operation if it has one, else before any starts (a call
    still on its way to its instance). Never waits for an instance's launch."""

    type: Literal["router.sdk.operation.interrupt"] = "router.sdk.operation.interrupt"
    call_id: Id | None = None
    tool: Id | None = None


class OperationInterruptReply(Message):
    type: Literal["router.sdk.operation.interrupt.reply"] = "router.sdk.operation.interrupt.reply"
    interrupted: tuple[Id, ...] = Field(max_length=500)


class OperationListRequest(Message):
    """This app's operations, the running ones only unless `all`."""

    type: Literal["router.sdk.operation.list"] = "router.sdk.operation.list"
    all: bool = False


class OperationListReply(Message):
    type: Literal["router.sdk.operation.list.reply"] = "router.sdk.operation.list.reply"
    operations: tuple[OperationInfo, ...]


class OperationEndedEvent(Message):
    """Runtime → app: one of its operations ended (`completed`, `interrupted`, `abandoned`);
    its call's terminal result is written. Told at least once while the app runs; an app that
    was down lists its operations at start."""

    type: Literal["miniapp.operation.ended"] = "miniapp.operation.ended"
    operation: OperationInfo
