"""App instances, their lifecycle, recovery after a restart, and the focus stack
(`store.instance.*`, `store.focus_stack.*`).

The contract of every operation (`_rows`): one blocking function per request, run in its own
savepoint. State changes follow `machine` and add an audit row (ids and states only) in the same
savepoint; `actor` is the channel-bound sender.

The focus stack is stored whole: `focus_stack` holds one row per position (0 is the bottom) and
`focus_stack_revision` its single revision, which grows by one on every change and never
otherwise. The stack only ever holds instances that have not ended: an instance that reaches
`stopped` or `failed` leaves it in the same savepoint (a change, so a new revision), and a set
naming an ended or unknown instance is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final

from pydantic import ValidationError

from lineup.actors.kernel.errors import ErrorCode, LineUpError
from lineup.facts import instances as states

from .._db import Connection
from .._rows import int_or_none
from .._table import Served, read, write, write_as
from ..audit.messages import AuditRecord
from ..audit.operations import audit_append
from .messages import (
    FocusStackGetReply,
    FocusStackGetRequest,
    FocusStackSetReply,
    FocusStackSetRequest,
    InstanceCommitReply,
    InstanceCommitRequest,
    InstanceListReply,
    InstanceListRequest,
    InstanceModeSet,
    InstanceRecoverReply,
    InstanceRecoverRequest,
    InstanceRow,
    InstanceState,
    InstanceTransitionReply,
    InstanceTransitionRequest,
    InstanceUpsertReply,
    InstanceUpsertRequest,
)

__all__ = [
    "HANDLERS",
    "INSTANCE_COLUMNS",
    "focus_stack_get",
    "focus_stack_set",
    "instance_commit",
    "instance_list",
    "instance_mode_set",
    "instance_put",
    "instance_recover",
    "instance_row",
    "instance_transition",
]

log = logging.getLogger("lineup.store")

_COLUMNS: Final = (
    "instance_id", "app_scope", "state", "app_session_id", "created_by_call_id", "created_at",
    "updated_at", "conversation_id", "parent_instance_id", "stopped_at", "error", "mode",
    "restore_previous",
)  # fmt: skip
INSTANCE_COLUMNS: Final = _COLUMNS  # an `instance_row`'s, in its order (the sweep reads them)
_SELECT: Final = f"SELECT {', '.join(_COLUMNS)} FROM instances"
_ENDED: Final = ", ".join(f"'{state}'" for state in sorted(states.FINAL))


def instance_row(values: Sequence[Any]) -> InstanceRow:
    """One row of `_SELECT` as its model. Raises `ValidationError` for a row out of the model's
    bounds (the start-up sweep quarantines such a row: `dead_letters.sweep`)."""
    return InstanceRow.model_validate(dict(zip(_COLUMNS, values, strict=True)))


_row = instance_row


def _rows(rows: Sequence[Sequence[Any]]) -> list[InstanceRow]:
    """The rows that decode: a listing skips one that does not, rather than fail whole."""
    decoded = []
    for values in rows:
        try:
            decoded.append(instance_row(values))
        except ValidationError:
            log.warning("store.row_skipped table=instances")
    return decoded


def _load(conn: Connection, instance_id: str) -> InstanceRow | None:
    rows = conn.execute(f"{_SELECT} WHERE instance_id = ?", (instance_id,)).fetchall()
    return _row(rows[0]) if rows else None


def _require(conn: Connection, instance_id: str) -> InstanceRow:
    instance = _load(conn, instance_id)
    if instance is None:
        raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, "no such instance")
    return instance


def _audit(
    conn: Connection, now: float, actor: str, instance: InstanceRow, *, event: str | None = None
) -> None:
    record = AuditRecord(
        event=event or f"instance.{instance.state}",
        actor=actor,
        peer=instance.app_scope,
        subject_id=instance.instance_id,
        code=instance.error if instance.state == "failed" else None,
        at=now,
    )
    audit_append(conn, [record], now)


def _move(
    conn: Connection,
    instance: InstanceRow,
    after: InstanceState,
    now: float,
    actor: str,
    *,
    error: str | None = None,
) -> InstanceRow:
    """Write `instance`'s new state; an ended instance also leaves the focus stack, and keeps
    when it ended (and, failed, the code it failed with: `error`)."""
    final = states.is_final(after)
    conn.execute(
        "UPDATE instances SET state = ?1, updated_at = ?2,"
        " stopped_at = CASE WHEN ?3 THEN ?2 ELSE stopped_at END,"
        " error = CASE WHEN ?1 = 'failed' THEN ?4 ELSE error END WHERE instance_id = ?5",
        (after, now, final, error, instance.instance_id),
    )
    if final:
        stack = _stack(conn)
        if instance.instance_id in stack:
            _write_stack(conn, [i for i in stack if i != instance.instance_id], now)
    moved = _require(conn, instance.instance_id)
    _audit(conn, now, actor, moved)
    return moved


# ---------------------------------------------------------------------------------- instances


def instance_put(
    conn: Connection, req: InstanceUpsertRequest, now: float, *, actor: str = "store"
) -> InstanceUpsertReply:
    found = _load(conn, req.instance_id)
    if found is None:
        if req.state not in states.BIRTH_STATES:
            raise LineUpError(ErrorCode.LIFECYCLE_DENIED, f"an instance is not born {req.state}")
        conn.execute(
            "INSERT INTO instances (instance_id, app_scope, state, app_session_id,"
            " created_by_call_id, created_at, updated_at, conversation_id, parent_instance_id,"
            " mode, restore_previous) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (req.instance_id, req.app_scope, req.state, req.app_session_id,
             req.created_by_call_id, now, now, req.conversation_id, req.parent_instance_id,
             req.mode, int(req.restore_previous)),
        )  # fmt: skip
        created = _require(conn, req.instance_id)
        _audit(conn, now, actor, created)
        return InstanceUpsertReply(instance=created, created=True, changed=True)
    if found.app_scope != req.app_scope:
        raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, "the instance belongs to another app")
    if found.app_session_id != req.app_session_id:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "the instance has another sub-session")
    after, moved = states.step(found.state, req.state)
    if not moved:
        return InstanceUpsertReply(instance=found, created=False, changed=False)
    moved_row = _move(conn, found, after, now, actor)
    return InstanceUpsertReply(instance=moved_row, created=False, changed=True)


def instance_transition(
    conn: Connection, req: InstanceTransitionRequest, now: float, *, actor: str = "store"
) -> InstanceTransitionReply:
    instance = _require(conn, req.instance_id)
    if req.expected_app_scope is not None and instance.app_scope != req.expected_app_scope:
        raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, "the instance belongs to another app")
    after, moved = states.step(instance.state, req.to_state)
    if not moved:
        return InstanceTransitionReply(instance=instance, changed=False)
    row = _move(conn, instance, after, now, actor, error=req.error)
    return InstanceTransitionReply(instance=row, changed=True)


def instance_mode_set(conn: Connection, req: InstanceModeSet, now: float, actor: str) -> bool:
    """Set a live instance's mode (seed 003 §5.1); True if it changed. Refused
    `app_instance_not_found` for an instance that is unknown or ended, `invalid_arguments` for
    one born without a mode (an app that has none). Audited as `instance.mode` (ids only: the
    mode is in no audit column, it is the instance row's)."""
    instance = _require(conn, req.instance_id)
    if states.is_final(instance.state):
        raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, "no such live instance")
    if instance.mode is None:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "this instance has no mode")
    if instance.mode == req.mode:
        return False
    conn.execute(
        "UPDATE instances SET mode = ?, updated_at = ? WHERE instance_id = ?",
        (req.mode, now, req.instance_id),
    )
    _audit(conn, now, actor, _require(conn, req.instance_id), event="instance.mode")
    return True


