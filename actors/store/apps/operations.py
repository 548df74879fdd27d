"""App session data, the app registry and the inventory revision (`store.session_data.*`,
`store.registry.*`, `store.inventory.*`).

The contract of every operation (`_rows`): one blocking function per request, run in its own
savepoint.

Session data (seed 004 §6.3) is one JSON object per `(app_scope, app_session_id)`; the store
checks only that it is strict JSON within the size and depth quotas, never its business schema.
A replace is compare-and-set on the revision: it is applied only at `expected_revision`, so an
old Surface or a double click never overwrites newer data. A retry of a replace that was applied
(the reply was lost) finds its own data at `expected_revision + 1` and is answered as a repeat.

Inventory revisions come from an AUTOINCREMENT key: each bump is a new row, so a revision is
never handed out twice, even after rows are pruned, and the current one is the greatest. A
`bump_id` is honoured only for the current revision: the same id again while it is current is a
repeat, but once another bump came after it, the id gets a new revision (the Agent must be told
of every change, and its outbox row is keyed by the revision).
"""

from __future__ import annotations

import json
from typing import Final

from lineup.actors.kernel.errors import ErrorCode, LineUpError

from .._db import Connection
from .._fields import MAX_MANIFEST_BYTES, MAX_SESSION_DATA_BYTES, bounded_json
from .._rows import int_or_none
from .._table import Served, read, write, write_as
from ..audit.messages import AuditRecord
from ..audit.operations import audit_append
from . import registry
from .messages import (
    AppEnabledSetReply,
    AppEnabledSetRequest,
    AppInstallRecordRequest,
    AppOperationListRequest,
    AppOperationPutRequest,
    AppOperationRecoverRequest,
    AppRegistryGetRequest,
    AppRegistryListReply,
    AppRegistryListRequest,
    AppRegistryPutReply,
    AppRegistryPutRequest,
    AppRemoveRequest,
    AppRollbackRequest,
    AppStateSetRequest,
    InventoryRevisionBumpReply,
    InventoryRevisionBumpRequest,
    InventoryRevisionGetReply,
    InventoryRevisionGetRequest,
    RevocationAddRequest,
    RevocationListRequest,
    SessionDataGetReply,
    SessionDataGetRequest,
    SessionDataReplaceReply,
    SessionDataReplaceRequest,
    SettingGetRequest,
    SettingPutRequest,
)
from .registry import APP_SELECT, app_row, complete_operation, load_app

__all__ = [
    "HANDLERS",
    "app_enabled_set",
    "app_registry_list",
    "app_registry_put",
    "inventory_revision_bump",
    "inventory_revision_get",
    "session_data_get",
    "session_data_replace",
]

# ---------------------------------------------------------------------------------- session data


def _document(conn: Connection, app_scope: str, app_session_id: str) -> tuple[str | None, int]:
    """The stored JSON text and its revision; `(None, 0)` when never written."""
    rows = conn.execute(
        "SELECT data, revision FROM session_data WHERE app_scope = ? AND app_session_id = ?",
        (app_scope, app_session_id),
    ).fetchall()
    if not rows:
        return None, 0
    data, revision = rows[0]
    assert data is None or isinstance(data, str)
    assert isinstance(revision, int)
    return data, revision


def session_data_get(
    conn: Connection, req: SessionDataGetRequest, now: float
) -> SessionDataGetReply:
    text, revision = _document(conn, req.app_scope, req.app_session_id)
    return SessionDataGetReply(data=json.loads(text) if text else None, revision=revision)


def session_data_replace(
    conn: Connection, req: SessionDataReplaceRequest, now: float
) -> SessionDataReplaceReply:
    text = bounded_json(req.data, max_bytes=MAX_SESSION_DATA_BYTES, what="session data")
    stored, revision = _document(conn, req.app_scope, req.app_session_id)
    if revision != req.expected_revision:
        if revision == req.expected_revision + 1 and stored == text:
            return SessionDataReplaceReply(revision=revision, changed=False)
        raise LineUpError(ErrorCode.STALE_REVISION, "session data changed since")
    conn.execute(
        "INSERT INTO session_data (app_scope, app_session_id, revision, data, updated_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (app_scope, app_session_id) DO UPDATE SET"
        " revision = excluded.revision, data = excluded.data, updated_at = excluded.updated_at",
        (req.app_scope, req.app_session_id, revision + 1, text, now),
    )
    return SessionDataReplaceReply(revision=revision + 1, changed=True)


# ---------------------------------------------------------------------------------- registry

_SELECT_APPS: Final = f"SELECT {APP_SELECT} FROM registry"
_app = app_row
_load_app = load_app


