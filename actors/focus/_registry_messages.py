"""App delivery's and development reload's share of focus's protocol (`messages` re-exports
it: the protocol is one, split by area to keep each module readable)."""

from typing import Literal, Self

from pydantic import Field, model_validator

from lineup.actors.kernel import Message

MAX_BUNDLE_BYTES = 16 * 1024 * 1024  # one bundle file, read whole into memory to verify

__all__ = [
    "MAX_BUNDLE_BYTES",
    "DevAppListRequest",
    "DevAppRefusedEvent",
    "DevAppReloadReply",
    "DevAppReloadRequest",
    "RegistryInspectReply",
    "RegistryInspectRequest",
    "RegistryInstallRequest",
    "RegistryListRequest",
    "RegistryOperateRequest",
]


# ---------------------------------------------------------------------------------- registry
#
# App delivery (seed 004 §4.3, §8.3, seed 000 §9). From the supervisor (the `lineup app` CLI on
# the control socket: the user at the terminal) and from the gateway (the App Registry's
# `app.install` / `app.manage`, after the user confirmed it in the runtime's prompt). Never from
# the router: there is no Agent tool for any of it. Every request is one `AppOperation`,
# recorded as it moves (requested → running → completed | failed) and audited; the reply is the
# operation as it ended (a failure is `state` failed with its `code`, not an error), except for
# a malformed request (`invalid_arguments`).


class RegistryInstallRequest(Message):
    """Install a signed bundle, or update an installed app to it (the active version becomes
    the predecessor). Exactly one of `path` (a file the CLI's user named), `url` (HTTPS; HTTP
    to loopback only when the runtime runs in development), `bundle_b64` (the App Registry's
    artifact, read by the gateway) or `catalog_file` (a plain file name of the local catalog
    folder: `catalog_entry_not_found` when it holds none such). Everything is verified in
    memory before a byte is written; a failure leaves the cache and the active version as they
    were, and starts nothing: `bundle_malformed`, `signature_invalid`, `unknown_key`,
    `size_mismatch`, `digest_mismatch`, `host_version_unsupported`, `app_version_mismatch`,
    `revoked`, `url_not_allowed`, `download_failed`, `catalog_entry_not_found`. Idempotent by
    `operation_id`."""

    type: Literal["focus.registry.install"] = "focus.registry.install"
    operation_id: str = Field(min_length=1, max_length=200)
    path: str | None = Field(default=None, max_length=4096)
    url: str | None = Field(default=None, max_length=4096)
    bundle_b64: str | None = Field(default=None, max_length=(MAX_BUNDLE_BYTES * 4) // 3 + 4)
    catalog_file: str | None = Field(default=None, max_length=200)
    # The signed digest the user was shown (the gateway's prompt, from `inspect`): a bundle
    # that is another by the time it is read (a catalog file replaced) is `digest_mismatch`.
    sha256: str | None = Field(default=None, max_length=64)

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        sources = (self.path, self.url, self.bundle_b64, self.catalog_file)
        if sum(source is not None for source in sources) != 1:
            raise ValueError("exactly one of path, url, bundle_b64 and catalog_file")
        if self.path is not None and not self.path.startswith("/"):
            raise ValueError("path must be absolute")  # focus does not know the sender's cwd
        return self


class RegistryInspectRequest(Message):
    """What a bundle is, and whether it would install (`code` None) or why not, without
    installing it: the gateway's prompt names the app, version and signer from it. Exactly
    one of `bundle_b64` and `catalog_file` (as in `RegistryInstallRequest`)."""

    type: Literal["focus.registry.inspect"] = "focus.registry.inspect"
    bundle_b64: str | None = Field(default=None, max_length=(MAX_BUNDLE_BYTES * 4) // 3 + 4)
    catalog_file: str | None = Field(default=None, max_length=200)


class RegistryInspectReply(Message):
    type: Literal["focus.registry.inspect.reply"] = "focus.registry.inspect.reply"
    app_scope: str | None
    version: str | None
    key_id: str | None
    title: str | None = None  # its verified manifest's (None: unverified, or none given)
    size: int
    code: str | None  # None: it would install (or update) now
    sha256: str | None = None  # the signed payload digest (pin the install to it)


class RegistryOperateRequest(Message):
    """Enable, disable (new calls stop; the live instances wind down as on a close), roll back
    (only to the verified predecessor: `no_predecessor`), revoke `version` (an active one rolls
    back, or the app becomes `unavailable` with no predecessor), remove (the instances are
    closed first; then the bundle, the app's private data dir and its session data are
    cleared) or make the default app. `chat` can be neither disabled nor removed
    (`app_protected`); an unknown app is `app_not_installed`. Idempotent by `operation_id`."""

    type: Literal["focus.registry.operate"] = "focus.registry.operate"
    operation_id: str = Field(min_length=1, max_length=200)
    kind: Literal["enable", "disable", "rollback", "revoke", "remove", "set_default"]
    app_scope: str = Field(min_length=1, max_length=100)
    version: str | None = Field(default=None, min_length=1, max_length=64)

    @model_validator(mode="after")
    def _version_for_revoke(self) -> Self:
        if (self.kind == "revoke") != (self.version is not None):
            raise ValueError("a version with revoke, and only with revoke")
        return self


class RegistryListRequest(Message):
    """The registry as the App Registry and `lineup app list --json` show it; the reply is
    `lineup.sdk.protocol.RegistryListReply`."""

    type: Literal["focus.registry.list"] = "focus.registry.list"


# ---------------------------------------------------------------------------------- dev reload
#
# From the dev-app watcher (`lineup.ops.devwatch`, the child `devwatch`), which watches each
# `lineup run --dev-app` folder and regenerates its manifest when a file in it changes
# (`_dev_reload` has the theory). The ACL reserves these to it.


class DevAppListRequest(Message):
    """devwatch → focus: the registry, as `focus.registry.list` answers it (a
    `RegistryListReply`), for the watcher to name the development apps an installed app
    shadows."""

    type: Literal["focus.dev_app.list"] = "focus.dev_app.list"


class DevAppReloadRequest(Message):
    """devwatch → focus: the development app `app_scope` changed, and its manifest file (the
    registry entry's `manifest`, which focus reads again) is the new one: reload the app (its
    registry entry, its live instances' process, the inventory if its tools changed) and tell
    the Shell. Refused `app_not_installed` (no development app of that scope) and
    `app_scope_mismatch` (the new manifest names another scope: a restart of lineup takes it)
    and `invalid_arguments` (it does not load), having changed nothing: what ran keeps
    running, and the watcher prints the refusal and tells it back for the Shell."""

    type: Literal["focus.dev_app.reload"] = "focus.dev_app.reload"
    app_scope: str = Field(min_length=1, max_length=100)


class DevAppReloadReply(Message):
    """The app reloaded: the inventory `revision` now (new if `tools_changed`), and how many
    live instances had their process restarted."""

    type: Literal["focus.dev_app.reloaded"] = "focus.dev_app.reloaded"
    app_scope: str
    revision: str
    tools_changed: bool
    restarted: int = Field(ge=0)


class DevAppRefusedEvent(Message):
    """devwatch → focus: the development app's new version was refused before focus saw it
    (its manifest could not be generated): `line` is what the terminal printed, for the Shell
    to show as an error notice. Nothing else changes."""

    type: Literal["focus.dev_app.refused"] = "focus.dev_app.refused"
    app_scope: str = Field(min_length=1, max_length=100)
    line: str = Field(min_length=1, max_length=2000)
