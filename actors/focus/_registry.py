"""Focus's app registry: every operation on an app, and the list the App Registry shows
(issue 15).

Theory of operation
-------------------
Every request is one `AppOperation` (`_operation_log`), recorded in the store as it moves
(requested → running → completed | failed) and answered with the operation as it ended; a
registry change names its operation, so the store completes it in the change's own
transaction. One operation runs at a time (`OperationLog.lock`), and an `operation_id` seen
before is answered with the operation it names. Installs and updates are `_install`'s; the
installed apps' cache and trust, `_installed`'s.

Enable checks an installed app again (cache, manifest, revocations); disable and remove close
the app's live instances first (their calls converge, focus goes back); rollback swaps in the
verified predecessor, and revoking the active version does the same, or leaves the app
`unavailable` when there is none. The chat, `system` and `core` apps cannot be disabled or
removed, and only an installed app can be rolled back, revoked or removed (`app_protected`).

`list` is the App Registry's page: every app with its state and newest operation, the default
app, the newest operations, and the local catalog's bundles with the code an install of each
would get now.
"""

from __future__ import annotations

from typing import Final

import trio

import lineup
from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store.messages import (
    AppEnabledSetReply,
    AppEnabledSetRequest,
    AppRegistryGetReply,
    AppRegistryGetRequest,
    AppRegistryListReply,
    AppRegistryListRequest,
    AppRemoveReply,
    AppRemoveRequest,
    AppRollbackReply,
    AppRollbackRequest,
    AppRow,
    RevocationAddReply,
    RevocationAddRequest,
    SettingGetReply,
    SettingGetRequest,
    SettingPutReply,
    SettingPutRequest,
)
from lineup.facts.apps import state_of
from lineup.facts.scopes import CHAT
from lineup.sdk.bundle import (
    verify_bundle,
)
from lineup.sdk.manifest import Manifest
from lineup.sdk.protocol import (
    AppOperationInfo,
    CatalogEntry,
    RegistryAppInfo,
    RegistryListReply,
)

from ._app_book import AppEntry, Installed
from ._catalog import basis_of
from ._installed import InstalledApps
from ._lifecycle import Lifecycle
from ._operation_log import OperationLog, version_of
from ._operations import Operation
from ._port import Port
from ._publisher import Publisher
from .messages import (
    RegistryOperateRequest,
)

__all__ = ["DEFAULT_APP", "RegistryService"]

DEFAULT_APP: Final = "default_app"  # the settings row (store.registry.setting.*)
MAX_CATALOG_TITLES: Final = 1024  # catalog bundles' titles kept (far above a catalog's entries)


