"""The registry: what the App Registry MiniApp reads (`focus.sdk.registry.list`, reserved to it
by the ACL), through `Registry`. It changes the registry only through capabilities
(`app.install`, `app.manage`), which the user confirms in the runtime's own prompt.
"""

from typing import Literal

from lineup.actors.kernel import Message
from lineup.facts.apps import AppSource, AppState, InstallState
from lineup.facts.operations import OperationKind, OperationState

from .common import Id

__all__ = [
    "AppOperationInfo",
    "CatalogEntry",
    "RegistryAppInfo",
    "RegistryListReply",
    "RegistryListRequest",
]


class AppOperationInfo(Message):
    """One operation on the registry, as it moves: requested → running → completed | failed
    (`code` then says why)."""

    type: Literal["focus.sdk.registry.operation"] = "focus.sdk.registry.operation"
    operation_id: Id
    app_scope: str
    kind: OperationKind
    state: OperationState
    version: str | None = None  # the version it installs, rolls back to, or revokes
    from_version: str | None = None
    code: str | None = None
    created_at: float
    updated_at: float


class RegistryAppInfo(Message):
    type: Literal["focus.sdk.registry.app"] = "focus.sdk.registry.app"
    app_scope: str
    title: str
    version: str
    kind: str  # the manifest's kind: system, core, bundled-reference, installed
    source: Literal["system"] | AppSource
    enabled: bool
    # active: runs; unavailable: revoked with no predecessor, or its cache does not verify;
    # incompatible: its runtime_sdk asks what this host does not have (`facts/apps.py`).
    state: AppState
    predecessor: str | None = None  # the verified version a rollback goes back to
    key_id: str | None = None  # the signer's, for an installed app
    removable: bool
    operation: AppOperationInfo | None = None  # the latest one on this app
    capabilities: tuple[str, ...] = ()  # the manifest's declared_capabilities
    # Seed 004 §4.3's record: whether an install, update or rollback of it is open (`updating`)
    # or the latest failed (`failed`: it runs its previous version), how many of its instances
    # have not ended, when it was installed and when last enabled (None while disabled).
    install_state: InstallState = "installed"
    active_instance_count: int = 0
    installed_at: float | None = None
    enabled_at: float | None = None


class CatalogEntry(Message):
    """One bundle of the local catalog folder (`lineup run --catalog DIR`), as the App
    Registry offers it: `file` is its plain name in the folder (what `app.install
    {catalog_file}` names). `code` None: it would install now; else why not — the
    verification's refusal (`signature_invalid`, `digest_mismatch`, `unknown_key`, …) or
    `app_version_mismatch` when that version (or a newer one) is installed. A file whose
    header cannot be read has no app_scope, version or key_id."""

    type: Literal["focus.sdk.registry.catalog_entry"] = "focus.sdk.registry.catalog_entry"
    file: str
    app_scope: str | None
    version: str | None
    key_id: str | None
    size: int
    code: str | None
    title: str | None = None  # the app's title, from its manifest once the bundle verified


class RegistryListRequest(Message):
    type: Literal["focus.sdk.registry.list"] = "focus.sdk.registry.list"


class RegistryListReply(Message):
    type: Literal["focus.sdk.registry.list.reply"] = "focus.sdk.registry.list.reply"
    apps: tuple[RegistryAppInfo, ...]
    default_app: str  # the user's default app; `chat` when none is chosen
    operations: tuple[AppOperationInfo, ...] = ()  # the newest first
    catalog: tuple[CatalogEntry, ...] = ()  # the local catalog's bundles, by file name
