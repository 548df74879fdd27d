"""Tool call records and the outbox rows that speak for them (`store.tool_call.*`).

The same contract as `_queries`: one blocking function per request, `fn(conn, request, now)`,
run inside its own savepoint of a group-committed transaction, so a request that raises after
its first write leaves nothing behind. Writes also take `actor` (the channel-bound sender) for
the audit row they add in the same savepoint: ids, states and codes only, never an input,
result or progress. (Progress itself is not audited: it is frequent and decides nothing.)

Order of checks, the same in every write: the call exists (`invalid_arguments`), it belongs to
the expected scope and instance (`app_scope_mismatch`, `app_instance_not_found`), the request
is a repeat (answered from what is stored, nothing written), the move is legal (`_tool_states`),
and only then anything is written. Ownership comes first so that a foreign caller learns
nothing, not even that the call is final.

Every outbox row written for a call is linked to it in `tool_call_outbox` with its role
(`receipt`, `progress`, `terminal`); a repeat is recognised by that link, and the table's partial
unique index refuses a second terminal row for a call even if the checks here had a bug.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final, Literal

from lineup.actors.kernel.errors import ErrorCode, LineUpError

from . import _tool_states as states
from ._db import Connection
from ._fields import (
    MAX_INPUT_BYTES,
    MAX_PROGRESS_BYTES,
    MAX_RESULT_BYTES,
    MAX_WIRE_BYTES,
    MAX_WIRE_DEPTH,
    bounded_json,
    wire_kind,
)
from ._queries import audit_append, int_or_none, within_budget
from .messages import (
    AuditRecord,
    ToolCallFinishReply,
    ToolCallFinishRequest,
    ToolCallGetReply,
    ToolCallGetRequest,
    ToolCallListReply,
    ToolCallListRequest,
    ToolCallProgressReply,
    ToolCallProgressRequest,
    ToolCallReceiptReply,
    ToolCallReceiptRequest,
    ToolCallRecordReply,
    ToolCallRecordRequest,
    ToolCallRow,
    ToolCallTransitionReply,
    ToolCallTransitionRequest,
)

__all__ = [
    "settle_terminal",
    "tool_call_finish",
    "tool_call_get",
    "tool_call_list",
    "tool_call_progress",
    "tool_call_receipt",
    "tool_call_record",
    "tool_call_transition",
]

Role = Literal["receipt", "progress", "terminal"]

_COLUMNS: Final = (
    "seq", "call_id", "tool", "inventory_revision", "app_scope", "instance_id",
    "conversation_id", "handling", "state", "input", "result", "error_code", "progress",
    "timeout_ms", "created_at", "updated_at", "deadline_at",
)  # fmt: skip
_JSON_COLUMNS: Final = frozenset({"input", "result", "progress"})
_SELECT: Final = f"SELECT {', '.join(_COLUMNS)} FROM tool_calls"
_ROW_OVERHEAD: Final = 512  # keys, punctuation and the small fields of one row in a reply


def _row(values: Sequence[Any]) -> ToolCallRow:
    fields = dict(zip(_COLUMNS, values, strict=True))
    for name in _JSON_COLUMNS:
        if fields[name] is not None:
            fields[name] = json.loads(fields[name])
    return ToolCallRow.model_validate(fields)


def _load(conn: Connection, call_id: str) -> ToolCallRow | None:
    rows = conn.execute(f"{_SELECT} WHERE call_id = ?", (call_id,)).fetchall()
    return _row(rows[0]) if rows else None


def _require(conn: Connection, call_id: str) -> ToolCallRow:
    call = _load(conn, call_id)
    if call is None:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "no such tool call")
    return call


def _check_owner(call: ToolCallRow, app_scope: str | None, instance_id: str | None) -> None:
    if app_scope is not None and call.app_scope != app_scope:
        raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, "the call belongs to another app")
    if instance_id is not None and call.instance_id != instance_id:
        raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, "the call is not this instance's")


def _audit(
    conn: Connection,
    now: float,
    actor: str,
    event: str,
    call: ToolCallRow,
    *,
    code: str | None = None,
    wire: dict[str, Any] | None = None,
) -> None:
    """One audit row for a change of `call`: ids, states and codes, never a body."""
    record = AuditRecord(
        event=event,
        actor=actor,
        peer=call.app_scope,
        code=code,
        message_type=wire_kind(wire) if wire is not None else None,
        subject_id=call.call_id,
        at=now,
    )
    audit_append(conn, [record], now)


def _link(conn: Connection, outbox_id: str) -> tuple[str, str, str | None] | None:
    """`(call_id, role, status)` of the call's outbox row `outbox_id`, or None if no call has it."""
    rows = conn.execute(
        "SELECT call_id, role, status FROM tool_call_outbox WHERE outbox_id = ?", (outbox_id,)
    ).fetchall()
    if not rows:
        return None
    call_id, role, status = rows[0]
    assert isinstance(call_id, str)
    assert isinstance(role, str)
    assert status is None or isinstance(status, str)
    return call_id, role, status


