"""The store's side of app delivery (`store.registry.*` beyond put/enabled/list): installed
apps and their predecessors, revocations, app operations, settings.

Theory of operation: focus verifies and caches a bundle, then records it here; each registry
change that an `AppOperation` makes names it, and the operation is completed in the change's
own savepoint, so after a crash the registry and the operation never disagree. An operation
found `requested` or `running` when focus starts is ended by `app_operation_recover`:
completed when the registry shows its result, else failed with `actor_restarted`. Operations
only move forward (requested → running → completed | failed); a final one is never rewritten,
and an install recorded for an operation already failed (its answer came too late for focus)
is refused, so the journal and the registry agree whichever reached the store first.
Every change is audited in its transaction, with ids and codes only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from lineup.actors.kernel.errors import ErrorCode, LineUpError
from lineup.facts.versions import compare_versions

from .._db import Connection
from .._fields import MAX_MANIFEST_BYTES, bounded_json
from ..audit.messages import AuditRecord
from ..audit.operations import audit_append
from .messages import (
    AppInstallRecordReply,
    AppInstallRecordRequest,
    AppOperationListReply,
    AppOperationListRequest,
    AppOperationPutReply,
    AppOperationPutRequest,
    AppOperationRecoverReply,
    AppOperationRecoverRequest,
    AppOperationRow,
    AppRecord,
    AppRegistryGetReply,
    AppRegistryGetRequest,
    AppRemoveReply,
    AppRemoveRequest,
    AppRollbackReply,
    AppRollbackRequest,
    AppRow,
    AppSource,
    AppStateSetReply,
    AppStateSetRequest,
    RevocationAddReply,
    RevocationAddRequest,
    RevocationListReply,
    RevocationListRequest,
    SettingGetReply,
    SettingGetRequest,
    SettingPutReply,
    SettingPutRequest,
)

__all__ = [
    "APP_COLUMNS",
    "APP_SELECT",
    "app_install_record",
    "app_operation_list",
    "app_operation_put",
    "app_operation_recover",
    "app_registry_get",
    "app_remove",
    "app_rollback",
    "app_row",
    "app_state_set",
    "audit_app",
    "complete_operation",
    "load_app",
    "revocation_add",
    "revocation_list",
    "setting_get",
    "setting_put",
]

APP_COLUMNS: Final = (
    "app_scope",
    "enabled",
    "version",
    "kind",
    "updated_at",
    "source",
    "state",
    "key_id",
    "bundle_sha256",
    "previous_version",
    "installed_at",
    "enabled_at",
    "install_state",
    "active_instance_count",
)
# Seed 004 §4.3's record reads two facts kept elsewhere, never twice: an app is `updating`
# while an install, update or rollback of it is open, `failed` when the latest one failed (it
# runs its previous version), else `installed`; its active instances are its instances that have
# not ended.
_CHANGES: Final = (
    "FROM app_operations o WHERE o.app_scope = registry.app_scope"
    " AND o.kind IN ('install', 'update', 'rollback')"
)
_DERIVED: Final = {
    "install_state": (
        f"CASE WHEN EXISTS (SELECT 1 {_CHANGES} AND o.state IN ('requested', 'running'))"
        " THEN 'updating'"
        f" WHEN (SELECT o.state {_CHANGES} ORDER BY o.updated_at DESC, o.rowid DESC LIMIT 1)"
        " = 'failed' THEN 'failed' ELSE 'installed' END"
    ),
    "active_instance_count": (
        "(SELECT count(*) FROM instances i WHERE i.app_scope = registry.app_scope"
        " AND i.state NOT IN ('stopped', 'failed'))"
    ),
}
# The select list of `APP_COLUMNS`, in their order, for a query `FROM registry`.
APP_SELECT: Final = ", ".join(_DERIVED.get(column, column) for column in APP_COLUMNS)
_OP_COLUMNS: Final = (
    "operation_id",
    "app_scope",
    "kind",
    "state",
    "version",
    "from_version",
    "code",
    "created_at",
    "updated_at",
)
_RANK: Final = {"requested": 0, "running": 1, "completed": 2, "failed": 2}
MAX_SETTING_BYTES: Final = 64 * 1024


def app_row(values: Sequence[Any]) -> AppRow:
    fields = dict(zip(APP_COLUMNS, values, strict=True))
    fields["enabled"] = bool(fields["enabled"])
    return AppRow.model_validate(fields)


def load_app(conn: Connection, app_scope: str) -> tuple[AppRow, str] | None:
    """The app's row and its stored manifest text, or None if it is not in the registry."""
    rows = conn.execute(
        f"SELECT {APP_SELECT}, manifest FROM registry WHERE app_scope = ?",
        (app_scope,),
    ).fetchall()
    if not rows:
        return None
    *values, manifest = rows[0]
    assert isinstance(manifest, str)
    return app_row(values), manifest


