"""Capability grants (`store.capability_grant.*`). Re-exported by `lineup.actors.store.messages`.

A grant is the user's standing decision for one app and one capability: `allow` ("Always
allow" in the runtime's prompt, or the permissions page) or `deny` (a block from the
permissions page), until `expires_at` (None: until revoked). No grant means the host's policy or
the catalog's default applies (`lineup.sdk.capabilities`). Written by the gateway only; focus
reads them (a tool whose app cannot use a capability it declares leaves the inventory). Each
change is audited in the same transaction, with the app and the capability, never a purpose.
"""

from typing import Literal

from lineup.actors.kernel.messages import Message

from .._fields import Name

__all__ = [
    "CapabilityGrantDeleteReply",
    "CapabilityGrantDeleteRequest",
    "CapabilityGrantListReply",
    "CapabilityGrantListRequest",
    "CapabilityGrantPutReply",
    "CapabilityGrantPutRequest",
    "CapabilityGrantRow",
]


class CapabilityGrantRow(Message):
    type: Literal["store.capability_grant.row"] = "store.capability_grant.row"
    app_scope: Name
    capability: Name
    policy: Literal["allow", "deny"]
    granted_at: float
    expires_at: float | None = None


class CapabilityGrantPutRequest(Message):
    """Make or replace the grant of `app_scope` for `capability`. Idempotent: the same policy
    and expiry again change nothing (`changed` False)."""

    type: Literal["store.capability_grant.put"] = "store.capability_grant.put"
    app_scope: Name
    capability: Name
    policy: Literal["allow", "deny"]
    expires_at: float | None = None


class CapabilityGrantPutReply(Message):
    type: Literal["store.capability_grant.put.reply"] = "store.capability_grant.put.reply"
    grant: CapabilityGrantRow
    changed: bool


class CapabilityGrantDeleteRequest(Message):
    """Revoke the grant (none there: `changed` False). The next request asks again."""

    type: Literal["store.capability_grant.delete"] = "store.capability_grant.delete"
    app_scope: Name
    capability: Name


class CapabilityGrantDeleteReply(Message):
    type: Literal["store.capability_grant.delete.reply"] = "store.capability_grant.delete.reply"
    changed: bool


class CapabilityGrantListRequest(Message):
    """The grants (of one app, or all), expired ones left out (`now` is the store's clock)."""

    type: Literal["store.capability_grant.list"] = "store.capability_grant.list"
    app_scope: Name | None = None


class CapabilityGrantListReply(Message):
    type: Literal["store.capability_grant.list.reply"] = "store.capability_grant.list.reply"
    grants: tuple[CapabilityGrantRow, ...]
