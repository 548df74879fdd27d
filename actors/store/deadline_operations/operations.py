"""Deadline operations and the steps of their calls (`store.deadline_operation.*`).

The contract of every operation (`_rows`): one blocking function per request, run inside its
own savepoint of a group-committed transaction, so a request that raises after its first write
leaves nothing behind. A start writes the operation, its call's `started` progress
(`tool_call_progress`) and an audit row; an ending writes the operation's final state, its
call's step (`tool_call_step`, with the call's one terminal row) and an audit row. Audit rows
hold ids, states and codes, never the result.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from lineup.actors.kernel.errors import ErrorCode, LineUpError
from lineup.facts import deadline_operations as machine
from lineup.facts import tool_calls as calls

from .._db import Connection
from .._fields import MAX_RESULT_BYTES, bounded_json
from .._table import Served, read, write_as
from ..audit.messages import AuditRecord
from ..audit.operations import audit_append
from ..tool_calls.messages import ToolCallGetRequest, ToolCallRow
from ..tool_calls.operations import tool_call_get, tool_call_progress, tool_call_step
from .messages import (
    DeadlineOperationEndReply,
    DeadlineOperationEndRequest,
    DeadlineOperationListReply,
    DeadlineOperationListRequest,
    DeadlineOperationRow,
    DeadlineOperationStartReply,
    DeadlineOperationStartRequest,
)

__all__ = [
    "HANDLERS",
    "deadline_operation_end",
    "deadline_operation_list",
    "deadline_operation_start",
]

_COLUMNS: Final = (
    "operation_id", "call_id", "app_scope", "instance_id", "state", "ends_at", "result",
    "created_at", "updated_at",
)  # fmt: skip
_SELECT: Final = f"SELECT {', '.join(_COLUMNS)} FROM deadline_operations"


def _row(values: Sequence[Any]) -> DeadlineOperationRow:
    fields = dict(zip(_COLUMNS, values, strict=True))
    fields["result"] = json.loads(fields["result"])
    return DeadlineOperationRow.model_validate(fields)


def _of_call(conn: Connection, call_id: str) -> DeadlineOperationRow | None:
    rows = conn.execute(f"{_SELECT} WHERE call_id = ?", (call_id,)).fetchall()
    return _row(rows[0]) if rows else None


def _call(conn: Connection, call_id: str, now: float) -> ToolCallRow:
    call = tool_call_get(conn, ToolCallGetRequest(call_id=call_id), now).call
    if call is None:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "no such tool call")
    return call


def _audit(
    conn: Connection, now: float, actor: str, op: DeadlineOperationRow, code: str | None = None
) -> None:
    record = AuditRecord(
        event=f"deadline_operation.{op.state}",
        actor=actor,
        peer=op.app_scope,
        code=code,
        subject_id=op.call_id,
        at=now,
    )
    audit_append(conn, [record], now)


def _set_state(
    conn: Connection, call_id: str, state: machine.DeadlineOperationState, now: float
) -> DeadlineOperationRow:
    conn.execute(
        "UPDATE deadline_operations SET state = ?, updated_at = ? WHERE call_id = ?",
        (state, now, call_id),
    )
    found = _of_call(conn, call_id)
    assert found is not None
    return found


def deadline_operation_start(
    conn: Connection, req: DeadlineOperationStartRequest, now: float, *, actor: str = "store"
) -> DeadlineOperationStartReply:
    call = _call(conn, req.call_id, now)
    # Ownership first: a foreign caller learns nothing about the call.
    if call.app_scope != req.app_scope:
        raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, "the call belongs to another app")
    if call.instance_id != req.instance_id:
        raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, "the call is not this instance's")
    existing = _of_call(conn, req.call_id)
    if existing is not None:
        return DeadlineOperationStartReply(operation=existing, created=False)
    if call.state in calls.DECIDED:
        raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, f"call is already {call.state}")
    if call.state != "running":
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "the call is not taken by its app")
    if not now < req.ends_at <= min(call.deadline_at, now + machine.MAX_OPERATION_S):
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "ends_at is not within the call's time")
    found = conn.execute(
        "SELECT state FROM instances WHERE instance_id = ?", (req.instance_id,)
    ).fetchall()
    if not found or found[0][0] != "foreground":
        raise LineUpError(ErrorCode.FOREGROUND_REQUIRED, "the instance is not in front")
    machine.move(None, "start")
    result = bounded_json(req.result, max_bytes=MAX_RESULT_BYTES, what="result")
    if req.progress.call_id != req.call_id:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "the progress is another call's")
    tool_call_progress(conn, req.progress, now, actor=actor)
    conn.execute(
        "INSERT INTO deadline_operations (operation_id, call_id, app_scope, instance_id, state,"
        " ends_at, result, created_at, updated_at) VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?)",
        (req.operation_id, req.call_id, req.app_scope, req.instance_id, req.ends_at, result,
         now, now),
    )  # fmt: skip
    op = _of_call(conn, req.call_id)
    assert op is not None
    _audit(conn, now, actor, op)
    return DeadlineOperationStartReply(operation=op, created=True)


def deadline_operation_end(
    conn: Connection, req: DeadlineOperationEndRequest, now: float, *, actor: str = "store"
) -> DeadlineOperationEndReply:
    op = _of_call(conn, req.call_id)
    if op is None:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "no operation for that call")
    if req.app_scope is not None and op.app_scope != req.app_scope:
        raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, "the operation belongs to another app")
    if op.state in machine.FINAL:
        return DeadlineOperationEndReply(operation=op, call=None, changed=False)
    if req.step.call_id != req.call_id or req.step.event != machine.CALL_STEP[req.event]:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, f"{req.event} is not that step")
    call = _call(conn, req.call_id, now)
    if call.state in calls.DECIDED:  # it ended first: nothing more to write for it
        # Ended by the same interruption (which found no operation yet, as this one started),
        # the operation is interrupted; any other way (closed, expired), abandoned.
        by_user = req.event == "interrupt" and call.error_code == machine.INTERRUPTED_CODE
        event: machine.DeadlineOperationEvent = "interrupt" if by_user else "abandon"
        ended = _set_state(conn, req.call_id, machine.move(op.state, event), now)
        _audit(conn, now, actor, ended, code=call.error_code)
        return DeadlineOperationEndReply(operation=ended, call=None, changed=True, event=event)
    after = machine.move(op.state, req.event)
    stepped = tool_call_step(conn, req.step, now, actor=actor, by_operation=True)
    ended = _set_state(conn, req.call_id, after, now)
    _audit(conn, now, actor, ended, code=req.step.code)
    return DeadlineOperationEndReply(
        operation=ended, call=stepped.call, changed=True, event=req.event
    )


def deadline_operation_list(
    conn: Connection, req: DeadlineOperationListRequest, now: float
) -> DeadlineOperationListReply:
    rows = conn.execute(
        f"{_SELECT} WHERE (?1 IS NULL OR app_scope = ?1) AND (?2 IS NULL OR call_id = ?2)"
        " AND (NOT ?3 OR state = 'running') ORDER BY ends_at, operation_id LIMIT ?4",
        (req.app_scope, req.call_id, req.running_only, req.limit),
    ).fetchall()
    return DeadlineOperationListReply(operations=tuple(_row(values) for values in rows))


# What the store serves from this area: request, operation, access (`_table`).
HANDLERS: Final[tuple[Served, ...]] = (
    write_as(DeadlineOperationStartRequest, deadline_operation_start),
    write_as(DeadlineOperationEndRequest, deadline_operation_end),
    read(DeadlineOperationListRequest, deadline_operation_list),
)
