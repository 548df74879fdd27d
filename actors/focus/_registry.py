"""Focus's app registry service: installs, updates and every operation on an app (issue 15).

Theory of operation
-------------------
Every request is one `AppOperation` (`_operations`), recorded in the store as it moves
(requested → running → completed | failed) and answered with the operation as it ended; a
registry change names its operation, so the store completes it in the change's own
transaction. One operation runs at a time (`_lock`), and an `operation_id` seen before is
answered with the operation it names.

*Install / update.* The bytes (a path, a URL or base64) are read whole and bounded, then
verified in memory by `sdk.bundle.verify_bundle` against the trusted keys (read at every
install), the revocations and this host's version. Only then is anything written: the verified
cache (`_cache`), then — after an update closed the live instances, which run the old code —
the registry row (the old version becomes the predecessor), then the inventory. A failure at
any step before the row leaves the active version as it was; a new cache directory that no
row names is removed (or swept at the next start).

*The local catalog* (`_catalog`, focus config `catalog` and `catalog_trusted`): its bundles
are listed with the code each would get (`list`), and installed by name (`catalog_file`) like
any other bundle. The trusted keys are one set (`_trusted`): `trusted-keys.json`, and the
catalog's keys when the runtime trusts them (the embedded default). The same set decides an
install and, at each start and launch, whether an installed app's signer is still trusted (an
app whose key is not is `unavailable`, with `unknown_key`).

*Leftovers.* A `dev` row whose app this run does not configure (a past `lineup run
--dev-app` of this data dir) is no app: it is not listed, and an install may take its scope,
saying so to the store (`replaces="dev"`), which replaces the row as by a fresh install
(enabled, no predecessor; the dev code's session data and grants deleted, and focus removes
its private folder). A dev app of this run, a bundled app and the chat keep their scope
(`app_protected`).

*At start* (`load`) the operations a dead focus left unfinished are ended by the store, the
installed rows are read, and each app's state is decided again from facts: a revoked active
version or a cache that does not verify is `unavailable`, a manifest this host cannot run is
`incompatible`; neither joins the inventory, gets an instance or a call. The cache is then
swept of crash leftovers and versions no row names.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import logging
import os
import shutil
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import trio

import lineup
from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.actors.store.messages import (
    AppEnabledSetReply,
    AppEnabledSetRequest,
    AppInstallRecordReply,
    AppInstallRecordRequest,
    AppOperationKind,
    AppOperationListReply,
    AppOperationListRequest,
    AppOperationPutReply,
    AppOperationPutRequest,
    AppOperationRecoverReply,
    AppOperationRecoverRequest,
    AppOperationRow,
    AppRegistryGetReply,
    AppRegistryGetRequest,
    AppRegistryListReply,
    AppRegistryListRequest,
    AppRemoveReply,
    AppRemoveRequest,
    AppRollbackReply,
    AppRollbackRequest,
    AppRow,
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
from lineup.facts.apps import CHECKS, AppCheck, AppState, state_of
from lineup.facts.scopes import CHAT
from lineup.sdk.bundle import (
    BundleRefused,
    VerifiedBundle,
    compare_versions,
    read_header,
    verify_bundle,
)
from lineup.sdk.manifest import Manifest, ManifestInvalid, incompatibility, load_manifest
from lineup.sdk.protocol import (
    AppOperationInfo,
    CatalogEntry,
    RegistryAppInfo,
    RegistryListReply,
)
from lineup.sdk.trust import TrustStore
from lineup.wire.client import AnswerRefused, HttpClient, HttpError

from ._app_book import AppBook, AppEntry, Installed
from ._cache import BundleCache
from ._catalog import Catalog, basis_of
from ._operations import Operation
from .messages import (
    MAX_BUNDLE_BYTES,
    RegistryInspectReply,
    RegistryInspectRequest,
    RegistryInstallRequest,
    RegistryOperateRequest,
)

__all__ = ["DEFAULT_APP", "RegistryService"]

log = logging.getLogger("lineup.focus.registry")

DEFAULT_APP: Final = "default_app"  # the settings row (store.registry.setting.*)
DOWNLOAD_TIMEOUT: Final = 30.0  # one whole bundle download
CONNECT_TIMEOUT: Final = 10.0
UNKNOWN_SCOPE: Final = "unknown"  # an install refused before its bundle named an app
_LOOPBACK_NAMES: Final = frozenset({"localhost"})
# Test-only crash points (focus config `registry_crash_at`): focus SIGKILLs itself there, so
# the tests prove what a crash in the middle of an install leaves. At a pause point (config
# `registry_pause_at`) it logs the point and waits forever instead: the test kills the whole
# runtime there.
CRASH_POINTS: Final = frozenset({"cache_renamed", "row_written"})

Store = Callable[[Message, type[Any]], Awaitable[Any]]


class RegistryService:
    def __init__(
        self,
        data_dir: Path,
        config: dict[str, Any],
        *,
        store: Store,
        book: AppBook,
        live_of: Callable[[str], list[str]],
        close: Callable[[str], Awaitable[None]],
        publish: Callable[[], Awaitable[None]],
    ) -> None:
        self.data_dir = data_dir
        self.dev = bool(config.get("dev", False))
        self.crash_at = str(config.get("registry_crash_at", ""))
        self.pause_at = str(config.get("registry_pause_at", ""))
        self.cache = BundleCache(data_dir)
        folder = config.get("catalog")
        self.catalog: Catalog | None = (
            Catalog(Path(folder), trusted=bool(config.get("catalog_trusted", False)))
            if isinstance(folder, str) and folder
            else None
        )
        self._store = store
        self.book = book  # the actor's: the installed apps are put in it here
        self._live_of = live_of
        self._close = close
        self._publish = publish
        # Scopes whose store row is a dev app this run does not configure: an install may
        # take them (`_check_target`), nothing else sees them.
        self.leftovers: set[str] = set()
        # Scopes whose store row is a shipped app this run does not ship (an older LineUp's,
        # or a tree configured without them): no app, but nobody's to take.
        self.foreign: set[str] = set()
        self._lock = trio.Lock()

    # ------------------------------------------------------------------ start

    async def load(self) -> None:
        """Recover unfinished operations, then load every installed app (see the module)."""
        recovered = await self._store(AppOperationRecoverRequest(), AppOperationRecoverReply)
        if recovered.failed or recovered.completed:
            log.info(
                "registry.recovered completed=%d failed=%d",
                len(recovered.completed),
                len(recovered.failed),
            )
        rows = await self._store(AppRegistryListRequest(), AppRegistryListReply)
        revoked = await self._revoked()
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
            record = await self._store(
                AppRegistryGetRequest(app_scope=row.app_scope), AppRegistryGetReply
            )
            if record.record is None:
                continue
            await self._take(row, record.record.manifest, revoked)
        swept = await self.cache.sweep(keep)
        if swept:
            log.info("registry.swept entries=%d", len(swept))

    async def _take(self, row: AppRow, raw: dict[str, Any], revoked: set[tuple[str, str]]) -> None:
        """Decide an installed app's state from facts, record it if it changed, and put the
        app where focus looks for it (usable or not)."""
        try:
            manifest: Manifest | None = load_manifest(raw)
        except ManifestInvalid:
            manifest = None
        package = await self._package(row.app_scope, row.version)

        async def passes(check: AppCheck) -> bool:
            if check == "not_revoked":
                return (row.app_scope, row.version) not in revoked
            if check == "runs_here":
                return manifest is not None and incompatibility(manifest) is None
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
            reply = await self._store(
                AppStateSetRequest(
                    app_scope=row.app_scope,
                    state=state,
                    code=code.value if code else None,
                ),
                AppStateSetReply,
            )
            row = reply.app
        self._place(row, manifest, package, code)

    def _place(
        self, row: AppRow, manifest: Manifest | None, package: str | None, code: ErrorCode | None
    ) -> None:
        """Put the installed app in the book as its row, manifest and package say: usable, or
        refused with `code` (one whose manifest does not load is unavailable)."""
        scope = row.app_scope
        folder = self.cache.app_dir(scope, row.version)
        self.book.put(
            AppEntry(
                scope=scope,
                source="installed",
                # Its manifest's title, else its scope (a manifest that does not load has none).
                title=manifest.title if manifest is not None and manifest.title else scope,
                entry=f"{package}:" if package else "",
                app_path=str(folder),
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

    async def _package(self, scope: str, version: str) -> str | None:
        def find() -> str | None:
            try:
                names = os.listdir(self.cache.app_dir(scope, version))
            except OSError:
                return None
            return names[0] if len(names) == 1 else None

        return await trio.to_thread.run_sync(find)

    async def _revoked(self) -> set[tuple[str, str]]:
        reply = await self._store(RevocationListRequest(), RevocationListReply)
        return {(scope, version) for scope, version in reply.revoked}

    # ------------------------------------------------------------------ launch

    async def check_launch(self, scope: str) -> None:
        """An installed app's cache is verified again before its process starts: a broken
        one makes the app `unavailable` (audited) and raises `app_unavailable`."""
        app = self.book.installed(scope)
        if app is None:
            return
        if not await self._signer_trusted(app.row):
            await self._mark_unavailable(scope, ErrorCode.UNKNOWN_KEY)
            raise LineUpError(ErrorCode.UNKNOWN_KEY, scope)
        if app.package is not None and await self.cache.verify(
            scope, app.row.version, app.row.bundle_sha256 or ""
        ):
            return
        await self._mark_unavailable(scope, ErrorCode.APP_UNAVAILABLE)
        raise LineUpError(ErrorCode.APP_UNAVAILABLE, scope)

    async def _signer_trusted(self, row: AppRow) -> bool:
        """The installed version's signer is in the trusted set now (a corrupt
        trusted-keys.json trusts nothing). A row without a key predates signing: kept."""
        if row.key_id is None:
            return True
        try:
            return row.key_id in await self._trusted()
        except LineUpError:
            return False

    async def _mark_unavailable(
        self, scope: str, code: ErrorCode, operation_id: str | None = None
    ) -> None:
        reply = await self._store(
            AppStateSetRequest(
                app_scope=scope, state="unavailable", code=code.value, operation_id=operation_id
            ),
            AppStateSetReply,
        )
        entry = self.book.get(scope)
        assert entry is not None  # only an installed app is marked
        assert entry.installed is not None
        usable = code if code is ErrorCode.UNKNOWN_KEY else ErrorCode.APP_UNAVAILABLE
        self._place(reply.app, entry.manifest, entry.installed.package, usable)
        await self._publish()

    # ------------------------------------------------------------------ list

    async def list(self) -> RegistryListReply:
        ops = await self._store(AppOperationListRequest(limit=100), AppOperationListReply)
        infos = [_info(op) for op in ops.operations]
        latest: dict[str, AppOperationInfo] = {}
        for info in infos:
            latest.setdefault(info.app_scope, info)
        default = await self._store(SettingGetRequest(name=DEFAULT_APP), SettingGetReply)
        apps = [
            RegistryAppInfo(
                app_scope=CHAT,
                title=self.book.title(CHAT, "Chat"),
                version=lineup.__version__,
                kind="system",
                source="system",
                enabled=True,
                state="active",
                removable=False,
                operation=latest.get(CHAT),
            )
        ]
        revoked = await self._revoked()
        for entry in sorted(self.book, key=lambda e: e.scope):
            if entry.scope != CHAT:
                apps.append(self._app_info(entry, latest.get(entry.scope), revoked))
        return RegistryListReply(
            apps=tuple(apps),
            default_app=default.value if isinstance(default.value, str) else CHAT,
            operations=tuple(infos[:20]),
            catalog=await self._catalog_entries(revoked),
        )

    async def _catalog_entries(self, revoked: set[tuple[str, str]]) -> tuple[CatalogEntry, ...]:
        """The catalog's bundles, each with the code an install of it would get now."""
        catalog = self.catalog
        if catalog is None:
            return ()
        try:
            trusted = await self._trusted()
        except LineUpError:
            trusted = await trio.to_thread.run_sync(catalog.keys)  # a corrupt trusted-keys.json

        def verify(data: bytes) -> ErrorCode | None:
            try:
                verify_bundle(
                    data, trusted=trusted, host_version=lineup.__version__, revoked=revoked
                )
            except LineUpError as exc:
                return exc.code
            return None

        found = await trio.to_thread.run_sync(catalog.entries, verify, basis_of(trusted, revoked))
        entries: list[CatalogEntry] = []
        for entry in found:
            code = entry.code
            if code is None and entry.app_scope is not None and entry.version is not None:
                try:
                    self._check_target(entry.app_scope, entry.version)
                except LineUpError as exc:
                    code = exc.code.value
            entries.append(
                CatalogEntry(
                    file=entry.file,
                    app_scope=entry.app_scope,
                    version=entry.version,
                    key_id=entry.key_id,
                    size=entry.size,
                    code=code,
                )
            )
        return tuple(entries)

    def _app_info(
        self, entry: AppEntry, operation: AppOperationInfo | None, revoked: set[tuple[str, str]]
    ) -> RegistryAppInfo:
        scope, manifest, installed = entry.scope, entry.manifest, entry.installed
        previous = installed.row.previous_version if installed else None
        if (scope, previous) in revoked:
            previous = None  # a rollback cannot go there: it is no predecessor
        state = state_of(entry.refusal)
        return RegistryAppInfo(
            app_scope=scope,
            title=entry.title,
            version=installed.row.version if installed else (manifest.version if manifest else ""),
            kind=manifest.kind if manifest else "installed",
            source=entry.source,
            enabled=entry.enabled,
            state=state,
            predecessor=previous,
            key_id=installed.row.key_id if installed else None,
            removable=installed is not None,
            operation=operation,
            capabilities=manifest.requested_capabilities if manifest else (),
        )

    # ------------------------------------------------------------------ inspect

    async def inspect(self, msg: RegistryInspectRequest) -> RegistryInspectReply:
        try:
            if (msg.bundle_b64 is None) == (msg.catalog_file is None):
                raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "one of bundle_b64, catalog_file")
            if msg.catalog_file is not None:
                data = await self._from_catalog(msg.catalog_file)
            else:
                assert msg.bundle_b64 is not None
                data = _decode(msg.bundle_b64)
            signed, _ = read_header(data)
        except LineUpError as exc:
            return RegistryInspectReply(
                app_scope=None, version=None, key_id=None, size=0, code=exc.code.value
            )
        code: str | None = None
        try:
            await self._verify(data)
            self._check_target(signed.app_scope, signed.version)
        except LineUpError as exc:
            code = exc.code.value
        return RegistryInspectReply(
            app_scope=signed.app_scope,
            version=signed.version,
            key_id=signed.key_id,
            size=len(data),
            code=code,
            sha256=signed.sha256,
        )

    # ------------------------------------------------------------------ install

    async def install(self, msg: RegistryInstallRequest) -> AppOperationInfo:
        async with self._lock:
            seen = await self._seen(msg.operation_id)
            if seen is not None:
                return seen
            try:
                data = await self._read(msg)
                signed, _ = read_header(data)
            except LineUpError as exc:
                return await self._refused(msg.operation_id, UNKNOWN_SCOPE, "install", exc.code)
            scope = signed.app_scope
            current = self.book.installed(scope)
            kind: AppOperationKind = "update" if current is not None else "install"
            op = Operation(msg.operation_id, scope, kind)
            await self._put(op, version=signed.version, from_version=_version(current))
            op = op.start()
            await self._put(op)
            try:
                if msg.sha256 is not None and msg.sha256 != signed.sha256:
                    raise LineUpError(ErrorCode.DIGEST_MISMATCH, "not the bundle inspected")
                self._check_target(scope, signed.version)
                bundle = await self._verify(data)
                await self.cache.write(bundle, data)
                await self._crash("cache_renamed")
                try:
                    if current is not None:
                        await self._close_all(scope)  # they run the old code
                    reply = await self._store(
                        AppInstallRecordRequest(
                            app_scope=scope,
                            version=signed.version,
                            kind=bundle.manifest.kind,
                            manifest=bundle.manifest.model_dump(mode="json"),
                            bundle_sha256=signed.sha256,
                            key_id=signed.key_id,
                            operation_id=op.operation_id,
                            replaces="dev" if scope in self.leftovers else None,
                        ),
                        AppInstallRecordReply,
                    )
                except BaseException:
                    if current is None or signed.version not in (
                        current.row.version,
                        current.row.previous_version,
                    ):
                        with trio.CancelScope(shield=True):
                            await self.cache.remove(scope, signed.version)
                    raise
                await self._crash("row_written")
                if reply.replaced is not None:
                    # The dev code's private folder goes with its row (as on a remove).
                    self.leftovers.discard(scope)
                    log.info("registry.leftover_replaced source=%s", reply.replaced)
                    await self._remove_home(scope)
                old = current.row.previous_version if current is not None else None
                self._place(reply.app, bundle.manifest, bundle.package, None)
                if old is not None and old not in (signed.version, reply.app.previous_version):
                    await self.cache.remove(scope, old)  # the predecessor it replaced
            except LineUpError as exc:
                return await self._failed(op, exc.code)
            await self._publish()
            return await self._result(op.operation_id)

    def _check_target(self, scope: str, version: str) -> None:
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

    async def _trusted(self) -> dict[str, bytes]:
        """The one trusted set: trusted-keys.json (read each time: a key added while the
        runtime runs counts at once), and the catalog's keys when the runtime trusts them.
        Raises `invalid_arguments` for a corrupt trusted-keys.json."""
        trusted = await trio.to_thread.run_sync(TrustStore(self.data_dir).keys)
        if self.catalog is not None:
            trusted.update(await trio.to_thread.run_sync(self.catalog.keys))
        return trusted

    async def _verify(self, data: bytes) -> VerifiedBundle:
        trusted = await self._trusted()
        revoked = await self._revoked()
        return await trio.to_thread.run_sync(
            lambda: verify_bundle(
                data, trusted=trusted, host_version=lineup.__version__, revoked=revoked
            )
        )

    async def _read(self, msg: RegistryInstallRequest) -> bytes:
        given = [v for v in (msg.path, msg.url, msg.bundle_b64, msg.catalog_file) if v is not None]
        if len(given) != 1:
            raise LineUpError(
                ErrorCode.INVALID_ARGUMENTS, "one of path, url, bundle_b64, catalog_file"
            )
        if msg.bundle_b64 is not None:
            return _decode(msg.bundle_b64)
        if msg.catalog_file is not None:
            return await self._from_catalog(msg.catalog_file)
        if msg.path is not None:
            return await trio.to_thread.run_sync(_read_path, Path(msg.path))
        assert msg.url is not None
        return await self._download(msg.url)

    async def _from_catalog(self, name: str) -> bytes:
        if self.catalog is None:
            raise LineUpError(ErrorCode.CATALOG_ENTRY_NOT_FOUND, "no catalog")
        return await trio.to_thread.run_sync(self.catalog.read, name)

    async def _download(self, url: str) -> bytes:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        allowed = (parts.scheme == "https" and bool(host)) or (
            parts.scheme == "http" and self.dev and _is_loopback(host)
        )
        if not allowed:
            raise LineUpError(ErrorCode.URL_NOT_ALLOWED, parts.scheme)
        origin = f"{parts.scheme}://{parts.netloc}"
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            with trio.fail_after(DOWNLOAD_TIMEOUT):
                async with HttpClient(origin, connect_timeout=CONNECT_TIMEOUT) as client:
                    answer = await client.request("GET", target, max_bytes=MAX_BUNDLE_BYTES)
        except AnswerRefused as exc:  # over the bound (read no further), or encoded
            raise LineUpError(ErrorCode.DOWNLOAD_FAILED, str(exc)) from None
        except (HttpError, trio.TooSlowError, OSError, ValueError) as exc:
            raise LineUpError(ErrorCode.DOWNLOAD_FAILED, type(exc).__name__) from None
        if answer.status != 200:  # a redirect too: never followed
            raise LineUpError(ErrorCode.DOWNLOAD_FAILED, str(answer.status))
        return answer.body

    async def _crash(self, point: str) -> None:
        if self.crash_at == point and point in CRASH_POINTS:
            log.warning("registry.crash_point point=%s", point)
            os.kill(os.getpid(), signal.SIGKILL)
        if self.pause_at == point and point in CRASH_POINTS:
            log.warning("registry.pause_point point=%s", point)
            await trio.sleep_forever()

    # ------------------------------------------------------------------ operate

    async def operate(self, msg: RegistryOperateRequest) -> AppOperationInfo:
        async with self._lock:
            seen = await self._seen(msg.operation_id)
            if seen is not None:
                return seen
            scope = msg.app_scope
            installed = self.book.installed(scope)
            op = Operation(msg.operation_id, scope, msg.kind)
            await self._put(
                op,
                version=msg.version if msg.kind == "revoke" else None,
                from_version=_version(installed),
            )
            op = op.start()
            await self._put(op)
            try:
                await self._run(op, msg)
            except LineUpError as exc:
                return await self._failed(op, exc.code)
            return await self._result(op.operation_id)

    async def _run(self, op: Operation, msg: RegistryOperateRequest) -> None:
        scope = msg.app_scope
        entry = self.book.get(scope)
        if scope != CHAT and entry is None and scope not in self.foreign:
            raise LineUpError(ErrorCode.APP_NOT_INSTALLED, scope)
        kind = entry.manifest.kind if entry is not None and entry.manifest is not None else None
        protected = scope == CHAT or kind in ("system", "core")
        if msg.kind == "set_default":
            refusal = self.book.refusal(scope)
            if refusal is not None or not self.book.enabled(scope):
                raise LineUpError(refusal or ErrorCode.APP_DISABLED, scope)
            await self._store(
                SettingPutRequest(name=DEFAULT_APP, value=scope, operation_id=op.operation_id),
                SettingPutReply,
            )
            return
        if msg.kind == "enable":
            await self._enable(op, scope)
            return
        if protected and msg.kind in ("disable", "remove"):
            raise LineUpError(ErrorCode.APP_PROTECTED, scope)
        if msg.kind == "disable":
            await self._store(
                AppEnabledSetRequest(app_scope=scope, enabled=False), AppEnabledSetReply
            )
            if scope in self.book:
                self.book.change(scope, enabled=False)
            await self._close_all(scope)
            await self._complete(op)
            await self._publish()
            return
        installed = self.book.installed(scope)
        if installed is None:
            raise LineUpError(ErrorCode.APP_PROTECTED, scope)  # bundled, dev: not ours to touch
        if msg.kind == "rollback":
            await self._rollback(op, installed)
        elif msg.kind == "revoke":
            await self._revoke(op, installed, msg.version)
        elif msg.kind == "remove":
            await self._remove(op, scope)

    async def _enable(self, op: Operation, scope: str) -> None:
        if scope == CHAT:
            await self._complete(op)
            return
        installed = self.book.installed(scope)
        if installed is not None:
            # Checked again: the cache, the manifest, the revocations.
            record = await self._store(AppRegistryGetRequest(app_scope=scope), AppRegistryGetReply)
            if record.record is not None:
                await self._take(installed.row, record.record.manifest, await self._revoked())
        code = self.book.refusal(scope)
        if code is not None:
            raise LineUpError(code, scope)
        reply = await self._store(
            AppEnabledSetRequest(app_scope=scope, enabled=True, operation_id=op.operation_id),
            AppEnabledSetReply,
        )
        entry = self.book.get(scope)
        if entry is not None:
            installed = entry.installed
            self.book.change(
                scope,
                enabled=True,
                installed=None if installed is None else Installed(reply.app, installed.package),
            )
        await self._publish()

    async def _predecessor(self, installed: Installed) -> tuple[Manifest, str] | None:
        """The verified predecessor (its manifest and package), or None."""
        row = installed.row
        if row.previous_version is None:
            return None
        if (row.app_scope, row.previous_version) in await self._revoked():
            return None
        record = await self._store(
            AppRegistryGetRequest(app_scope=row.app_scope), AppRegistryGetReply
        )
        if record.record is None or record.record.previous_manifest is None:
            return None
        try:
            manifest = load_manifest(record.record.previous_manifest)
        except ManifestInvalid:
            return None
        package = await self._package(row.app_scope, row.previous_version)
        if (
            incompatibility(manifest) is not None
            or package is None
            or not await self.cache.verify(
                row.app_scope, row.previous_version, record.record.previous_bundle_sha256 or ""
            )
        ):
            return None
        return manifest, package

    async def _rollback(self, op: Operation, installed: Installed) -> None:
        previous = await self._predecessor(installed)
        if previous is None:
            raise LineUpError(ErrorCode.NO_PREDECESSOR, installed.row.app_scope)
        await self._swap(op, installed, *previous)

    async def _swap(
        self, op: Operation, installed: Installed, manifest: Manifest, package: str
    ) -> None:
        scope = installed.row.app_scope
        await self._close_all(scope)  # they run the version rolled back from
        reply = await self._store(
            AppRollbackRequest(
                app_scope=scope, from_version=installed.row.version, operation_id=op.operation_id
            ),
            AppRollbackReply,
        )
        self._place(reply.app, manifest, package, None)
        await self._publish()

    async def _revoke(self, op: Operation, installed: Installed, version: str | None) -> None:
        if version is None:
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "revoke names a version")
        scope = installed.row.app_scope
        await self._store(
            RevocationAddRequest(app_scope=scope, version=version), RevocationAddReply
        )
        if version != installed.row.version:
            await self._complete(op)  # the predecessor, or a version never installed
            return
        previous = await self._predecessor(installed)
        if previous is not None:
            await self._swap(op, installed, *previous)
            return
        await self._close_all(scope)
        await self._mark_unavailable(scope, ErrorCode.REVOKED, op.operation_id)

    async def _remove(self, op: Operation, scope: str) -> None:
        await self._close_all(scope)
        await self.cache.remove(scope)
        await self._remove_home(scope)
        await self._store(
            AppRemoveRequest(app_scope=scope, operation_id=op.operation_id), AppRemoveReply
        )
        self.book.drop(scope)
        await self._publish()

    async def _remove_home(self, scope: str) -> None:
        """The app's private data dir (the sandbox's `app_data_dir`: <data_dir>/apps/<scope>)."""
        home = self.data_dir / "apps" / scope
        await trio.to_thread.run_sync(lambda: shutil.rmtree(home, ignore_errors=True))

    async def _close_all(self, scope: str) -> None:
        """Close the app's live instances, as a close does: calls converge, focus goes back."""
        for instance_id in self._live_of(scope):
            try:
                await self._close(instance_id)
            except LineUpError as exc:
                if exc.code is not ErrorCode.APP_INSTANCE_NOT_FOUND:  # ended meanwhile
                    raise

    # ------------------------------------------------------------------ operation rows

    async def _put(
        self,
        op: Operation,
        *,
        version: str | None = None,
        from_version: str | None = None,
    ) -> AppOperationRow:
        reply = await self._store(
            AppOperationPutRequest(
                operation_id=op.operation_id,
                app_scope=op.app_scope,
                kind=op.kind,
                state=op.state,
                version=version,
                from_version=from_version,
                code=op.code,
            ),
            AppOperationPutReply,
        )
        row: AppOperationRow = reply.operation
        return row

    async def _complete(self, op: Operation) -> None:
        await self._put(op.complete())

    async def _failed(self, op: Operation, code: ErrorCode) -> AppOperationInfo:
        log.info("registry.failed kind=%s code=%s", op.kind, code.value)
        return _info(await self._put(op.fail(code)))

    async def _refused(
        self, operation_id: str, scope: str, kind: AppOperationKind, code: ErrorCode
    ) -> AppOperationInfo:
        """An install refused before it named an app: recorded, then failed."""
        op = Operation(operation_id, scope, kind)
        await self._put(op)
        return await self._failed(op, code)

    async def _seen(self, operation_id: str) -> AppOperationInfo | None:
        reply = await self._store(
            AppOperationListRequest(operation_id=operation_id, limit=1), AppOperationListReply
        )
        return _info(reply.operations[0]) if reply.operations else None

    async def _result(self, operation_id: str) -> AppOperationInfo:
        found = await self._seen(operation_id)
        assert found is not None
        return found


def _info(op: AppOperationRow) -> AppOperationInfo:
    return AppOperationInfo.model_validate(op.model_dump(exclude={"type"}))


def _version(installed: Installed | None) -> str | None:
    return installed.row.version if installed is not None else None


def _decode(text: str) -> bytes:
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "not base64") from None
    if len(data) > MAX_BUNDLE_BYTES:
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "larger than a bundle may be")
    return data


def _read_path(path: Path) -> bytes:
    """The file, read whole but bounded (a larger one is refused, never read on)."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_BUNDLE_BYTES + 1)
    except OSError:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "the bundle file cannot be read") from None
    if len(data) > MAX_BUNDLE_BYTES:
        raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "larger than a bundle may be")
    return data


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
