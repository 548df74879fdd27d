"""Standard interactions and the steps that move them (`store.interaction.*`).

The contract of every operation (`_rows`): one blocking function per request, run inside its own
savepoint of a group-committed transaction, so a request that raises after its first write leaves
nothing behind. That is what makes an interaction's step and its call's step ONE transaction:
`interaction_step` runs `tool_call_step` inside its own savepoint, and a refusal of either undoes
both.

The order of checks in `interaction_step`: the interaction exists, or is being asked
(`interaction_not_found`); it belongs to the expected owner (`interaction_not_found`: a foreign
caller learns nothing, not even that it exists); the step is a repeat (answered from what is
stored, nothing written, the call step not applied); the move is in the table (`machine.move`);
every bound holds; and only then anything is written: the interaction, then the call's step
(its own checks, rows and audit), then one audit row of the interaction's. Audit rows hold ids,
states and codes, never a request or a result.

`settle_for_call` runs inside the outbox acknowledgement's transaction: the Agent's call whose
terminal row the AppServer took (or refused for good) settles its interaction with it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from lineup.actors.kernel.errors import ErrorCode, LineUpError
from lineup.facts import interactions as machine

from .._db import Connection
from .._fields import bounded_json
from .._rows import within_budget
from .._table import Served, read, write_as
from ..audit.messages import AuditRecord
from ..audit.operations import audit_append
from ..tool_calls.messages import ToolCallRow
from ..tool_calls.operations import tool_call_step
from .messages import (
    MAX_REQUEST_BYTES,
    MAX_RESULT_BYTES,
    InteractionCountReply,
    InteractionCountRequest,
    InteractionGetReply,
    InteractionGetRequest,
    InteractionListReply,
    InteractionListRequest,
    InteractionRow,
    InteractionStepReply,
    InteractionStepRequest,
)

__all__ = [
    "HANDLERS",
    "interaction_count",
    "interaction_get",
    "interaction_list",
    "interaction_step",
    "settle_for_call",
]

# Row field -> column (the result that won is kept in `answer`, the schema-1 name).
_FIELDS: Final = (
    ("interaction_id", "interaction_id"), ("kind", "kind"), ("request", "request"),
    ("source", "source"), ("owner_scope", "owner_scope"), ("instance_id", "instance_id"),
    ("agent_id", "agent_id"), ("conversation_id", "conversation_id"),
    ("app_session_id", "app_session_id"), ("call_id", "call_id"),
    ("parent_call_id", "parent_call_id"), ("surface_id", "surface_id"),
    ("presentation", "presentation"), ("expires_at", "expires_at"), ("state", "state"),
    ("result", "answer"), ("terminal_code", "terminal_code"), ("created_at", "created_at"),
    ("updated_at", "updated_at"),
)  # fmt: skip
_JSON_FIELDS: Final = frozenset({"request", "result"})
_SELECT: Final = f"SELECT {', '.join(column for _, column in _FIELDS)} FROM interactions"
_FINAL_SQL: Final = ", ".join(f"'{state}'" for state in sorted(machine.FINAL))
_ROW_OVERHEAD: Final = 768  # keys, punctuation and the small fields of one row in a reply
_AUDIT_EVENT: Final = "store.interaction_step"


def _row(values: Sequence[Any]) -> InteractionRow:
    fields = {name: value for (name, _), value in zip(_FIELDS, values, strict=True)}
    for name in _JSON_FIELDS:
        if fields[name] is not None:
            fields[name] = json.loads(fields[name])
    return InteractionRow.model_validate(fields)


def _load(conn: Connection, where: str, key: str) -> InteractionRow | None:
    rows = conn.execute(f"{_SELECT} WHERE {where} = ?", (key,)).fetchall()
    return _row(rows[0]) if rows else None


def _not_found() -> LineUpError:
    return LineUpError(ErrorCode.INTERACTION_NOT_FOUND, "no such interaction")


def _audit(
    conn: Connection, now: float, actor: str, event: str, row: InteractionRow, code: str | None
) -> None:
    """One audit row of a step: ids, the event, the state it led to and the code, no body."""
    record = AuditRecord(
        event=f"{_AUDIT_EVENT}.{row.state}",
        actor=actor,
        peer=row.owner_scope,
        code=code,
        message_type=event,
        subject_id=row.interaction_id,
        at=now,
    )
    audit_append(conn, [record], now)


def interaction_step(
    conn: Connection, req: InteractionStepRequest, now: float, *, actor: str = "store"
) -> InteractionStepReply:
    """One event of the machine on one interaction, and its call's step with it: checks
    first, then every write in this one savepoint."""
    found = _load(conn, "interaction_id", req.interaction_id)
    if found is not None:  # first, even for a repeated ask: a foreign caller learns nothing
        if req.expected_owner_scope not in (None, found.owner_scope) or (
            req.expected_instance_id not in (None, found.instance_id)
        ):
            raise _not_found()
        if req.new is not None or found.state == machine.TARGET[req.event]:
            return InteractionStepReply(interaction=found, before=found.state, changed=False)
    elif req.new is None:
        raise _not_found()
    elif req.expected_owner_scope not in (None, req.new.owner_scope) or (
        req.expected_instance_id not in (None, req.new.instance_id)
    ):
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "the interaction is another owner's")
    before = None if found is None else found.state
    after = machine.move(before, req.event)
    # Every bound is checked before the first write, so that a refusal leaves nothing behind.
    facts = found if found is not None else req.new
    call_id = facts.call_id if facts is not None else None
    if req.call_step is not None and req.call_step.call_id != call_id:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "the call step is another call's")
    result = None
    if req.result is not None:
        result = bounded_json(req.result, max_bytes=MAX_RESULT_BYTES, what="result")
    if found is None:
        assert req.new is not None
        new = req.new
        text = bounded_json(new.request, max_bytes=MAX_REQUEST_BYTES, what="request")
        conn.execute(
            "INSERT INTO interactions (interaction_id, kind, request, source, owner_scope,"
            " instance_id, agent_id, conversation_id, app_session_id, call_id, parent_call_id,"
            " surface_id, presentation, expires_at, state, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (new.interaction_id, new.kind, text, new.source, new.owner_scope, new.instance_id,
             new.agent_id, new.conversation_id, new.app_session_id, new.call_id,
             new.parent_call_id, new.surface_id, new.presentation, new.expires_at, after, now,
             now),
        )  # fmt: skip
    else:
        # A result belongs to a submitted or completed interaction: one that fails after its
        # answer never delivered it, and keeps none.
        conn.execute(
            "UPDATE interactions SET state = ?1,"
            " answer = CASE WHEN ?1 = 'failed' THEN NULL ELSE coalesce(?2, answer) END,"
            " terminal_code = coalesce(?3, terminal_code), updated_at = ?4"
            " WHERE interaction_id = ?5",
            (after, result, req.code, now, req.interaction_id),
        )
    call = None
    if req.call_step is not None:
        call = tool_call_step(conn, req.call_step, now, actor=actor).call
    updated = _load(conn, "interaction_id", req.interaction_id)
    assert updated is not None
    _audit(conn, now, actor, req.event, updated, req.code)
    return InteractionStepReply(
        interaction=updated, before=before, changed=True, created=found is None, call=call
    )


def settle_for_call(
    conn: Connection, call: ToolCallRow, code: str | None, now: float, *, actor: str
) -> InteractionRow | None:
    """Inside the outbox ack's (code None) or fail's (`code`) transaction, once `call` was
    settled: its `submitted` interaction becomes `completed` (its result was delivered), or
    `failed` with the refusal's code. Any other interaction, or none, is left as it is.
    Returns the interaction it moved, or None."""
    found = _load(conn, "call_id", call.call_id)
    if found is None or found.state != "submitted":
        return None
    event: machine.InteractionEvent = "settle" if code is None else "fail"
    after = machine.move(found.state, event)
    conn.execute(
        "UPDATE interactions SET state = ?1,"
        " answer = CASE WHEN ?1 = 'failed' THEN NULL ELSE answer END,"
        " terminal_code = ?2, updated_at = ?3 WHERE interaction_id = ?4",
        (after, code, now, found.interaction_id),
    )
    updated = _load(conn, "interaction_id", found.interaction_id)
    assert updated is not None
    _audit(conn, now, actor, event, updated, code)
    return updated


# ---------------------------------------------------------------------------------- reads


def interaction_get(
    conn: Connection, req: InteractionGetRequest, now: float
) -> InteractionGetReply:
    if req.interaction_id is not None:
        return InteractionGetReply(interaction=_load(conn, "interaction_id", req.interaction_id))
    assert req.call_id is not None
    return InteractionGetReply(interaction=_load(conn, "call_id", req.call_id))


def _cost(values: Sequence[Any]) -> int:
    return _ROW_OVERHEAD + sum(len(str(value).encode()) for value in values)


def interaction_list(
    conn: Connection, req: InteractionListRequest, now: float
) -> InteractionListReply:
    matching = "(?1 IS NULL OR instance_id = ?1) AND (?2 IS NULL OR app_session_id = ?2)"
    keys = (req.instance_id, req.app_session_id)
    rows = conn.execute(
        f"{_SELECT} WHERE {matching} AND state NOT IN ({_FINAL_SQL})"
        " ORDER BY created_at, interaction_id",
        keys,
    ).fetchall()
    if not req.open_only and req.recent:
        rows += conn.execute(
            f"{_SELECT} WHERE {matching} AND state IN ({_FINAL_SQL})"
            " ORDER BY updated_at DESC, interaction_id DESC LIMIT ?3",
            (*keys, req.recent),
        ).fetchall()
    kept = within_budget(rows, _cost)
    return InteractionListReply(interactions=tuple(_row(values) for values in kept))


def interaction_count(
    conn: Connection, req: InteractionCountRequest, now: float
) -> InteractionCountReply:
    row = conn.execute(
        "SELECT count(*) FROM interactions WHERE source = ?1"
        " AND (?2 IS NULL OR owner_scope = ?2) AND state IN ('pending', 'presented')",
        (req.source, req.owner_scope),
    ).fetchone()
    return InteractionCountReply(open=int(row[0]) if row is not None else 0)


# What the store serves from this area: request, operation, access (`_table`).
HANDLERS: Final[tuple[Served, ...]] = (
    write_as(InteractionStepRequest, interaction_step),
    read(InteractionGetRequest, interaction_get),
    read(InteractionListRequest, interaction_list),
    read(InteractionCountRequest, interaction_count),
)