def _submitted_with_result(conn: Connection, call: ToolCallRow) -> bool:
    if call.state != "submitted":
        return False
    rows = conn.execute(
        "SELECT 1 FROM tool_call_outbox WHERE call_id = ? AND role = 'terminal'", (call.call_id,)
    ).fetchall()
    return bool(rows)


def _wire_text(wire: dict[str, Any]) -> str:
    return bounded_json(wire, max_bytes=MAX_WIRE_BYTES, max_depth=MAX_WIRE_DEPTH, what="wire")


def _queue(
    conn: Connection,
    call: ToolCallRow,
    outbox_id: str,
    wire: dict[str, Any],
    role: Role,
    status: str | None,
    now: float,
) -> None:
    """Append `wire` to the outbox as `outbox_id` and link it to the call. Callers check the
    wire with `_wire_text` before their first write, so that a bad one refuses cleanly."""
    seq = int_or_none(
        conn,
        "INSERT INTO outbox (outbox_id, conversation_id, kind, body, created_at, state)"
        " VALUES (?, ?, ?, ?, ?, 'pending') ON CONFLICT (outbox_id) DO NOTHING RETURNING seq",
        (outbox_id, call.conversation_id, wire_kind(wire), _wire_text(wire), now),
    )
    if seq is None:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "outbox id already used")
    conn.execute(
        "INSERT INTO tool_call_outbox (outbox_id, call_id, role, status) VALUES (?, ?, ?, ?)",
        (outbox_id, call.call_id, role, status),
    )


# ---------------------------------------------------------------------------------- writes


def tool_call_record(
    conn: Connection, req: ToolCallRecordRequest, now: float, *, actor: str = "store"
) -> ToolCallRecordReply:
    found = _load(conn, req.call_id)
    if found is not None:
        return ToolCallRecordReply(call=found, created=False)
    text = bounded_json(req.input, max_bytes=MAX_INPUT_BYTES, what="input")
    if req.wire is not None:
        _wire_text(req.wire)
    conn.execute(
        "INSERT INTO tool_calls (call_id, tool, inventory_revision, app_scope, instance_id,"
        " conversation_id, handling, state, input, error_code, timeout_ms, created_at,"
        " updated_at, deadline_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (req.call_id, req.tool, req.inventory_revision, req.app_scope, req.instance_id,
         req.conversation_id, req.handling, req.state, text, req.code, req.timeout_ms, now, now,
         now + req.timeout_ms / 1000),
    )  # fmt: skip
    call = _require(conn, req.call_id)
    if req.outbox_id is not None and req.wire is not None:
        _queue(conn, call, req.outbox_id, req.wire, "terminal", call.state, now)
    _audit(conn, now, actor, f"tool_call.{call.state}", call, code=req.code, wire=req.wire)
    return ToolCallRecordReply(call=call, created=True)


def tool_call_transition(
    conn: Connection, req: ToolCallTransitionRequest, now: float, *, actor: str = "store"
) -> ToolCallTransitionReply:
    call = _require(conn, req.call_id)
    _check_owner(call, req.expected_app_scope, req.expected_instance_id)
    after, moved = states.step(call.state, req.to_state)
    instance_id = call.instance_id
    if req.instance_id is not None and req.instance_id != instance_id:
        if instance_id is not None:
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "the call has another instance")
        instance_id = req.instance_id
    progress = call.progress
    if req.progress is not None and req.progress != call.progress:
        progress = req.progress
    changed = moved or instance_id != call.instance_id or progress != call.progress
    if not changed:
        return ToolCallTransitionReply(call=call, changed=False)
    text = None
    if progress is not None:
        text = bounded_json(progress, max_bytes=MAX_PROGRESS_BYTES, what="progress")
    conn.execute(
        "UPDATE tool_calls SET state = ?, instance_id = ?, progress = ?, updated_at = ?"
        " WHERE call_id = ?",
        (after, instance_id, text, now, req.call_id),
    )
    updated = _require(conn, req.call_id)
    if moved:
        _audit(conn, now, actor, f"tool_call.{after}", updated, code=req.code)
    return ToolCallTransitionReply(call=updated, changed=True)


def tool_call_finish(
    conn: Connection, req: ToolCallFinishRequest, now: float, *, actor: str = "store"
) -> ToolCallFinishReply:
    call = _require(conn, req.call_id)
    _check_owner(call, req.expected_app_scope, req.expected_instance_id)
    if states.is_final(call.state) or _submitted_with_result(conn, call):
        # The finish that decided the call, retried: answer it again, write nothing. A submitted
        # result's outcome is decided too: only its outbox row's fate moves it on (`settle_
        # terminal`). (A call moved to `submitted` by `transition` has no row yet: the table
        # decides for it.)
        if call.state == req.to_state and _link(conn, req.outbox_id) == (
            call.call_id, "terminal", call.state,
        ):  # fmt: skip
            return ToolCallFinishReply(call=call, changed=False)
        raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, f"call is already {call.state}")
    after = states.next_state(call.state, states.EVENT_TO[req.to_state])
    result = None
    if req.result is not None:
        result = bounded_json(req.result, max_bytes=MAX_RESULT_BYTES, what="result")
    _wire_text(req.wire)
    conn.execute(
        "UPDATE tool_calls SET state = ?, result = ?, error_code = ?, updated_at = ?"
        " WHERE call_id = ?",
        (after, result, req.code, now, req.call_id),
    )
    _queue(conn, call, req.outbox_id, req.wire, "terminal", after, now)
    updated = _require(conn, req.call_id)
    _audit(conn, now, actor, f"tool_call.{after}", updated, code=req.code, wire=req.wire)
    return ToolCallFinishReply(call=updated, changed=True)