def instance_list(conn: Connection, req: InstanceListRequest, now: float) -> InstanceListReply:
    rows = conn.execute(
        f"{_SELECT} WHERE state NOT IN ({_ENDED}) AND (?1 IS NULL OR app_scope = ?1)"
        " ORDER BY created_at, instance_id LIMIT ?2",
        (req.app_scope, req.limit),
    ).fetchall()
    return InstanceListReply(instances=tuple(_rows(rows)))


def instance_recover(
    conn: Connection, req: InstanceRecoverRequest, now: float, *, actor: str = "store"
) -> InstanceRecoverReply:
    caught = _rows(
        conn.execute(
            f"{_SELECT} WHERE state IN ('starting', 'stopping') ORDER BY created_at, instance_id"
        ).fetchall()
    )
    recovered = [
        _move(conn, instance, states.next_state(instance.state, "recover"), now, actor)
        for instance in caught
    ]
    return InstanceRecoverReply(instances=tuple(recovered))


# ---------------------------------------------------------------------------------- focus stack


def _stack(conn: Connection) -> list[str]:
    rows = conn.execute("SELECT instance_id FROM focus_stack ORDER BY position").fetchall()
    return [str(instance_id) for (instance_id,) in rows]


def _revision(conn: Connection) -> int:
    return int_or_none(conn, "SELECT revision FROM focus_stack_revision", ()) or 0


