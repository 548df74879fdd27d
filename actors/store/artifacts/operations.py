"""Artifacts' metadata (`store.artifact.*`).

The contract of every operation (`_rows`): one blocking function per request, inside its own
savepoint. A create is keyed by its `artifact_id` (a retry is a repeat that writes nothing) and
reads the app's usage in the same savepoint as its insert, so the quota holds however many
creates run at once. Its audit row names the artifact and its owner, never its name or content.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from lineup.actors.kernel.errors import ErrorCode, LineUpError

from .._db import Connection
from .._table import Served, read, write_as
from ..audit.messages import AuditRecord
from ..audit.operations import audit_append
from .messages import (
    ArtifactCreateReply,
    ArtifactCreateRequest,
    ArtifactGetReply,
    ArtifactGetRequest,
    ArtifactListReply,
    ArtifactListRequest,
    ArtifactRow,
    ArtifactUsageReply,
    ArtifactUsageRequest,
)

__all__ = ["HANDLERS", "artifact_create", "artifact_get", "artifact_list", "artifact_usage"]

_COLUMNS: Final = (
    "artifact_id", "app_scope", "instance_id", "name", "media_type", "size", "sha256",
    "created_at",
)  # fmt: skip
_SELECT: Final = f"SELECT {', '.join(_COLUMNS)} FROM artifacts"


def _row(values: Sequence[Any]) -> ArtifactRow:
    return ArtifactRow.model_validate(dict(zip(_COLUMNS, values, strict=True)))


def _load(conn: Connection, artifact_id: str) -> ArtifactRow | None:
    rows = conn.execute(f"{_SELECT} WHERE artifact_id = ?", (artifact_id,)).fetchall()
    return _row(rows[0]) if rows else None


def _usage(conn: Connection, app_scope: str) -> tuple[int, int]:
    [(total, count)] = conn.execute(
        "SELECT coalesce(sum(size), 0), count(*) FROM artifacts WHERE app_scope = ?",
        (app_scope,),
    ).fetchall()
    assert isinstance(total, int)
    assert isinstance(count, int)
    return total, count


def artifact_create(
    conn: Connection, req: ArtifactCreateRequest, now: float, *, actor: str = "store"
) -> ArtifactCreateReply:
    found = _load(conn, req.artifact_id)
    if found is not None:
        if found.app_scope != req.app_scope:
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "the artifact id is another app's")
        return ArtifactCreateReply(artifact=found, created=False)
    total, count = _usage(conn, req.app_scope)
    if (req.max_app_bytes is not None and total + req.size > req.max_app_bytes) or (
        req.max_app_count is not None and count + 1 > req.max_app_count
    ):
        raise LineUpError(ErrorCode.QUOTA_EXCEEDED, "the app's artifacts are at their quota")
    conn.execute(
        f"INSERT INTO artifacts ({', '.join(_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (req.artifact_id, req.app_scope, req.instance_id, req.name, req.media_type, req.size,
         req.sha256, now),
    )  # fmt: skip
    made = _load(conn, req.artifact_id)
    assert made is not None
    record = AuditRecord(
        event="store.artifact.created",
        actor=actor,
        peer=req.app_scope,
        subject_id=req.artifact_id,
        at=now,
    )
    audit_append(conn, [record], now)
    return ArtifactCreateReply(artifact=made, created=True)


def artifact_get(conn: Connection, req: ArtifactGetRequest, now: float) -> ArtifactGetReply:
    return ArtifactGetReply(artifact=_load(conn, req.artifact_id))


def artifact_list(conn: Connection, req: ArtifactListRequest, now: float) -> ArtifactListReply:
    where: list[str] = []
    bindings: list[object] = []
    if req.app_scope is not None:
        where.append("app_scope = ?")
        bindings.append(req.app_scope)
    if req.instance_id is not None:
        where.append("instance_id = ?")
        bindings.append(req.instance_id)
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    rows = conn.execute(
        f"{_SELECT}{clause} ORDER BY created_at DESC, artifact_id DESC LIMIT ?",
        (*bindings, req.limit),
    ).fetchall()
    return ArtifactListReply(artifacts=tuple(_row(values) for values in rows))


def artifact_usage(conn: Connection, req: ArtifactUsageRequest, now: float) -> ArtifactUsageReply:
    total, count = _usage(conn, req.app_scope)
    return ArtifactUsageReply(app_scope=req.app_scope, bytes=total, count=count)


HANDLERS: Final[tuple[Served, ...]] = (
    write_as(ArtifactCreateRequest, artifact_create),
    read(ArtifactGetRequest, artifact_get),
    read(ArtifactListRequest, artifact_list),
    read(ArtifactUsageRequest, artifact_usage),
)