def _must_load(conn: Connection, app_scope: str) -> AppRow:
    found = load_app(conn, app_scope)
    assert found is not None
    return found[0]


def audit_app(
    conn: Connection,
    now: float,
    actor: str,
    event: str,
    app_scope: str,
    *,
    subject_id: str | None = None,
    code: str | None = None,
) -> None:
    record = AuditRecord(
        event=event,
        actor=actor,
        peer=app_scope,
        subject_id=subject_id or app_scope,
        code=code,
        at=now,
    )
    audit_append(conn, [record], now)


# ---------------------------------------------------------------------------------- records


def app_registry_get(
    conn: Connection, req: AppRegistryGetRequest, now: float
) -> AppRegistryGetReply:
    rows = conn.execute(
        f"SELECT {APP_SELECT}, manifest, previous_manifest, previous_bundle_sha256"
        " FROM registry WHERE app_scope = ?",
        (req.app_scope,),
    ).fetchall()
    if not rows:
        return AppRegistryGetReply(record=None)
    *values, manifest, previous, previous_sha = rows[0]
    assert isinstance(manifest, str)
    return AppRegistryGetReply(
        record=AppRecord(
            app=app_row(values),
            manifest=json.loads(manifest),
            previous_manifest=json.loads(previous) if isinstance(previous, str) else None,
            previous_bundle_sha256=previous_sha if isinstance(previous_sha, str) else None,
        )
    )


def app_install_record(
    conn: Connection, req: AppInstallRecordRequest, now: float, *, actor: str = "store"
) -> AppInstallRecordReply:
    manifest = bounded_json(req.manifest, max_bytes=MAX_MANIFEST_BYTES, what="manifest")
    ended = _operation(conn, req.operation_id) if req.operation_id is not None else None
    if ended is not None and ended.state == "failed":
        # Its installer heard no answer in time and ended it failed: this write came too late,
        # and would install what the journal says was not.
        raise LineUpError(ErrorCode.DEADLINE_EXCEEDED, "its operation already failed")
    found = load_app(conn, req.app_scope)
    replaced: AppSource | None = None
    if found is not None and found[0].source != "installed":
        if req.replaces is None or found[0].source != req.replaces:
            raise LineUpError(ErrorCode.APP_PROTECTED, "not an installed app")
        replaced = found[0].source
        _drop_leftover(conn, req.app_scope, now, actor, req.operation_id)
        found = None
    if found is None:
        conn.execute(
            "INSERT INTO registry (app_scope, version, kind, manifest, bundle_sha256, key_id,"
            " source, state, installed_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, 'installed', 'active', ?, ?)",
            (req.app_scope, req.version, req.kind, manifest, req.bundle_sha256, req.key_id, now,
             now),
        )  # fmt: skip
        audit_app(conn, now, actor, "app.installed", req.app_scope, subject_id=req.operation_id)
        complete_operation(conn, req.operation_id, now, actor)
        return AppInstallRecordReply(
            app=_must_load(conn, req.app_scope), created=True, changed=True, replaced=replaced
        )
    app, _ = found
    if (app.version, app.bundle_sha256) == (req.version, req.bundle_sha256):
        complete_operation(conn, req.operation_id, now, actor)
        return AppInstallRecordReply(app=app, created=False, changed=False)
    if compare_versions(req.version, app.version) <= 0:
        raise LineUpError(ErrorCode.APP_VERSION_MISMATCH, "not above the active version")
    # The active version becomes the predecessor; the predecessor before it is dropped.
    conn.execute(
        "UPDATE registry SET previous_version = version, previous_manifest = manifest,"
        " previous_bundle_sha256 = bundle_sha256, version = ?, kind = ?, manifest = ?,"
        " bundle_sha256 = ?, key_id = ?, state = 'active', revoked = 0, updated_at = ?"
        " WHERE app_scope = ?",
        (req.version, req.kind, manifest, req.bundle_sha256, req.key_id, now, req.app_scope),
    )
    audit_app(conn, now, actor, "app.updated", req.app_scope, subject_id=req.operation_id)
    complete_operation(conn, req.operation_id, now, actor)
    return AppInstallRecordReply(app=_must_load(conn, req.app_scope), created=False, changed=True)