def _write_stack(conn: Connection, instance_ids: Sequence[str], now: float) -> int:
    """Replace the stack and bump its revision; returns the new revision."""
    conn.execute("DELETE FROM focus_stack")
    for position, instance_id in enumerate(instance_ids):
        conn.execute(
            "INSERT INTO focus_stack (position, instance_id) VALUES (?, ?)",
            (position, instance_id),
        )
    revision = _revision(conn) + 1
    conn.execute(
        "INSERT INTO focus_stack_revision (id, revision, updated_at) VALUES (1, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET revision = excluded.revision,"
        " updated_at = excluded.updated_at",
        (revision, now),
    )
    return revision


def focus_stack_set(conn: Connection, req: FocusStackSetRequest, now: float) -> FocusStackSetReply:
    wanted = list(req.instance_ids)
    current, revision = _stack(conn), _revision(conn)
    if wanted == current:  # also a retry of the set that made it so
        return FocusStackSetReply(instance_ids=req.instance_ids, revision=revision, changed=False)
    if req.expected_revision is not None and req.expected_revision != revision:
        raise LineUpError(ErrorCode.STALE_REVISION, "the focus stack changed since")
    if len(set(wanted)) != len(wanted):
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "an instance appears twice")
    for instance_id in wanted:
        instance = _load(conn, instance_id)
        if instance is None or states.is_final(instance.state):
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, "no such live instance")
    revision = _write_stack(conn, wanted, now)
    return FocusStackSetReply(instance_ids=req.instance_ids, revision=revision, changed=True)


def focus_stack_get(conn: Connection, req: FocusStackGetRequest, now: float) -> FocusStackGetReply:
    return FocusStackGetReply(instance_ids=tuple(_stack(conn)), revision=_revision(conn))


# ---------------------------------------------------------------------------------- one change


def instance_commit(
    conn: Connection, req: InstanceCommitRequest, now: float, *, actor: str = "store"
) -> InstanceCommitReply:
    """A put, the transitions, the modes and a stack set, in the one savepoint this runs in: a
    part that raises undoes them all."""
    changed, rows = False, []
    if req.born is not None:
        put = instance_put(conn, req.born, now, actor=actor)
        changed |= put.changed
        rows.append(put.instance)
    for move in req.moves:
        moved = instance_transition(
            conn,
            InstanceTransitionRequest(
                instance_id=move.instance_id, to_state=move.to_state, error=move.error
            ),
            now, actor=actor,
        )  # fmt: skip
        changed |= moved.changed
        rows.append(moved.instance)
    for mode in req.modes:
        if instance_mode_set(conn, mode, now, actor):
            changed = True
            rows.append(_require(conn, mode.instance_id))
    stack = focus_stack_set(conn, FocusStackSetRequest(instance_ids=req.stack), now)
    return InstanceCommitReply(
        instances=tuple(rows), revision=stack.revision, changed=changed or stack.changed
    )


# What the store serves from this area: request, operation, access (`_table`).
HANDLERS: Final[tuple[Served, ...]] = (
    write_as(InstanceUpsertRequest, instance_put),
    write_as(InstanceTransitionRequest, instance_transition),
    write_as(InstanceCommitRequest, instance_commit),
    read(InstanceListRequest, instance_list),
    write_as(InstanceRecoverRequest, instance_recover),
    write(FocusStackSetRequest, focus_stack_set),
    read(FocusStackGetRequest, focus_stack_get),
)