def app_registry_put(
    conn: Connection, req: AppRegistryPutRequest, now: float, *, actor: str = "store"
) -> AppRegistryPutReply:
    manifest = bounded_json(req.manifest, max_bytes=MAX_MANIFEST_BYTES, what="manifest")
    found = _load_app(conn, req.app_scope)
    if found is None:
        conn.execute(
            "INSERT INTO registry (app_scope, version, kind, manifest, source, installed_at,"
            " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (req.app_scope, req.version, req.kind, manifest, req.source, now, now),
        )
    else:
        app, stored = found
        if app.source == "installed":
            # A bundled or dev app never replaces an installed one's verified row.
            raise LineUpError(ErrorCode.APP_PROTECTED, "an installed app has this scope")
        if (app.version, app.kind, stored, app.source) == (
            req.version,
            req.kind,
            manifest,
            req.source,
        ):
            return AppRegistryPutReply(app=app, created=False, changed=False)
        conn.execute(
            "UPDATE registry SET previous_version = CASE WHEN version = ?1 THEN previous_version"
            " ELSE version END, version = ?1, kind = ?2, manifest = ?3, updated_at = ?4,"
            " source = ?6 WHERE app_scope = ?5",
            (req.version, req.kind, manifest, now, req.app_scope, req.source),
        )
    loaded = _load_app(conn, req.app_scope)
    assert loaded is not None
    _audit_app(conn, now, actor, "app.installed", req.app_scope)
    return AppRegistryPutReply(app=loaded[0], created=found is None, changed=True)


def app_enabled_set(
    conn: Connection, req: AppEnabledSetRequest, now: float, *, actor: str = "store"
) -> AppEnabledSetReply:
    found = _load_app(conn, req.app_scope)
    if found is None:
        raise LineUpError(ErrorCode.APP_NOT_INSTALLED, "no such app")
    app = found[0]
    if app.enabled == req.enabled:
        complete_operation(conn, req.operation_id, now, actor)
        return AppEnabledSetReply(app=app, changed=False)
    conn.execute(
        "UPDATE registry SET enabled = ?, updated_at = ? WHERE app_scope = ?",
        (int(req.enabled), now, req.app_scope),
    )
    _audit_app(conn, now, actor, "app.enabled" if req.enabled else "app.disabled", req.app_scope)
    complete_operation(conn, req.operation_id, now, actor)
    loaded = _load_app(conn, req.app_scope)
    assert loaded is not None
    return AppEnabledSetReply(app=loaded[0], changed=True)


def _audit_app(conn: Connection, now: float, actor: str, event: str, app_scope: str) -> None:
    record = AuditRecord(event=event, actor=actor, peer=app_scope, subject_id=app_scope, at=now)
    audit_append(conn, [record], now)


def app_registry_list(
    conn: Connection, req: AppRegistryListRequest, now: float
) -> AppRegistryListReply:
    rows = conn.execute(f"{_SELECT_APPS} ORDER BY app_scope LIMIT ?", (req.limit,)).fetchall()
    return AppRegistryListReply(apps=tuple(_app(values) for values in rows))


# ---------------------------------------------------------------------------------- inventory


def _current_revision(conn: Connection) -> int:
    revision = int_or_none(conn, "SELECT coalesce(max(revision), 0) FROM inventory_bumps", ())
    assert revision is not None  # an aggregate always has its row
    return revision


def inventory_revision_bump(
    conn: Connection, req: InventoryRevisionBumpRequest, now: float
) -> InventoryRevisionBumpReply:
    if req.bump_id is not None:
        current = conn.execute(
            "SELECT revision, bump_id FROM inventory_bumps ORDER BY revision DESC LIMIT 1"
        ).fetchall()
        if current and current[0][1] == req.bump_id:
            revision = current[0][0]
            assert isinstance(revision, int)
            return InventoryRevisionBumpReply(revision=revision, created=False)
        # The id names an older revision (content that was current before, e.g. an app
        # disabled then enabled again): that revision is never handed out again, the id
        # moves to the new one.
        conn.execute("UPDATE inventory_bumps SET bump_id = NULL WHERE bump_id = ?", (req.bump_id,))
    revision = int_or_none(
        conn,
        "INSERT INTO inventory_bumps (bump_id, reason, created_at) VALUES (?, ?, ?)"
        " RETURNING revision",
        (req.bump_id, req.reason, now),
    )
    assert revision is not None  # a plain INSERT either returns its row or raises
    return InventoryRevisionBumpReply(revision=revision, created=True)


def inventory_revision_get(
    conn: Connection, req: InventoryRevisionGetRequest, now: float
) -> InventoryRevisionGetReply:
    return InventoryRevisionGetReply(revision=_current_revision(conn))


# What the store serves from this area: request, operation, access (`_table`).
HANDLERS: Final[tuple[Served, ...]] = (
    read(SessionDataGetRequest, session_data_get),
    write(SessionDataReplaceRequest, session_data_replace),
    write_as(AppRegistryPutRequest, app_registry_put),
    write_as(AppEnabledSetRequest, app_enabled_set),
    read(AppRegistryListRequest, app_registry_list),
    read(AppRegistryGetRequest, registry.app_registry_get),
    write_as(AppInstallRecordRequest, registry.app_install_record),
    write_as(AppRollbackRequest, registry.app_rollback),
    write_as(AppStateSetRequest, registry.app_state_set),
    write_as(AppRemoveRequest, registry.app_remove),
    write_as(RevocationAddRequest, registry.revocation_add),
    read(RevocationListRequest, registry.revocation_list),
    write_as(AppOperationPutRequest, registry.app_operation_put),
    read(AppOperationListRequest, registry.app_operation_list),
    write_as(AppOperationRecoverRequest, registry.app_operation_recover),
    read(SettingGetRequest, registry.setting_get),
    write_as(SettingPutRequest, registry.setting_put),
    write(InventoryRevisionBumpRequest, inventory_revision_bump),
    read(InventoryRevisionGetRequest, inventory_revision_get),
)