def _drop_leftover(
    conn: Connection, app_scope: str, now: float, actor: str, operation_id: str | None
) -> None:
    """Delete a leftover row (see `AppInstallRecordRequest.replaces`) with what its code left
    in the store: its session data and capability grants. Audited; the caller inserts."""
    conn.execute("DELETE FROM session_data WHERE app_scope = ?", (app_scope,))
    conn.execute("DELETE FROM capability_grants WHERE app_scope = ?", (app_scope,))
    conn.execute("DELETE FROM registry WHERE app_scope = ?", (app_scope,))
    audit_app(conn, now, actor, "app.leftover_replaced", app_scope, subject_id=operation_id)


def app_rollback(
    conn: Connection, req: AppRollbackRequest, now: float, *, actor: str = "store"
) -> AppRollbackReply:
    found = load_app(conn, req.app_scope)
    if found is None:
        raise LineUpError(ErrorCode.APP_NOT_INSTALLED, "no such app")
    app, _ = found
    if app.source != "installed":
        raise LineUpError(ErrorCode.APP_PROTECTED, "not an installed app")
    if app.version != req.from_version:
        raise LineUpError(ErrorCode.STALE_REVISION, "the active version changed")
    if app.previous_version is None:
        raise LineUpError(ErrorCode.NO_PREDECESSOR, "no predecessor")
    # A swap: every column is read before it is written, so each takes the other's value.
    conn.execute(
        "UPDATE registry SET version = previous_version, previous_version = version,"
        " manifest = previous_manifest, previous_manifest = manifest,"
        " bundle_sha256 = previous_bundle_sha256, previous_bundle_sha256 = bundle_sha256,"
        " state = 'active', updated_at = ? WHERE app_scope = ?",
        (now, req.app_scope),
    )
    audit_app(conn, now, actor, "app.rolled_back", req.app_scope, subject_id=req.operation_id)
    complete_operation(conn, req.operation_id, now, actor)
    return AppRollbackReply(app=_must_load(conn, req.app_scope))


def app_state_set(
    conn: Connection, req: AppStateSetRequest, now: float, *, actor: str = "store"
) -> AppStateSetReply:
    found = load_app(conn, req.app_scope)
    if found is None:
        raise LineUpError(ErrorCode.APP_NOT_INSTALLED, "no such app")
    app, _ = found
    changed = app.state != req.state
    if changed:
        conn.execute(
            "UPDATE registry SET state = ?, updated_at = ? WHERE app_scope = ?",
            (req.state, now, req.app_scope),
        )
        audit_app(conn, now, actor, f"app.state.{req.state}", req.app_scope, code=req.code)
    complete_operation(conn, req.operation_id, now, actor)
    return AppStateSetReply(app=_must_load(conn, req.app_scope), changed=changed)


def app_remove(
    conn: Connection, req: AppRemoveRequest, now: float, *, actor: str = "store"
) -> AppRemoveReply:
    found = load_app(conn, req.app_scope)
    if found is None:
        complete_operation(conn, req.operation_id, now, actor)
        return AppRemoveReply(removed=False, session_documents=0, grants=0)
    if found[0].source != "installed":
        raise LineUpError(ErrorCode.APP_PROTECTED, "not an installed app")
    before = conn.total_changes()
    conn.execute("DELETE FROM session_data WHERE app_scope = ?", (req.app_scope,))
    documents = conn.total_changes() - before
    before = conn.total_changes()
    conn.execute("DELETE FROM capability_grants WHERE app_scope = ?", (req.app_scope,))
    grants = conn.total_changes() - before
    conn.execute("DELETE FROM registry WHERE app_scope = ?", (req.app_scope,))
    audit_app(conn, now, actor, "app.removed", req.app_scope, subject_id=req.operation_id)
    complete_operation(conn, req.operation_id, now, actor)
    return AppRemoveReply(removed=True, session_documents=documents, grants=grants)


