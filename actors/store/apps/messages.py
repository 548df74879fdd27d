"""App session data, the app registry and the inventory revision (`store.session_data.*`,
`store.registry.*`, `store.inventory.*`). Re-exported by `lineup.actors.store.messages`.

Session data is one JSON object per `(app_scope, app_session_id)` with a revision (seed 004
§6.3): a write names the revision it read, and a stale one is refused with `stale_revision`,
never merged.
"""

from typing import Any, Literal

from pydantic import Field

from lineup.actors.kernel.messages import Message
from lineup.facts.apps import AppSource, AppState, InstallState
from lineup.facts.operations import OperationKind, OperationState

from .._fields import Id, Limit, Name, Revision

__all__ = [
    "DEFAULT_APP_SETTING",
    "AppEnabledSetReply",
    "AppEnabledSetRequest",
    "AppInstallRecordReply",
    "AppInstallRecordRequest",
    "AppOperationKind",
    "AppOperationListReply",
    "AppOperationListRequest",
    "AppOperationPutReply",
    "AppOperationPutRequest",
    "AppOperationRecoverReply",
    "AppOperationRecoverRequest",
    "AppOperationRow",
    "AppOperationState",
    "AppRecord",
    "AppRegistryGetReply",
    "AppRegistryGetRequest",
    "AppRegistryListReply",
    "AppRegistryListRequest",
    "AppRegistryPutReply",
    "AppRegistryPutRequest",
    "AppRemoveReply",
    "AppRemoveRequest",
    "AppRollbackReply",
    "AppRollbackRequest",
    "AppRow",
    "AppSource",
    "AppState",
    "AppStateSetReply",
    "AppStateSetRequest",
    "InstallState",
    "InventoryRevisionBumpReply",
    "InventoryRevisionBumpRequest",
    "InventoryRevisionGetReply",
    "InventoryRevisionGetRequest",
    "RevocationAddReply",
    "RevocationAddRequest",
    "RevocationListReply",
    "RevocationListRequest",
    "SessionDataGetReply",
    "SessionDataGetRequest",
    "SessionDataReplaceReply",
    "SessionDataReplaceRequest",
    "SettingGetReply",
    "SettingGetRequest",
    "SettingPutReply",
    "SettingPutRequest",
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


AppOperationKind = OperationKind
AppOperationState = OperationState
DEFAULT_APP_SETTING = "default_app"  # the settings row naming the user's default app


class AppRow(Message):
    type: Literal["store.registry.row"] = "store.registry.row"
    app_scope: Name
    enabled: bool
    version: Name
    kind: Name
    updated_at: float
    source: AppSource = "bundled"
    state: AppState = "active"
    key_id: str | None = None
    bundle_sha256: str | None = None
    previous_version: str | None = None  # the predecessor a rollback returns to
    # Seed 004 §4.3's record: when it was installed and last enabled (None while disabled),
    # whether an install, update or rollback is open or the latest failed, and how many of its
    # instances have not ended.
    installed_at: float = 0.0
    enabled_at: float | None = None
    install_state: InstallState = "installed"
    active_instance_count: int = Field(default=0, ge=0)


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
    source: Literal["bundled", "dev"] = "bundled"  # installed apps: `AppInstallRecordRequest`


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
    operation_id: Id | None = None  # completed in the same transaction


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


# ---------------------------------------------------------------------------------- delivery
#
# Installed apps (issue 15). Each change of the registry that an `AppOperation` makes names its
# `operation_id`: the operation is completed in the change's own transaction, so after a crash
# the row and the operation never disagree. Every change is audited in its transaction (ids
# and codes only).


class AppRecord(Message):
    """One app's row with its manifests (the active one and the predecessor's)."""

    type: Literal["store.registry.record"] = "store.registry.record"
    app: AppRow
    manifest: dict[str, Any]
    previous_manifest: dict[str, Any] | None
    previous_bundle_sha256: str | None


class AppRegistryGetRequest(Message):
    """One app's record; `app` None in the reply when it is not in the registry."""

    type: Literal["store.registry.get"] = "store.registry.get"
    app_scope: Name


class AppRegistryGetReply(Message):
    type: Literal["store.registry.get.reply"] = "store.registry.get.reply"
    record: AppRecord | None


class AppInstallRecordRequest(Message):
    """Record a verified bundle as the active version of `app_scope`: a new app is installed
    (enabled, active); an installed one is updated (its active version becomes the
    predecessor: `previous_version`, `previous_manifest`, `previous_bundle_sha256`) and keeps
    its enabled flag. Refused `app_protected` for a scope that is not an installed app
    (bundled, dev), `app_version_mismatch` unless `version` is above the active one. The same
    version and digest again change nothing (a retry). Completes `operation_id`; refused
    `deadline_exceeded`, writing nothing, once that operation is failed (focus gave up on it).

    `replaces` is the one non-installed source the install may take the scope of, said by
    focus only for a leftover: a `dev` row whose app this run does not configure (a past
    `lineup run --dev-app`). Such a row is replaced as by a fresh install, in the same
    transaction: the new row is enabled, has no predecessor, and the scope's session data
    and capability grants (the dev code's) are deleted. Without it, or for a row of another
    source (a bundled app's is never replaced), the install is `app_protected`."""

    type: Literal["store.registry.install"] = "store.registry.install"
    app_scope: Name
    version: Name
    kind: Name
    manifest: dict[str, Any]
    bundle_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    key_id: Name
    operation_id: Id | None = None
    replaces: Literal["dev"] | None = None


class AppInstallRecordReply(Message):
    type: Literal["store.registry.install.reply"] = "store.registry.install.reply"
    app: AppRow
    created: bool
    changed: bool
    replaced: AppSource | None = None  # the source of the leftover row it replaced


class AppRollbackRequest(Message):
    """Swap the active version and the predecessor of an installed app (the version rolled
    back from becomes the predecessor), when the active version is `from_version` (refused
    `stale_revision` otherwise, `no_predecessor` without one). The app is active after.
    Completes `operation_id`."""

    type: Literal["store.registry.rollback"] = "store.registry.rollback"
    app_scope: Name
    from_version: Name
    operation_id: Id | None = None


class AppRollbackReply(Message):
    type: Literal["store.registry.rollback.reply"] = "store.registry.rollback.reply"
    app: AppRow


class AppStateSetRequest(Message):
    """Whether an app can run: `active`, `unavailable` (revoked with no predecessor, a broken
    cache) or `incompatible`. Idempotent. Completes `operation_id` (when it is the operation's
    result). `code` is audited with the change."""

    type: Literal["store.registry.state.set"] = "store.registry.state.set"
    app_scope: Name
    state: AppState
    code: Name | None = None
    operation_id: Id | None = None


class AppStateSetReply(Message):
    type: Literal["store.registry.state.set.reply"] = "store.registry.state.set.reply"
    app: AppRow
    changed: bool


class RevocationAddRequest(Message):
    """Revoke one version of an app (it never installs or runs again). Idempotent."""

    type: Literal["store.registry.revocation.add"] = "store.registry.revocation.add"
    app_scope: Name
    version: Name


class RevocationAddReply(Message):
    type: Literal["store.registry.revocation.add.reply"] = "store.registry.revocation.add.reply"
    created: bool


class RevocationListRequest(Message):
    type: Literal["store.registry.revocation.list"] = "store.registry.revocation.list"


class RevocationListReply(Message):
    """Every revoked (app_scope, version)."""

    type: Literal["store.registry.revocation.list.reply"] = "store.registry.revocation.list.reply"
    revoked: tuple[tuple[str, str], ...]


class AppRemoveRequest(Message):
    """Remove an installed app from the registry in one transaction: its row, its capability
    grants and the session data of its scope. Refused `app_protected` for an app that is not
    installed from a bundle, `app_not_installed` for none. A repeat finds nothing
    (`removed` False). Completes `operation_id`."""

    type: Literal["store.registry.remove"] = "store.registry.remove"
    app_scope: Name
    operation_id: Id | None = None


class AppRemoveReply(Message):
    type: Literal["store.registry.remove.reply"] = "store.registry.remove.reply"
    removed: bool
    session_documents: int  # session data documents deleted
    grants: int  # capability grants deleted


class AppOperationRow(Message):
    type: Literal["store.registry.operation.row"] = "store.registry.operation.row"
    operation_id: Id
    app_scope: Name
    kind: AppOperationKind
    state: AppOperationState
    version: str | None = None
    from_version: str | None = None
    code: str | None = None
    created_at: float
    updated_at: float


class AppOperationPutRequest(Message):
    """Record an operation as it moves. A new `operation_id` is created in `state`; an existing
    one moves forward only (requested → running → completed | failed): a final operation, or a
    step back, is left as it is (`changed` False), so a retry never rewrites an outcome.
    `version` / `from_version` / `code` are kept when given."""

    type: Literal["store.registry.operation.put"] = "store.registry.operation.put"
    operation_id: Id
    app_scope: Name
    kind: AppOperationKind
    state: AppOperationState
    version: Name | None = None
    from_version: Name | None = None
    code: Name | None = None


class AppOperationPutReply(Message):
    type: Literal["store.registry.operation.put.reply"] = "store.registry.operation.put.reply"
    operation: AppOperationRow
    created: bool
    changed: bool


class AppOperationListRequest(Message):
    """Operations, the newest first: one (`operation_id`), one app's, or all."""

    type: Literal["store.registry.operation.list"] = "store.registry.operation.list"
    operation_id: Id | None = None
    app_scope: Name | None = None
    limit: Limit = 100


class AppOperationListReply(Message):
    type: Literal["store.registry.operation.list.reply"] = "store.registry.operation.list.reply"
    operations: tuple[AppOperationRow, ...]


class AppOperationRecoverRequest(Message):
    """At focus's start: every operation left `requested` or `running` by a focus that died
    ends — `completed` if the registry shows its result (the installed version is active, the
    flag is set, the row is gone, …), else `failed(actor_restarted)`."""

    type: Literal["store.registry.operation.recover"] = "store.registry.operation.recover"


class AppOperationRecoverReply(Message):
    type: Literal["store.registry.operation.recover.reply"] = (
        "store.registry.operation.recover.reply"
    )
    completed: tuple[str, ...]
    failed: tuple[str, ...]


class SettingGetRequest(Message):
    """One of the user's settings (e.g. `default_app`); `value` None when never set."""

    type: Literal["store.registry.setting.get"] = "store.registry.setting.get"
    name: Name


class SettingGetReply(Message):
    type: Literal["store.registry.setting.get.reply"] = "store.registry.setting.get.reply"
    value: Any = None


class SettingPutRequest(Message):
    """Set one setting to a JSON value (over 64 KiB: `invalid_arguments`). Completes
    `operation_id`."""

    type: Literal["store.registry.setting.put"] = "store.registry.setting.put"
    name: Name
    value: Any
    operation_id: Id | None = None


class SettingPutReply(Message):
    type: Literal["store.registry.setting.put.reply"] = "store.registry.setting.put.reply"
    changed: bool


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
