"""Tool call records and the outbox rows that speak for them (`store.tool_call.*`).

The contract of every operation (`_rows`): one blocking function per request,
`fn(conn, request, now)`, run inside its own savepoint of a group-committed transaction, so a
request that raises after its first write leaves nothing behind. Writes also take `actor` (the
channel-bound sender) for the audit row they add in the same savepoint: ids, states and codes
only, never an input, result or progress. (Progress itself is not audited: it is frequent and
decides nothing.)

A call moves only by `tool_call_step`, one event of `machine`. Its order of checks: the call
exists, or is being born (`invalid_arguments`); it belongs to the expected scope and instance
(`app_scope_mismatch`, `app_instance_not_found`); the step is a repeat (answered from what is
stored, nothing written); the move is in the table (`machine.move`); every bound holds; and only
then anything is written. Ownership comes first so that a foreign caller learns nothing, not
even that the call is final.

Every outbox row written for a call is linked to it in `tool_call_outbox` with its role
(`receipt`, `progress`, `terminal`); a repeat is recognised by that link, and the table's partial
unique index refuses a second terminal row for a call even if the checks here had a bug.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final, Literal

from lineup.actors.kernel.errors import ErrorCode, LineUpError
from lineup.facts import deadline_operations as operations_machine
from lineup.facts import tool_calls as machine
from lineup.facts.instances import FINAL as ENDED_INSTANCE
from lineup.facts.tool_calls import Row

from .._db import Connection
from .._fields import (
    MAX_INPUT_BYTES,
    MAX_PROGRESS_BYTES,
    MAX_RESULT_BYTES,
    MAX_WIRE_BYTES,
    MAX_WIRE_DEPTH,
    bounded_json,
    wire_kind,
)
from .._rows import int_or_none, within_budget
from .._table import Served, read, write_as
from ..audit.messages import AuditRecord
from ..audit.operations import audit_append
from .messages import (
    OutboxRowIn,
    ToolCallGetReply,
    ToolCallGetRequest,
    ToolCallListReply,
    ToolCallListRequest,
    ToolCallProgressReply,
    ToolCallProgressRequest,
    ToolCallRow,
    ToolCallStepReply,
    ToolCallStepRequest,
)

__all__ = [
    "HANDLERS",
    "call_of_terminal",
    "settle_terminal",
    "tool_call_get",
    "tool_call_list",
    "tool_call_progress",
    "tool_call_step",
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


def _check_instance_live(conn: Connection, instance_id: str) -> None:
    """A call goes only to an instance whose end is not recorded. Focus records an end before
    it tells the router, which then closes the instance's calls: a step that binds a call to
    an instance after that would leave it open on nobody (a launch's `activated` racing the
    user's close, say) until its deadline. An instance with no row yet is let through: focus
    answers for a new instance while its birth is being written."""
    rows = conn.execute("SELECT state FROM instances WHERE instance_id = ?", (instance_id,))
    found = rows.fetchall()
    if found and found[0][0] in ENDED_INSTANCE:
        raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, "the instance has ended")


def _audit(
    conn: Connection,
    now: float,
    actor: str,
    event: str,
    call: ToolCallRow,
    *,
    code: str | None = None,
    kind: str | None = None,
) -> None:
    """One audit row for a change of `call`: ids, states and codes, never a body."""
    record = AuditRecord(
        event=event,
        actor=actor,
        peer=call.app_scope,
        code=code,
        message_type=kind,
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


def _wire_text(wire: dict[str, Any]) -> str:
    return bounded_json(wire, max_bytes=MAX_WIRE_BYTES, max_depth=MAX_WIRE_DEPTH, what="wire")


def _queue(
    conn: Connection,
    call: ToolCallRow,
    outbox_id: str,
    text: str,
    kind: str,
    role: Role,
    status: str | None,
    now: float,
) -> None:
    """Append the wire envelope `text` (checked by `_wire_text` before the caller's first write,
    so that a bad one refuses cleanly) to the outbox as `outbox_id`, linked to the call."""
    seq = int_or_none(
        conn,
        "INSERT INTO outbox (outbox_id, conversation_id, kind, body, created_at, state)"
        " VALUES (?, ?, ?, ?, ?, 'pending') ON CONFLICT (outbox_id) DO NOTHING RETURNING seq",
        (outbox_id, call.conversation_id, kind, text, now),
    )
    if seq is None:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "outbox id already used")
    conn.execute(
        "INSERT INTO tool_call_outbox (outbox_id, call_id, role, status) VALUES (?, ?, ?, ?)",
        (outbox_id, call.call_id, role, status),
    )


# ---------------------------------------------------------------------------------- writes


def _role(row: Row) -> Role:
    return "terminal" if row == "terminal" else "receipt"


def _written(conn: Connection, call_id: str, row: OutboxRowIn) -> bool:
    """Whether `row` is already the call's (a replayed step); refused if its id is another's."""
    link = _link(conn, row.outbox_id)
    if link is None:
        return False
    if link[:2] != (call_id, _role(row.row)) or (row.row != "terminal" and link[2] != row.row):
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "outbox id already used")
    return True


def _runtime_owned(conn: Connection, call_id: str) -> bool:
    """Whether a running deadline operation owns the call's end (`deadline_operations/`)."""
    return bool(
        conn.execute(
            "SELECT 1 FROM deadline_operations WHERE call_id = ? AND state = 'running'",
            (call_id,),
        ).fetchall()
    )


def _end_operation(conn: Connection, call: ToolCallRow, now: float, actor: str) -> bool:
    """The call ended another way than by its running deadline operation (closed, expired):
    the operation is `abandoned` now, in the same savepoint, not when its `ends_at` comes
    (`deadline_operations/` writes nothing more for it then); ended by the user's interruption
    (which found no operation yet, as this one started), `interrupted`. Whether one was."""
    by_user = call.state == "cancelled" and call.error_code == operations_machine.INTERRUPTED_CODE
    state = operations_machine.move("running", "interrupt" if by_user else "abandon")
    running = conn.execute(
        "SELECT 1 FROM deadline_operations WHERE call_id = ? AND state = 'running'",
        (call.call_id,),
    ).fetchall()
    if not running:
        return False
    conn.execute(
        "UPDATE deadline_operations SET state = ?, updated_at = ? WHERE call_id = ?",
        (state, now, call.call_id),
    )
    record = AuditRecord(
        event=f"deadline_operation.{state}",
        actor=actor,
        peer=call.app_scope,
        code=call.error_code,
        subject_id=call.call_id,
        at=now,
    )
    audit_append(conn, [record], now)
    return True


def tool_call_step(
    conn: Connection,
    req: ToolCallStepRequest,
    now: float,
    *,
    actor: str = "store",
    by_operation: bool = False,
) -> ToolCallStepReply:
    """One event of the machine on one call: checks first, then every write (state, rows, audit)
    in this one savepoint. A step that decides a call a running deadline operation owns, other
    than that operation's own ending (`by_operation`), ends the operation (`_end_operation`)."""
    call = _load(conn, req.call_id)
    if call is not None:  # first, even for a repeated birth: a foreign caller learns nothing
        _check_owner(call, req.expected_app_scope, req.expected_instance_id)
    if req.new is not None and call is not None:
        return ToolCallStepReply(call=call, before=call.state, changed=False)
    if call is not None:
        bound = call.instance_id
        if req.instance_id is not None and bound not in (None, req.instance_id):
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "the call has another instance")
        if call.state == machine.TARGET[req.event] and all(
            _written(conn, call.call_id, row) for row in req.rows
        ):
            return ToolCallStepReply(call=call, before=call.state, changed=False)
    elif req.new is None:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "no such tool call")
    before = None if call is None else call.state
    after = machine.move(before, req.event).to
    if req.expected_app_scope is not None and _runtime_owned(conn, req.call_id):
        # A deadline operation's call ends by the runtime alone (seed 004 §6.3), never its app.
        raise LineUpError(ErrorCode.PERMISSION_DENIED, "the runtime ends this call")
    if req.event in machine.BINDS and req.instance_id is not None:
        _check_instance_live(conn, req.instance_id)
    ended_by_app = req.expected_app_scope is not None and req.event in machine.APP_ENDINGS
    if ended_by_app and call is not None and call.instance_id is not None:
        # An app failing a call after its instance's end was recorded is failing because of
        # it (the user closed it while the handler ran): the router closes the call instead.
        _check_instance_live(conn, call.instance_id)
    # Every bound is checked before the first write, so that a refusal leaves nothing behind.
    texts = [_wire_text(row.wire) for row in req.rows]
    result = None
    if req.result is not None:
        result = bounded_json(req.result, max_bytes=MAX_RESULT_BYTES, what="result")
    # The row as written is built from what was just written, not read back: the columns
    # below are exactly those values (the JSON ones, what their text parses back to).
    if call is None:
        assert req.new is not None
        new = req.new
        text = bounded_json(new.input, max_bytes=MAX_INPUT_BYTES, what="input")
        deadline = now + new.timeout_ms / 1000
        seq = int_or_none(
            conn,
            "INSERT INTO tool_calls (call_id, tool, inventory_revision, app_scope, instance_id,"
            " conversation_id, handling, state, input, error_code, timeout_ms, created_at,"
            " updated_at, deadline_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " RETURNING seq",
            (req.call_id, new.tool, new.inventory_revision, new.app_scope, req.instance_id,
             new.conversation_id, new.handling, after, text, req.code, new.timeout_ms, now, now,
             deadline),
        )  # fmt: skip
        assert seq is not None
        updated = ToolCallRow(
            seq=seq, call_id=req.call_id, tool=new.tool,
            inventory_revision=new.inventory_revision, app_scope=new.app_scope,
            instance_id=req.instance_id, conversation_id=new.conversation_id,
            handling=new.handling, state=after, input=new.input, result=None,
            error_code=req.code, progress=None, timeout_ms=new.timeout_ms, created_at=now,
            updated_at=now, deadline_at=deadline,
        )  # fmt: skip
    else:
        # The instance is set only when it changes: SQLite rewrites an index entry of every
        # column a SET names, changed or not (a WAL page a step, measured).
        moved = req.instance_id is not None and req.instance_id != call.instance_id
        conn.execute(
            "UPDATE tool_calls SET state = ?, result = coalesce(?, result),"
            " error_code = coalesce(?, error_code), updated_at = ?"
            f"{', instance_id = ?' if moved else ''} WHERE call_id = ?",
            (after, result, req.code, now, *((req.instance_id,) if moved else ()), req.call_id),
        )
        updated = call.model_copy(
            update={
                "state": after,
                "instance_id": call.instance_id if req.instance_id is None else req.instance_id,
                "result": call.result if req.result is None else req.result,
                "error_code": call.error_code if req.code is None else req.code,
                "updated_at": now,
            }
        )
    kind = None
    for row, text in zip(req.rows, texts, strict=True):
        if call is not None and _written(conn, updated.call_id, row):
            continue  # a receipt an earlier step wrote (a held call's `accepted`)
        status = after if row.row == "terminal" else row.row
        kind = wire_kind(row.wire)
        _queue(conn, updated, row.outbox_id, text, kind, _role(row.row), status, now)
    _audit(conn, now, actor, f"tool_call.{after}", updated, code=req.code, kind=kind)
    operation_ended = (
        not by_operation and after in machine.DECIDED and _end_operation(conn, updated, now, actor)
    )
    return ToolCallStepReply(
        call=updated,
        before=before,
        changed=True,
        created=call is None,
        operation_ended=operation_ended,
    )


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
    if call.state in machine.FINAL:
        raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, f"call is already {call.state}")
    text = bounded_json(req.progress, max_bytes=MAX_PROGRESS_BYTES, what="progress")
    wire = _wire_text(req.wire)
    conn.execute(
        "UPDATE tool_calls SET progress = ?, updated_at = ? WHERE call_id = ?",
        (text, now, req.call_id),
    )
    _queue(conn, call, req.outbox_id, wire, wire_kind(req.wire), "progress", None, now)
    return ToolCallProgressReply(call_id=call.call_id, outbox_id=req.outbox_id, created=True)