# ---------------------------------------------------------------------------------- revocations


def revocation_add(
    conn: Connection, req: RevocationAddRequest, now: float, *, actor: str = "store"
) -> RevocationAddReply:
    before = conn.total_changes()
    conn.execute(
        "INSERT INTO revocations (app_scope, version, revoked_at) VALUES (?, ?, ?)"
        " ON CONFLICT (app_scope, version) DO NOTHING",
        (req.app_scope, req.version, now),
    )
    created = conn.total_changes() > before
    if created:
        conn.execute(
            "UPDATE registry SET revoked = 1 WHERE app_scope = ? AND version = ?",
            (req.app_scope, req.version),
        )
        audit_app(conn, now, actor, "app.version_revoked", req.app_scope)
    return RevocationAddReply(created=created)


def revocation_list(
    conn: Connection, req: RevocationListRequest, now: float
) -> RevocationListReply:
    rows = conn.execute(
        "SELECT app_scope, version FROM revocations ORDER BY app_scope, version"
    ).fetchall()
    return RevocationListReply(revoked=tuple((str(s), str(v)) for s, v in rows))


# ---------------------------------------------------------------------------------- operations


def _operation(conn: Connection, operation_id: str) -> AppOperationRow | None:
    rows = conn.execute(
        f"SELECT {', '.join(_OP_COLUMNS)} FROM app_operations WHERE operation_id = ?",
        (operation_id,),
    ).fetchall()
    if not rows:
        return None
    return AppOperationRow.model_validate(dict(zip(_OP_COLUMNS, rows[0], strict=True)))


def _audit_operation(conn: Connection, now: float, actor: str, op: AppOperationRow) -> None:
    audit_app(
        conn,
        now,
        actor,
        f"app.{op.kind}.{op.state}",
        op.app_scope,
        subject_id=op.operation_id,
        code=op.code,
    )


def _move(
    conn: Connection, operation_id: str, state: str, code: str | None, now: float, actor: str
) -> bool:
    """Move an operation forward to `state`; False (nothing written) if it is not behind it."""
    op = _operation(conn, operation_id)
    if op is None or _RANK[op.state] >= _RANK[state]:
        return False
    conn.execute(
        "UPDATE app_operations SET state = ?, code = coalesce(?, code), updated_at = ?"
        " WHERE operation_id = ?",
        (state, code, now, operation_id),
    )
    moved = _operation(conn, operation_id)
    assert moved is not None
    _audit_operation(conn, now, actor, moved)
    return True


def complete_operation(conn: Connection, operation_id: str | None, now: float, actor: str) -> None:
    """Complete `operation_id` (if any, and not final yet) in the caller's savepoint."""
    if operation_id is not None:
        _move(conn, operation_id, "completed", None, now, actor)


def app_operation_put(
    conn: Connection, req: AppOperationPutRequest, now: float, *, actor: str = "store"
) -> AppOperationPutReply:
    found = _operation(conn, req.operation_id)
    if found is None:
        conn.execute(
            f"INSERT INTO app_operations ({', '.join(_OP_COLUMNS)})"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (req.operation_id, req.app_scope, req.kind, req.state, req.version,
             req.from_version, req.code, now, now),
        )  # fmt: skip
        created = _operation(conn, req.operation_id)
        assert created is not None
        _audit_operation(conn, now, actor, created)
        return AppOperationPutReply(operation=created, created=True, changed=True)
    if (found.app_scope, found.kind) != (req.app_scope, req.kind):
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "another operation has this id")
    if _RANK[found.state] >= _RANK[req.state]:
        return AppOperationPutReply(operation=found, created=False, changed=False)
    conn.execute(
        "UPDATE app_operations SET version = coalesce(?, version),"
        " from_version = coalesce(?, from_version) WHERE operation_id = ?",
        (req.version, req.from_version, req.operation_id),
    )
    _move(conn, req.operation_id, req.state, req.code, now, actor)
    moved = _operation(conn, req.operation_id)
    assert moved is not None
    return AppOperationPutReply(operation=moved, created=False, changed=True)


