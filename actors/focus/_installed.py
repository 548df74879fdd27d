"""The installed apps focus runs from their verified cache, and the trust they are checked by.

Theory of operation
-------------------
*At start* (`load`) the operations a dead focus left unfinished are ended by the store, the
installed rows are read, and each app's state is decided again from facts (`facts.apps.CHECKS`,
the first failed one decides): a revoked active version or a cache that does not verify is
`unavailable`, a manifest this host cannot run is `incompatible`, a signer no longer trusted is
`unavailable` with `unknown_key`; none of them joins the inventory, gets an instance or a call.
The cache is then swept of crash leftovers and versions no row names. Before an installed app's
process starts, its signer and its cache are checked again (`check_launch`).

*Trust.* The trusted keys are one set (`trusted`): `trusted-keys.json`, and the local catalog's
keys when the runtime trusts them (the embedded default; focus config `catalog`,
`catalog_trusted`). The same set decides an install and, at each start and launch, whether an
installed app's signer is still trusted.

*Leftovers.* A `dev` row whose app this run does not configure (a past `lineup run
--dev-app` of this data dir) is no app: it is not listed, and an install may take its scope,
saying so to the store (`replaces="dev"`), which replaces the row as by a fresh install
(enabled, no predecessor; the dev code's session data and grants deleted, and focus removes
its private folder). A dev app of this run, a bundled app and the chat keep their scope
(`app_protected`, `check_target`).
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any, Final

import trio

import lineup
from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store.messages import (
    AppOperationListReply,
    AppOperationListRequest,
    AppOperationRecoverReply,
    AppOperationRecoverRequest,
    AppRegistryGetReply,
    AppRegistryGetRequest,
    AppRegistryListReply,
    AppRegistryListRequest,
    AppRow,
    AppStateSetReply,
    AppStateSetRequest,
    RevocationListReply,
    RevocationListRequest,
)
from lineup.facts.apps import CHECKS, AppCheck, AppState
from lineup.facts.scopes import CHAT
from lineup.sdk.bundle import (
    VerifiedBundle,
    compare_versions,
    verify_bundle,
)
from lineup.sdk.manifest import Manifest, ManifestInvalid, incompatibility, load_manifest
from lineup.sdk.trust import TrustStore

from ._app_book import AppBook, AppEntry, Installed
from ._cache import BundleCache
from ._catalog import Catalog
from ._port import Port
from ._publisher import Publisher

__all__ = ["InstalledApps"]

log = logging.getLogger("lineup.focus.registry")

# Test-only points of an install or an update, in the order it reaches them (`_install`), each
# where a crash leaves a different state behind. At the point named by focus config
# `registry_crash_at` focus SIGKILLs itself; at `registry_pause_at` it logs
# `registry.pause_point` and waits forever, so a test can kill the whole runtime there. What a
# crash at each leaves, and what the next start makes of it (`load`: the store ends the
# operation, `sweep` empties the cache of what no row names):
CRASH_POINTS: Final = (
    # The operation's row, `requested`; nothing else written. -> failed actor_restarted.
    "operation_requested",
    # The row `running`. -> failed actor_restarted.
    "operation_running",
    # The bytes read and verified in memory; still nothing written. -> failed actor_restarted.
    "bundle_verified",
    # A `bundles/.tmp-*` folder holding the bundle's bytes and some of its files, reached in the
    # cache's worker thread between two file writes. -> swept; failed actor_restarted.
    "cache_writing",
    # The new version's whole folder under its name, which no row names. -> swept; failed.
    "cache_renamed",
    # (An update only.) The old version's instances closed; the row unchanged. -> the old
    # version runs again; the new folder swept; failed actor_restarted.
    "instances_closed",
    # The row names the new version (the old one its predecessor) and the operation is
    # `completed`: one store transaction, so no point lies between the two. -> the new version.
    "row_written",
    # The version the row no longer names (the predecessor it replaced) removed from the
    # cache. -> the new version.
    "superseded_removed",
    # The inventory revised and the Shells told; only the answer is left. -> the new version.
    "inventory_published",
)


class InstalledApps:
    """The installed apps in the book, their cache and their trust (see the module's
    docstring). `publish` is told when one becomes unusable."""

    def __init__(
        self,
        port: Port,
        book: AppBook,
        publisher: Publisher,
        data_dir: Path,
        config: dict[str, Any],
    ) -> None:
        self._port = port
        self.book = book  # the actor's: the installed apps are put in it here
        self._publisher = publisher
        self.data_dir = data_dir
        self.dev = bool(config.get("dev", False))
        self.crash_at = str(config.get("registry_crash_at", ""))
        self.pause_at = str(config.get("registry_pause_at", ""))
        for point in (self.crash_at, self.pause_at):
            if point and point not in CRASH_POINTS:  # a test's typo would never stop
                raise ValueError(f"no such install point: {point}")
        self.cache = BundleCache(data_dir)
        folder = config.get("catalog")
        self.catalog: Catalog | None = (
            Catalog(Path(folder), trusted=bool(config.get("catalog_trusted", False)))
            if isinstance(folder, str) and folder
            else None
        )
        # Scopes whose store row is a dev app this run does not configure: an install may
        # take them (`check_target`), nothing else sees them.
        self.leftovers: set[str] = set()
        # Scopes whose store row is a shipped app this run does not ship (an older LineUp's,
        # or a tree configured without them): no app, but nobody's to take.
        self.foreign: set[str] = set()

    async def load(self) -> None:
        """Recover unfinished operations, then load every installed app (see the module)."""
        recovered = await self._port.store(AppOperationRecoverRequest(), AppOperationRecoverReply)
        if recovered.failed or recovered.completed:
            log.info(
                "registry.recovered completed=%d failed=%d",
                len(recovered.completed),
                len(recovered.failed),
            )
        rows = await self._port.store(AppRegistryListRequest(), AppRegistryListReply)
        revoked = await self.revoked()
        keep: set[tuple[str, str]] = set()
        for row in rows.apps:
            if row.source != "installed":
                entry = self.book.get(row.app_scope)
                if entry is None or entry.source != row.source:
                    # A past `--dev-app` of this data dir is a leftover, not an app of this
                    # run; a shipped app this run does not ship is nobody's.
                    (self.leftovers if row.source == "dev" else self.foreign).add(row.app_scope)
                continue
            keep.add((row.app_scope, row.version))
            if row.previous_version is not None:
                keep.add((row.app_scope, row.previous_version))
            record = await self._port.store(
                AppRegistryGetRequest(app_scope=row.app_scope), AppRegistryGetReply
            )
            if record.record is None:
                continue
            await self.take(row, record.record.manifest, revoked)
        swept = await self.cache.sweep(keep)
        if swept:
            log.info("registry.swept entries=%d", len(swept))
        await self._forget_removed({row.app_scope for row in rows.apps})

    async def _forget_removed(self, named: set[str]) -> None:
        """The private data dir of an app whose remove completed and that no row names again:
        a remove commits its row first and clears its files after (`_registry`), so a crash
        between leaves that folder, and it goes here. (Its cache went in the sweep.)"""
        listed = await self._port.store(AppOperationListRequest(), AppOperationListReply)
        for op in listed.operations:
            scope = op.app_scope
            if (op.kind, op.state) == ("remove", "completed") and not (
                scope in named or scope in self.book
            ):
                await self.remove_home(scope)

    async def take(self, row: AppRow, raw: dict[str, Any], revoked: set[tuple[str, str]]) -> None:
        """Decide an installed app's state from facts, record it if it changed, and put the
        app where focus looks for it (usable or not)."""
        try:
            manifest: Manifest | None = load_manifest(raw)
        except ManifestInvalid:
            manifest = None
        package = await self.package(row.app_scope, row.version)

        async def passes(check: AppCheck) -> bool:
            if check == "not_revoked":
                return (row.app_scope, row.version) not in revoked
            if check == "runs_here":
                return (
                    manifest is not None and incompatibility(manifest, lineup.__version__) is None
                )
            if check == "signer_trusted":
                return await self._signer_trusted(row)
            return package is not None and await self.cache.verify(
                row.app_scope, row.version, row.bundle_sha256 or ""
            )

        state: AppState = "active"
        code: ErrorCode | None = None
        for check, failed_state, failed_code in CHECKS:  # the first one failed decides
            if not await passes(check):
                state, code = failed_state, failed_code
                break
        if state != row.state:
            reply = await self._port.store(
                AppStateSetRequest(
                    app_scope=row.app_scope,
                    state=state,
                    code=code.value if code else None,
                ),
                AppStateSetReply,
            )
            row = reply.app
        self.place(row, manifest, package, code)

    def place(
        self, row: AppRow, manifest: Manifest | None, package: str | None, code: ErrorCode | None
    ) -> None:
        """Put the installed app in the book as its row, manifest and package say: usable, or
        refused with `code` (one whose manifest does not load is unavailable)."""
        scope = row.app_scope
        folder = self.cache.app_dir(scope, row.version)
        # An MCP server runs in its own folder, the package's: its command's paths are relative
        # to it (`_lifecycle._mcp_server`). A LineUp app's folder is the one on its sys.path.
        mcp = manifest is not None and manifest.kind == "mcp" and package is not None
        self.book.put(
            AppEntry(
                scope=scope,
                source="installed",
                # Its manifest's title, else its scope (a manifest that does not load has none).
                title=manifest.title if manifest is not None and manifest.title else scope,
                entry=f"{package}:" if package and not mcp else "",  # the adapter has none
                app_path=str(folder / package) if mcp and package else str(folder),
                # Its Surface's files: the verified cache's (no manifest file to be beside).
                web_root=str(folder / package / "web") if package else "",
                manifest=manifest,
                enabled=row.enabled,
                refusal=None
                if code is None and manifest is not None
                else code or ErrorCode.APP_UNAVAILABLE,
                installed=Installed(row, package),
            )
        )

    async def package(self, scope: str, version: str) -> str | None:
        def find() -> str | None:
            try:
                names = os.listdir(self.cache.app_dir(scope, version))
            except OSError:
                return None
            return names[0] if len(names) == 1 else None

        return await trio.to_thread.run_sync(find)

    async def revoked(self) -> set[tuple[str, str]]:
        reply = await self._port.store(RevocationListRequest(), RevocationListReply)
        return {(scope, version) for scope, version in reply.revoked}

    async def check_launch(self, scope: str) -> None:
        """An installed app's cache is verified again before its process starts: a broken
        one makes the app `unavailable` (audited) and raises `app_unavailable`."""
        app = self.book.installed(scope)
        if app is None:
            return
        if not await self._signer_trusted(app.row):
            await self.mark_unavailable(scope, ErrorCode.UNKNOWN_KEY)
            raise LineUpError(ErrorCode.UNKNOWN_KEY, scope)
        if app.package is not None and await self.cache.verify(
            scope, app.row.version, app.row.bundle_sha256 or ""
        ):
            return
        await self.mark_unavailable(scope, ErrorCode.APP_UNAVAILABLE)
        raise LineUpError(ErrorCode.APP_UNAVAILABLE, scope)

    async def _signer_trusted(self, row: AppRow) -> bool:
        """The installed version's signer is in the trusted set now (a corrupt
        trusted-keys.json trusts nothing). A row without a key predates signing: kept."""
        if row.key_id is None:
            return True
        try:
            return row.key_id in await self.trusted()
        except LineUpError:
            return False

    async def mark_unavailable(
        self, scope: str, code: ErrorCode, operation_id: str | None = None
    ) -> None:
        reply = await self._port.store(
            AppStateSetRequest(
                app_scope=scope, state="unavailable", code=code.value, operation_id=operation_id
            ),
            AppStateSetReply,
        )
        entry = self.book.get(scope)
        assert entry is not None  # only an installed app is marked
        assert entry.installed is not None
        usable = code if code is ErrorCode.UNKNOWN_KEY else ErrorCode.APP_UNAVAILABLE
        self.place(reply.app, entry.manifest, entry.installed.package, usable)
        await self._publisher.publish()

    def check_target(self, scope: str, version: str) -> None:
        """The bundle may take `scope` at `version`: not another kind of app's scope (the
        chat, a bundled app, a dev app of this run; a leftover dev row is no app: see
        `load`), and above the active version of an installed one (never sideways or back)."""
        entry = self.book.get(scope)
        protected = scope == CHAT or scope in self.foreign
        if protected or (entry is not None and entry.source != "installed"):
            raise LineUpError(ErrorCode.APP_PROTECTED, scope)
        current = entry.installed if entry is not None else None
        if current is not None and compare_versions(version, current.row.version) <= 0:
            raise LineUpError(ErrorCode.APP_VERSION_MISMATCH, version)

    async def trusted(self) -> dict[str, bytes]:
        """The one trusted set: trusted-keys.json (read each time: a key added while the
        runtime runs counts at once), and the catalog's keys when the runtime trusts them.
        Raises `invalid_arguments` for a corrupt trusted-keys.json."""
        trusted = await trio.to_thread.run_sync(TrustStore(self.data_dir).keys)
        if self.catalog is not None:
            trusted.update(await trio.to_thread.run_sync(self.catalog.keys))
        return trusted

    async def verify(self, data: bytes) -> VerifiedBundle:
        trusted = await self.trusted()
        revoked = await self.revoked()
        return await trio.to_thread.run_sync(
            lambda: verify_bundle(
                data, trusted=trusted, host_version=lineup.__version__, revoked=revoked
            )
        )

    async def predecessor(self, installed: Installed) -> tuple[Manifest, str] | None:
        """The verified predecessor (its manifest and package), or None."""
        row = installed.row
        if row.previous_version is None:
            return None
        if (row.app_scope, row.previous_version) in await self.revoked():
            return None
        record = await self._port.store(
            AppRegistryGetRequest(app_scope=row.app_scope), AppRegistryGetReply
        )
        if record.record is None or record.record.previous_manifest is None:
            return None
        try:
            manifest = load_manifest(record.record.previous_manifest)
        except ManifestInvalid:
            return None
        package = await self.package(row.app_scope, row.previous_version)
        if (
            incompatibility(manifest, lineup.__version__) is not None
            or package is None
            or not await self.cache.verify(
                row.app_scope, row.previous_version, record.record.previous_bundle_sha256 or ""
            )
        ):
            return None
        return manifest, package

    async def remove_home(self, scope: str) -> None:
        """The app's private data dir (the sandbox's `app_data_dir`: <data_dir>/apps/<scope>)."""
        home = self.data_dir / "apps" / scope
        await trio.to_thread.run_sync(lambda: shutil.rmtree(home, ignore_errors=True))
