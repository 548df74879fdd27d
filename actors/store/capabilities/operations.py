"""Capability grants (`store.capability_grant.*`): the user's standing decisions.

The contract of every operation (`_rows`): one blocking function per request, run in its own
savepoint. A put or a delete that changes a grant writes its audit row in the same savepoint,
naming the app (`peer`) and the capability (`message_type`) and the policy (`code`), never a
purpose or anything the app sent. Expired grants are never listed: a grant past its
`expires_at` is as if revoked (the next put replaces it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from .._db import Connection
from .._table import Served, read, write_as
from ..audit.messages import AuditRecord
from ..audit.operations import audit_append
from .messages import (
    CapabilityGrantDeleteReply,
    CapabilityGrantDeleteRequest,
    CapabilityGrantListReply,
    CapabilityGrantListRequest,
    CapabilityGrantPutReply,
    CapabilityGrantPutRequest,
    CapabilityGrantRow,
)

__all__ = ["HANDLERS", "capability_grant_delete", "capability_grant_list", "capability_grant_put"]

_COLUMNS: Final = ("app_scope", "capability", "policy", "granted_at", "expires_at")
_SELECT: Final = f"SELECT {', '.join(_COLUMNS)} FROM capability_grants"
_UNEXPIRED: Final = "(expires_at IS NULL OR expires_at > ?)"


def _row(values: Sequence[Any]) -> CapabilityGrantRow:
    return CapabilityGrantRow.model_validate(dict(zip(_COLUMNS, values, strict=True)))


def _load(conn: Connection, app_scope: str, capability: str) -> CapabilityGrantRow | None:
    rows = conn.execute(
        f"{_SELECT} WHERE app_scope = ? AND capability = ?", (app_scope, capability)
    ).fetchall()
    return _row(rows[0]) if rows else None


def _audit(
    conn: Connection, now: float, actor: str, event: str, app_scope: str, capability: str,
    policy: str | None,
) -> None:  # fmt: skip
    record = AuditRecord(
        event=event,
        actor=actor,
        peer=app_scope,
        subject_id=app_scope,
        message_type=capability,
        code=policy,
        at=now,
    )
    audit_append(conn, [record], now)


def capability_grant_put(
    conn: Connection, req: CapabilityGrantPutRequest, now: float, *, actor: str = "store"
) -> CapabilityGrantPutReply:
    found = _load(conn, req.app_scope, req.capability)
    unexpired = found is not None and (found.expires_at is None or found.expires_at > now)
    if (
        found is not None
        and unexpired
        and (found.policy, found.expires_at)
        == (
            req.policy,
            req.expires_at,
        )
    ):
        return CapabilityGrantPutReply(grant=found, changed=False)
    conn.execute(
        "INSERT INTO capability_grants (app_scope, capability, policy, granted_at, expires_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (app_scope, capability) DO UPDATE SET"
        " policy = excluded.policy, granted_at = excluded.granted_at,"
        " expires_at = excluded.expires_at",
        (req.app_scope, req.capability, req.policy, now, req.expires_at),
    )
    made = _load(conn, req.app_scope, req.capability)
    assert made is not None
    _audit(conn, now, actor, "store.capability_grant.put", req.app_scope, req.capability,
           made.policy)  # fmt: skip
    return CapabilityGrantPutReply(grant=made, changed=True)


def capability_grant_delete(
    conn: Connection, req: CapabilityGrantDeleteRequest, now: float, *, actor: str = "store"
) -> CapabilityGrantDeleteReply:
    found = _load(conn, req.app_scope, req.capability)
    if found is None:
        return CapabilityGrantDeleteReply(changed=False)
    conn.execute(
        "DELETE FROM capability_grants WHERE app_scope = ? AND capability = ?",
        (req.app_scope, req.capability),
    )
    # An expired grant was already without effect: removing it is housekeeping, not a change.
    changed = found.expires_at is None or found.expires_at > now
    if changed:
        _audit(conn, now, actor, "store.capability_grant.deleted", req.app_scope,
               req.capability, None)  # fmt: skip
    return CapabilityGrantDeleteReply(changed=changed)


def capability_grant_list(
    conn: Connection, req: CapabilityGrantListRequest, now: float
) -> CapabilityGrantListReply:
    if req.app_scope is None:
        rows = conn.execute(
            f"{_SELECT} WHERE {_UNEXPIRED} ORDER BY app_scope, capability", (now,)
        ).fetchall()
    else:
        rows = conn.execute(
            f"{_SELECT} WHERE app_scope = ? AND {_UNEXPIRED} ORDER BY capability",
            (req.app_scope, now),
        ).fetchall()
    return CapabilityGrantListReply(grants=tuple(_row(values) for values in rows))


HANDLERS: Final[tuple[Served, ...]] = (
    write_as(CapabilityGrantPutRequest, capability_grant_put),
    write_as(CapabilityGrantDeleteRequest, capability_grant_delete),
    read(CapabilityGrantListRequest, capability_grant_list),
)
