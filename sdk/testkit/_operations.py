"""The router's deadline operations, in memory (`app.operations`): started, checked as the
router and the store check them (the call is the app's and open, the result fits the tool's
output schema, `ends_at` is ahead), ended only by the runtime — `fire` (the test says the time
has come) or the app's `interrupt` — never by the app, whose `complete` of such a call is
refused `permission_denied`."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any, Protocol

from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.facts.deadline_operations import INTERRUPTED_CODE, DeadlineOperationState

from .. import protocol as p
from ..schema import validate


class _Call(Protocol):
    """A call as the fake runtime records it (`CallRecord`)."""

    call_id: str
    tool: str
    instance_id: str
    progress: list[dict[str, Any]]
    result: dict[str, Any] | None
    error_code: str | None
    output_schema: dict[str, Any] | None

    @property
    def final(self) -> bool: ...


class _Runtime(Protocol):
    """What of the fake runtime the operations read: the app's calls and instances' states."""

    app_scope: str
    states: dict[str, str]

    @property
    def calls(self) -> Mapping[str, _Call]: ...


__all__ = ["FakeOperations"]


class FakeOperations:
    """The app's operations by call id, and the results the runtime is to submit."""

    def __init__(self) -> None:
        self.operations: dict[str, p.OperationInfo] = {}
        self.results: dict[str, dict[str, Any]] = {}
        self.untold: list[p.OperationInfo] = []  # ends the app has not been told of yet

    def owns(self, call_id: str) -> bool:
        """Whether a running operation owns the call's end (the app may not end it)."""
        op = self.operations.get(call_id)
        return op is not None and op.state == "running"

    def answer(self, request: Message, runtime: _Runtime) -> Message | None:
        if isinstance(request, p.OperationStartRequest):
            return self._start(request, runtime)
        if isinstance(request, p.OperationInterruptRequest):
            return self._interrupt(request, runtime)
        if isinstance(request, p.OperationListRequest):
            ops = sorted(self.operations.values(), key=lambda op: op.ends_at)
            return p.OperationListReply(
                operations=tuple(op for op in ops if request.all or op.state == "running")
            )
        return None

    def _start(self, request: p.OperationStartRequest, runtime: _Runtime) -> p.OperationReply:
        record = runtime.calls.get(request.call_id)
        if record is None:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, request.call_id)
        if request.call_id in self.operations:
            return p.OperationReply(operation=self.operations[request.call_id], created=False)
        if record.final:
            raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, request.call_id)
        if record.output_schema is not None and validate(record.output_schema, request.result):
            raise LineUpError(ErrorCode.TOOL_OUTPUT_INVALID, request.call_id)
        if request.ends_at <= time.time():
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "ends_at is not ahead")
        if runtime.states.get(record.instance_id, "foreground") != "foreground":
            raise LineUpError(ErrorCode.FOREGROUND_REQUIRED, record.instance_id)
        op = p.OperationInfo(
            operation_id=f"lu:op:{uuid.uuid4().hex}",
            call_id=request.call_id,
            instance_id=record.instance_id,
            state="running",
            ends_at=request.ends_at,
        )
        self.operations[request.call_id] = op
        self.results[request.call_id] = dict(request.result)
        record.progress.append({"stage": "started", "operation_id": op.operation_id,
                                "ends_at": op.ends_at})  # fmt: skip
        return p.OperationReply(operation=op)

    def _interrupt(
        self, request: p.OperationInterruptRequest, runtime: _Runtime
    ) -> p.OperationInterruptReply:
        if (request.call_id is None) == (request.tool is None):
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "name a call or a tool")
        if request.tool is not None and request.tool.split(".", 1)[0] != runtime.app_scope:
            raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, request.tool)
        ended = []
        for record in list(runtime.calls.values()):
            if record.final or request.call_id not in (None, record.call_id):
                continue
            if request.tool not in (None, record.tool):
                continue
            record.error_code = INTERRUPTED_CODE
            self._end(record.call_id, "interrupted")
            ended.append(record.call_id)
        return p.OperationInterruptReply(interrupted=tuple(ended))

    def _end(self, call_id: str, state: DeadlineOperationState) -> None:
        op = self.operations.get(call_id)
        if op is not None and op.state == "running":
            ended = op.model_copy(update={"state": state})
            self.operations[call_id] = ended
            self.untold.append(ended)

    def fire(self, call_id: str, runtime: _Runtime) -> None:
        """`ends_at` has come: the call gets the operation's result (written by the runtime)."""
        op = self.operations.get(call_id)
        if op is None or op.state != "running":
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "no running operation for the call")
        runtime.calls[call_id].result = self.results[call_id]
        self._end(call_id, "completed")