def call_of_terminal(conn: Connection, outbox_id: str) -> str | None:
    """The call whose terminal row `outbox_id` is, or None (another row, or no call's)."""
    link = _link(conn, outbox_id)
    return link[0] if link is not None and link[1] == "terminal" else None


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
    after = machine.move(call.state, "settle" if code is None else "settle_refused").to
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


_FINAL: Final = ", ".join(f"'{state}'" for state in sorted(machine.FINAL))
_DECIDED: Final = ", ".join(f"'{state}'" for state in sorted(machine.DECIDED))


def tool_call_list(conn: Connection, req: ToolCallListRequest, now: float) -> ToolCallListReply:
    rows = conn.execute(
        f"{_SELECT} WHERE seq > ?1 AND (?2 IS NULL OR app_scope = ?2)"
        f" AND (?3 IS NULL OR instance_id = ?3) AND (NOT ?4 OR state NOT IN ({_FINAL}))"
        f" AND (NOT ?6 OR state NOT IN ({_DECIDED})) ORDER BY seq LIMIT ?5",
        (
            req.after_seq,
            req.app_scope,
            req.instance_id,
            req.non_final_only,
            req.limit,
            req.undecided_only,
        ),
    ).fetchall()
    return ToolCallListReply(calls=tuple(_row(values) for values in within_budget(rows, _cost)))


# What the store serves from this area: request, operation, access (`_table`).
HANDLERS: Final[tuple[Served, ...]] = (
    write_as(ToolCallStepRequest, tool_call_step),
    write_as(ToolCallProgressRequest, tool_call_progress),
    read(ToolCallGetRequest, tool_call_get),
    read(ToolCallListRequest, tool_call_list),
)
