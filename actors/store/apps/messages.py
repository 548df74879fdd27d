"""App session data, the app registry and the inventory revision (`store.session_data.*`,
`store.registry.*`, `store.inventory.*`). Re-exported by `lineup.actors.store.messages`.

Session data is one JSON object per `(app_scope, app_session_id)` with a revision (seed 004
§6.3): a write names the revision it read, and a stale one is refused with `stale_revision`,
never merged.
"""

from __future__ import annotations

from typing import Any, Literal

from lineup.actors.kernel.messages import Message

from .._fields import Id, Limit, Name, Revision

__all__ = [
    "AppEnabledSetReply",
    "AppEnabledSetRequest",
    "AppRegistryListReply",
    "AppRegistryListRequest",
    "AppRegistryPutReply",
    "AppRegistryPutRequest",
    "AppRow",
    "InventoryRevisionBumpReply",
    "InventoryRevisionBumpRequest",
    "InventoryRevisionGetReply",
    "InventoryRevisionGetRequest",
    "SessionDataGetReply",
    "SessionDataGetRequest",
    "SessionDataReplaceReply",
    "SessionDataReplaceRequest",
]


# ---------------------------------------------------------------------------------- session data


class SessionDataGetRequest(Message):
    type: Literal["store.session_data.get"] = "store.session_data.get"
    app_scope: Name
    app_session_id: Id


class SessionDataGetReply(Message):
    """Never written: `data` None, `revision` 0."""

    type: Literal["store.session_data.get.reply"] = "store.session_data.get.reply"
    data: dict[str, Any] | None
    revision: int


class SessionDataReplaceRequest(Message):
    """Replace the document written at `expected_revision`; it becomes `expected_revision + 1`.
    The first write names revision 0. Refused with `stale_revision` when the document is at
    another revision (unless this very write made it so: a repeat answers `changed` False), and
    with `invalid_arguments` for data that is not strict JSON, over 256 KiB or nested deeper
    than 32."""

    type: Literal["store.session_data.replace"] = "store.session_data.replace"
    app_scope: Name
    app_session_id: Id
    data: dict[str, Any]
    expected_revision: Revision


class SessionDataReplaceReply(Message):
    type: Literal["store.session_data.replace.reply"] = "store.session_data.replace.reply"
    revision: int
    changed: bool


# ---------------------------------------------------------------------------------- registry


class AppRow(Message):
    type: Literal["store.registry.row"] = "store.registry.row"
    app_scope: Name
    enabled: bool
    version: Name
    kind: Name
    updated_at: float


class AppRegistryPutRequest(Message):
    """Install an app or record its new version (the old one becomes the rollback target).
    A new app is enabled; an existing one keeps its flag. Idempotent: the same version and
    manifest again change nothing. Refused with `invalid_arguments` for a manifest over
    256 KiB."""

    type: Literal["store.registry.put"] = "store.registry.put"
    app_scope: Name
    version: Name
    kind: Name  # the manifest's kind, e.g. "system", "bundled-reference"
    manifest: dict[str, Any]


class AppRegistryPutReply(Message):
    type: Literal["store.registry.put.reply"] = "store.registry.put.reply"
    app: AppRow
    created: bool
    changed: bool


class AppEnabledSetRequest(Message):
    """Enable or disable an installed app (`app_not_installed` otherwise). Idempotent. Does not
    bump the inventory revision: the router does, after."""

    type: Literal["store.registry.enabled.set"] = "store.registry.enabled.set"
    app_scope: Name
    enabled: bool


class AppEnabledSetReply(Message):
    type: Literal["store.registry.enabled.set.reply"] = "store.registry.enabled.set.reply"
    app: AppRow
    changed: bool


class AppRegistryListRequest(Message):
    """Installed apps by `app_scope`."""

    type: Literal["store.registry.list"] = "store.registry.list"
    limit: Limit = 1000


class AppRegistryListReply(Message):
    type: Literal["store.registry.list.reply"] = "store.registry.list.reply"
    apps: tuple[AppRow, ...]


# ---------------------------------------------------------------------------------- inventory


class InventoryRevisionBumpRequest(Message):
    """A new inventory revision, greater than every one before (never reused), in a transaction
    of its own. `reason` is a short code kept with it (e.g. "app_enabled"). With `bump_id` (e.g.
    a digest of the inventory's content), the current revision is returned when it was made
    with that id (`created` False): a retry, or a restart with nothing changed. An id whose
    revision is no longer the current one gets a new revision: content that comes back (an app
    disabled, then enabled again) is a change like any other."""

    type: Literal["store.inventory.revision.bump"] = "store.inventory.revision.bump"
    reason: Name
    bump_id: Id | None = None


class InventoryRevisionBumpReply(Message):
    type: Literal["store.inventory.revision.bump.reply"] = "store.inventory.revision.bump.reply"
    revision: int
    created: bool


class InventoryRevisionGetRequest(Message):
    type: Literal["store.inventory.revision.get"] = "store.inventory.revision.get"


class InventoryRevisionGetReply(Message):
    """0 before the first bump."""

    type: Literal["store.inventory.revision.get.reply"] = "store.inventory.revision.get.reply"
    revision: int