def tool_call_progress(
    conn: Connection, req: ToolCallProgressRequest, now: float, *, actor: str = "store"
) -> ToolCallProgressReply:
    call = _require(conn, req.call_id)
    _check_owner(call, req.expected_app_scope, req.expected_instance_id)
    link = _link(conn, req.outbox_id)
    if link is not None:
        if link[:2] != (call.call_id, "progress"):
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "outbox id already used")
        return ToolCallProgressReply(call_id=call.call_id, outbox_id=req.outbox_id, created=False)
    if states.is_final(call.state):
        raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, f"call is already {call.state}")
    text = bounded_json(req.progress, max_bytes=MAX_PROGRESS_BYTES, what="progress")
    _wire_text(req.wire)
    conn.execute(
        "UPDATE tool_calls SET progress = ?, updated_at = ? WHERE call_id = ?",
        (text, now, req.call_id),
    )
    _queue(conn, call, req.outbox_id, req.wire, "progress", None, now)
    return ToolCallProgressReply(call_id=call.call_id, outbox_id=req.outbox_id, created=True)


def tool_call_receipt(
    conn: Connection, req: ToolCallReceiptRequest, now: float, *, actor: str = "store"
) -> ToolCallReceiptReply:
    call = _require(conn, req.call_id)
    link = _link(conn, req.outbox_id)
    if link is not None:
        if link != (call.call_id, "receipt", req.status):
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "outbox id already used")
        return ToolCallReceiptReply(call_id=call.call_id, outbox_id=req.outbox_id, created=False)
    _wire_text(req.wire)
    _queue(conn, call, req.outbox_id, req.wire, "receipt", req.status, now)
    _audit(conn, now, actor, f"tool_call.receipt.{req.status}", call, code=req.code, wire=req.wire)
    return ToolCallReceiptReply(call_id=call.call_id, outbox_id=req.outbox_id, created=True)


def settle_terminal(
    conn: Connection, outbox_id: str, code: str | None, now: float, *, actor: str
) -> ToolCallRow | None:
    """The AppServer's word on a call's terminal row, inside the outbox ack's (code None) or
    fail's (`code`) own transaction: a `submitted` call whose result was taken becomes
    `completed`; one whose result was refused for good becomes `failed` with the refusal's code
    (its result stays in the outbox row, the call keeps none: a result belongs to a completed
    call only, and the Agent never got it). Any other row, or a call not submitted (already
    final: an ack of a row failed before, a rejection), is left as it is. Returns the call it
    moved, or None."""
    link = _link(conn, outbox_id)
    if link is None or link[1] != "terminal":
        return None
    call = _require(conn, link[0])
    if call.state != "submitted":
        return None
    after = states.next_state(call.state, "complete" if code is None else "fail")
    if after == "completed":
        conn.execute(
            "UPDATE tool_calls SET state = 'completed', updated_at = ? WHERE call_id = ?",
            (now, call.call_id),
        )
    else:
        conn.execute(
            "UPDATE tool_calls SET state = ?, result = NULL, error_code = ?, updated_at = ?"
            " WHERE call_id = ?",
            (after, code, now, call.call_id),
        )
    conn.execute("UPDATE tool_call_outbox SET status = ? WHERE outbox_id = ?", (after, outbox_id))
    updated = _require(conn, call.call_id)
    _audit(conn, now, actor, f"tool_call.{after}", updated, code=code)
    return updated


# ---------------------------------------------------------------------------------- reads


def tool_call_get(conn: Connection, req: ToolCallGetRequest, now: float) -> ToolCallGetReply:
    return ToolCallGetReply(call=_load(conn, req.call_id))


def _cost(values: Sequence[Any]) -> int:
    return _ROW_OVERHEAD + sum(len(str(value).encode()) for value in values)


def tool_call_list(conn: Connection, req: ToolCallListRequest, now: float) -> ToolCallListReply:
    final = ", ".join(f"'{state}'" for state in sorted(states.FINAL))
    rows = conn.execute(
        f"{_SELECT} WHERE seq > ?1 AND (?2 IS NULL OR app_scope = ?2)"
        f" AND (?3 IS NULL OR instance_id = ?3) AND (NOT ?4 OR state NOT IN ({final}))"
        " ORDER BY seq LIMIT ?5",
        (req.after_seq, req.app_scope, req.instance_id, req.non_final_only, req.limit),
    ).fetchall()
    return ToolCallListReply(calls=tuple(_row(values) for values in within_budget(rows, _cost)))