class RegistryService:
    """The operations on apps and the registry's list (see the module's docstring)."""

    def __init__(
        self,
        port: Port,
        installed: InstalledApps,
        ops: OperationLog,
        lifecycle: Lifecycle,
        publisher: Publisher,
    ) -> None:
        self._port = port
        self._installed = installed
        self._book = installed.book
        self._ops = ops
        self._lifecycle = lifecycle
        self._publisher = publisher
        # A catalog bundle's title, by (app_scope, version), once it verified: the catalog
        # verifies a bundle again only when it changes, and an unverified title is never shown.
        self._catalog_titles: dict[tuple[str, str], str] = {}

    async def list(self) -> RegistryListReply:
        infos = await self._ops.recent(100)
        latest: dict[str, AppOperationInfo] = {}
        for info in infos:
            latest.setdefault(info.app_scope, info)
        default = await self._port.store(SettingGetRequest(name=DEFAULT_APP), SettingGetReply)
        # Seed 004 §4.3's record of each app (install state, active instances, when enabled),
        # as the store keeps it; the chat has no registry row, and is always one instance.
        listed = await self._port.store(AppRegistryListRequest(), AppRegistryListReply)
        records = {row.app_scope: row for row in listed.apps}
        apps = [
            RegistryAppInfo(
                app_scope=CHAT,
                title=self._book.title(CHAT, "Chat"),
                version=lineup.__version__,
                kind="system",
                source="system",
                enabled=True,
                state="active",
                removable=False,
                operation=latest.get(CHAT),
                active_instance_count=len(self._lifecycle.instances.live_of(CHAT)),
            )
        ]
        revoked = await self._installed.revoked()
        for entry in sorted(self._book, key=lambda e: e.scope):
            if entry.scope != CHAT:
                shown = self._app_info(entry, latest.get(entry.scope), revoked)
                apps.append(_with_record(shown, records.get(entry.scope)))
        return RegistryListReply(
            apps=tuple(apps),
            default_app=default.value if isinstance(default.value, str) else CHAT,
            operations=tuple(infos[:20]),
            catalog=await self._catalog_entries(revoked),
        )

    async def _catalog_entries(self, revoked: set[tuple[str, str]]) -> tuple[CatalogEntry, ...]:
        """The catalog's bundles, each with the code an install of it would get now."""
        catalog = self._installed.catalog
        if catalog is None:
            return ()
        try:
            trusted = await self._installed.trusted()
        except LineUpError:
            trusted = await trio.to_thread.run_sync(catalog.keys)  # a corrupt trusted-keys.json

        def verify(data: bytes) -> ErrorCode | None:
            try:
                verified = verify_bundle(
                    data, trusted=trusted, host_version=lineup.__version__, revoked=revoked
                )
            except LineUpError as exc:
                return exc.code
            if len(self._catalog_titles) >= MAX_CATALOG_TITLES:
                self._catalog_titles.clear()  # bounded; an entry then shows its app id
            if verified.manifest.title is not None:
                key = (verified.signed.app_scope, verified.signed.version)
                self._catalog_titles[key] = verified.manifest.title
            return None

        found = await trio.to_thread.run_sync(catalog.entries, verify, basis_of(trusted, revoked))
        entries: list[CatalogEntry] = []
        for entry in found:
            code = entry.code
            if code is None and entry.app_scope is not None and entry.version is not None:
                try:
                    self._installed.check_target(entry.app_scope, entry.version)
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
                    title=self._catalog_titles.get((entry.app_scope or "", entry.version or ""))
                    if entry.code is None
                    else None,
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
            capabilities=manifest.declared_capabilities if manifest else (),
        )

    async def operate(self, msg: RegistryOperateRequest) -> AppOperationInfo:
        async with self._ops.lock:
            seen = await self._ops.seen(msg.operation_id)
            if seen is not None:
                return seen
            scope = msg.app_scope
            installed = self._book.installed(scope)
            op = Operation(msg.operation_id, scope, msg.kind)
            await self._ops.put(
                op,
                version=msg.version if msg.kind == "revoke" else None,
                from_version=version_of(installed),
            )
            op = op.start()
            await self._ops.put(op)
            try:
                await self._run(op, msg)
            except LineUpError as exc:
                return await self._ops.failed(op, exc.code)
            except Exception:
                await self._ops.failed(op, ErrorCode.INTERNAL_ERROR)  # never left running
                raise
            return await self._ops.result(op.operation_id)

    async def _run(self, op: Operation, msg: RegistryOperateRequest) -> None:
        scope = msg.app_scope
        entry = self._book.get(scope)
        if scope != CHAT and entry is None and scope not in self._installed.foreign:
            raise LineUpError(ErrorCode.APP_NOT_INSTALLED, scope)
        kind = entry.manifest.kind if entry is not None and entry.manifest is not None else None
        protected = scope == CHAT or kind in ("system", "core")
        if msg.kind == "set_default":
            refusal = self._book.refusal(scope)
            if refusal is not None or not self._book.enabled(scope):
                raise LineUpError(refusal or ErrorCode.APP_DISABLED, scope)
            await self._port.store(
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
            await self._port.store(
                AppEnabledSetRequest(app_scope=scope, enabled=False), AppEnabledSetReply
            )
            if scope in self._book:
                self._book.change(scope, enabled=False)
            await self._lifecycle.close_all(scope)
            await self._ops.complete(op)
            await self._publisher.publish()
            return
        installed = self._book.installed(scope)
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
            await self._ops.complete(op)
            return
        installed = self._book.installed(scope)
        if installed is not None:
            # Checked again: the cache, the manifest, the revocations.
            record = await self._port.store(
                AppRegistryGetRequest(app_scope=scope), AppRegistryGetReply
            )
            if record.record is not None:
                await self._installed.take(
                    installed.row, record.record.manifest, await self._installed.revoked()
                )
        code = self._book.refusal(scope)
        if code is not None:
            raise LineUpError(code, scope)
        reply = await self._port.store(
            AppEnabledSetRequest(app_scope=scope, enabled=True, operation_id=op.operation_id),
            AppEnabledSetReply,
        )
        entry = self._book.get(scope)
        if entry is not None:
            installed = entry.installed
            self._book.change(
                scope,
                enabled=True,
                installed=None if installed is None else Installed(reply.app, installed.package),
            )
        await self._publisher.publish()

    async def _rollback(self, op: Operation, installed: Installed) -> None:
        previous = await self._installed.predecessor(installed)
        if previous is None:
            raise LineUpError(ErrorCode.NO_PREDECESSOR, installed.row.app_scope)
        await self._swap(op, installed, *previous)

    async def _swap(
        self, op: Operation, installed: Installed, manifest: Manifest, package: str
    ) -> None:
        scope = installed.row.app_scope
        await self._lifecycle.close_all(scope)  # they run the version rolled back from
        reply = await self._port.store(
            AppRollbackRequest(
                app_scope=scope, from_version=installed.row.version, operation_id=op.operation_id
            ),
            AppRollbackReply,
        )
        self._installed.place(reply.app, manifest, package, None)
        await self._publisher.publish()

    async def _revoke(self, op: Operation, installed: Installed, version: str | None) -> None:
        if version is None:
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "revoke names a version")
        scope = installed.row.app_scope
        await self._port.store(
            RevocationAddRequest(app_scope=scope, version=version), RevocationAddReply
        )
        if version != installed.row.version:
            await self._ops.complete(op)  # the predecessor, or a version never installed
            return
        previous = await self._installed.predecessor(installed)
        if previous is not None:
            await self._swap(op, installed, *previous)
            return
        await self._lifecycle.close_all(scope)
        await self._installed.mark_unavailable(scope, ErrorCode.REVOKED, op.operation_id)

    async def _remove(self, op: Operation, scope: str) -> None:
        await self._lifecycle.close_all(scope)
        # The row goes first, in one transaction with the operation's end: that is the remove.
        # Its files go after it, so a crash never leaves a row whose bundle is gone (an app
        # unavailable for good); it leaves folders no row names, which the next start removes
        # (`InstalledApps.load`: the cache's sweep, and the data dirs of removed apps).
        await self._port.store(
            AppRemoveRequest(app_scope=scope, operation_id=op.operation_id), AppRemoveReply
        )
        self._book.drop(scope)
        await self._publisher.publish()
        await self._installed.cache.remove(scope)
        await self._installed.remove_home(scope)


def _with_record(info: RegistryAppInfo, row: AppRow | None) -> RegistryAppInfo:
    """`info` with the store's record of the app (seed 004 §4.3), when it has one."""
    if row is None:
        return info
    return info.model_copy(
        update={
            "install_state": row.install_state,
            "active_instance_count": row.active_instance_count,
            "installed_at": row.installed_at,
            "enabled_at": row.enabled_at,
        }
    )