def app_operation_list(
    conn: Connection, req: AppOperationListRequest, now: float
) -> AppOperationListReply:
    rows = conn.execute(
        f"SELECT {', '.join(_OP_COLUMNS)} FROM app_operations"
        " WHERE (?1 IS NULL OR operation_id = ?1) AND (?2 IS NULL OR app_scope = ?2)"
        " ORDER BY created_at DESC, rowid DESC LIMIT ?3",
        (req.operation_id, req.app_scope, req.limit),
    ).fetchall()
    return AppOperationListReply(
        operations=tuple(
            AppOperationRow.model_validate(dict(zip(_OP_COLUMNS, row, strict=True))) for row in rows
        )
    )


def _applied(conn: Connection, op: AppOperationRow) -> bool:
    """Whether the registry shows what `op` was to do (its result outlived a crash)."""
    found = load_app(conn, op.app_scope)
    app = found[0] if found is not None else None
    if op.kind in ("install", "update", "rollback"):
        return app is not None and op.version is not None and app.version == op.version
    if op.kind in ("enable", "disable"):
        return app is not None and app.enabled == (op.kind == "enable")
    if op.kind == "remove":
        return app is None
    if op.kind == "revoke":
        return bool(
            conn.execute(
                "SELECT 1 FROM revocations WHERE app_scope = ? AND version = ?",
                (op.app_scope, op.version or ""),
            ).fetchall()
        ) and (app is None or app.version != op.version or app.state == "unavailable")
    if op.kind == "set_default":
        value: object = setting_get(conn, SettingGetRequest(name="default_app"), now=0).value
        return value == op.app_scope
    return False


def app_operation_recover(
    conn: Connection, req: AppOperationRecoverRequest, now: float, *, actor: str = "store"
) -> AppOperationRecoverReply:
    rows = conn.execute(
        "SELECT operation_id FROM app_operations WHERE state IN ('requested', 'running')"
        " ORDER BY created_at"
    ).fetchall()
    completed: list[str] = []
    failed: list[str] = []
    for (operation_id,) in rows:
        op = _operation(conn, str(operation_id))
        assert op is not None
        if _applied(conn, op):
            _move(conn, op.operation_id, "completed", None, now, actor)
            completed.append(op.operation_id)
        else:
            _move(conn, op.operation_id, "failed", ErrorCode.ACTOR_RESTARTED.value, now, actor)
            failed.append(op.operation_id)
    return AppOperationRecoverReply(completed=tuple(completed), failed=tuple(failed))


# ---------------------------------------------------------------------------------- settings


def setting_get(conn: Connection, req: SettingGetRequest, now: float) -> SettingGetReply:
    rows = conn.execute("SELECT value FROM settings WHERE name = ?", (req.name,)).fetchall()
    if not rows:
        return SettingGetReply(value=None)
    text = rows[0][0]
    assert isinstance(text, str)
    return SettingGetReply(value=json.loads(text))


def setting_put(
    conn: Connection, req: SettingPutRequest, now: float, *, actor: str = "store"
) -> SettingPutReply:
    text = bounded_json(req.value, max_bytes=MAX_SETTING_BYTES, what="setting")
    rows = conn.execute("SELECT value FROM settings WHERE name = ?", (req.name,)).fetchall()
    changed = not rows or rows[0][0] != text
    if changed:
        conn.execute(
            "INSERT INTO settings (name, value, updated_at) VALUES (?, ?, ?)"
            " ON CONFLICT (name) DO UPDATE SET value = excluded.value,"
            " updated_at = excluded.updated_at",
            (req.name, text, now),
        )
        record = AuditRecord(event="setting.changed", actor=actor, subject_id=req.name, at=now)
        audit_append(conn, [record], now)
    complete_operation(conn, req.operation_id, now, actor)
    return SettingPutReply(changed=changed)
