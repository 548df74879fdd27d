"""Installs and updates of a signed bundle (issue 15), and what an install of one would get.

Theory of operation
-------------------
Every install is one `AppOperation` (`_operation_log`), recorded as it moves and answered with
the operation as it ended. The bytes (a path, a URL or base64, or a file of the local catalog by
name) are read whole and bounded, then verified in memory by `sdk.bundle.verify_bundle` against
the trusted keys (read at every install), the revocations and this host's version. Only then is
anything written: the verified cache (`_cache`), then — after an update closed the live
instances, which run the old code — the registry row (the old version becomes the predecessor),
then the inventory. A failure at any step before the row leaves the active version as it was:
the operation is recorded `failed` with the failure's code (`internal_error` for one that is
no `LineUpError`), and only then is the new version's folder removed — once the operation is
failed, the store refuses its row, so a row request that got no answer in time can never land
later and name a removed folder. The store keeps an operation it completed with the row,
though: `failed` then comes back `completed`, the answer (not the write) was lost, and the app
is taken as its row says. A cancellation leaves the folder to the next start's sweep.

A crash is a failure too, at any step: the steps are the test-only `CRASH_POINTS`, in order
(`_installed`). The next start ends the operation `failed` (`actor_restarted`) unless the row
names the new version — the row and the operation's `completed` are one store transaction —
and sweeps the cache of every `.tmp-*` and every version no row names.

`inspect` answers what an install of the same bytes would get, writing nothing.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import logging
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

import trio

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store.messages import (
    AppInstallRecordReply,
    AppInstallRecordRequest,
    AppOperationKind,
    AppRegistryGetReply,
    AppRegistryGetRequest,
)
from lineup.facts.operations import COMPLETED
from lineup.sdk.bundle import (
    BundleRefused,
    read_header,
)
from lineup.sdk.protocol import (
    AppOperationInfo,
)
from lineup.wire.client import AnswerRefused, HttpClient, HttpError

from ._app_book import Installed
from ._installed import CRASH_POINTS, InstalledApps
from ._lifecycle import Lifecycle
from ._operation_log import OperationLog, version_of
from ._operations import Operation
from ._port import Port
from ._publisher import Publisher
from .messages import (
    MAX_BUNDLE_BYTES,
    RegistryInspectReply,
    RegistryInspectRequest,
    RegistryInstallRequest,
)

__all__ = ["Installer", "download"]

log = logging.getLogger("lineup.focus.registry")

DOWNLOAD_TIMEOUT: Final = 30.0  # one whole bundle download
CONNECT_TIMEOUT: Final = 10.0
UNKNOWN_SCOPE: Final = "unknown"  # an install refused before its bundle named an app
_LOOPBACK_NAMES: Final = frozenset({"localhost"})


class Installer:
    """Installs and updates (see the module's docstring)."""

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
        title: str | None = None
        try:
            title = (await self._installed.verify(data)).manifest.title
            self._installed.check_target(signed.app_scope, signed.version)
        except LineUpError as exc:
            code = exc.code.value
        return RegistryInspectReply(
            app_scope=signed.app_scope,
            version=signed.version,
            key_id=signed.key_id,
            title=title,
            size=len(data),
            code=code,
            sha256=signed.sha256,
        )

    async def install(self, msg: RegistryInstallRequest) -> AppOperationInfo:
        async with self._ops.lock:
            seen = await self._ops.seen(msg.operation_id)
            if seen is not None:
                return seen
            try:
                data = await self._read(msg)
                signed, _ = read_header(data)
            except LineUpError as exc:
                return await self._ops.refused(msg.operation_id, UNKNOWN_SCOPE, "install", exc.code)
            scope = signed.app_scope
            current = self._book.installed(scope)
            kind: AppOperationKind = "update" if current is not None else "install"
            op = Operation(msg.operation_id, scope, kind)
            await self._ops.put(op, version=signed.version, from_version=version_of(current))
            await self._crash("operation_requested")
            try:  # from here on, whatever fails ends the operation failed
                op = op.start()
                await self._ops.put(op)
                await self._crash("operation_running")
                await self._apply(op, msg, data, current)
            except Exception as exc:
                code = exc.code if isinstance(exc, LineUpError) else ErrorCode.INTERNAL_ERROR
                ended = await self._ops.failed(op, code)  # never left running
                if ended.state == COMPLETED:
                    await self._take_unheard(scope, current)  # the store's answer was lost
                else:
                    # No row will name the new version now (the store refuses a write that
                    # comes after the failure), so its folder goes unless a row names it.
                    kept = current is not None and signed.version in (
                        current.row.version,
                        current.row.previous_version,
                    )
                    if not kept:
                        await self._installed.cache.remove(scope, signed.version)
                    if not isinstance(exc, LineUpError):
                        raise
                    return ended
            await self._publisher.publish()
            await self._crash("inventory_published")
            return await self._ops.result(op.operation_id)

    async def _apply(
        self, op: Operation, msg: RegistryInstallRequest, data: bytes, current: Installed | None
    ) -> None:
        """The install's work once its operation runs: verify, write the cache, close the old
        version's instances, write the row (which completes `op`), drop what it superseded."""
        signed, _ = read_header(data)
        scope = signed.app_scope
        if msg.sha256 is not None and msg.sha256 != signed.sha256:
            raise LineUpError(ErrorCode.DIGEST_MISMATCH, "not the bundle inspected")
        self._installed.check_target(scope, signed.version)
        bundle = await self._installed.verify(data)
        await self._crash("bundle_verified")
        await self._installed.cache.write(bundle, data, midway=self._thread_point("cache_writing"))
        await self._crash("cache_renamed")
        if current is not None:
            await self._lifecycle.close_all(scope)  # they run the old code
            await self._crash("instances_closed")
        reply = await self._port.store(
            AppInstallRecordRequest(
                app_scope=scope,
                version=signed.version,
                kind=bundle.manifest.kind,
                manifest=bundle.manifest.model_dump(mode="json"),
                bundle_sha256=signed.sha256,
                key_id=signed.key_id,
                operation_id=op.operation_id,
                replaces="dev" if scope in self._installed.leftovers else None,
            ),
            AppInstallRecordReply,
        )
        await self._crash("row_written")
        if reply.replaced is not None:
            # The dev code's private folder goes with its row (as on a remove).
            self._installed.leftovers.discard(scope)
            log.info("registry.leftover_replaced source=%s", reply.replaced)
            await self._installed.remove_home(scope)
        old = current.row.previous_version if current is not None else None
        self._installed.place(reply.app, bundle.manifest, bundle.package, None)
        if old is not None and old not in (signed.version, reply.app.previous_version):
            await self._installed.cache.remove(scope, old)  # the predecessor it replaced
        await self._crash("superseded_removed")

    async def _take_unheard(self, scope: str, current: Installed | None) -> None:
        """The store wrote the row (the operation came back `completed`) but its answer was
        lost: take the app as its row now says, its cache checked again (as the next start
        would), and drop what it superseded."""
        found = await self._port.store(AppRegistryGetRequest(app_scope=scope), AppRegistryGetReply)
        if found.record is None:  # the row completes the operation in its own transaction
            raise LineUpError(ErrorCode.INTERNAL_ERROR, "a completed install without its row")
        row = found.record.app
        if scope in self._installed.leftovers:  # the row it replaced was a leftover dev row
            self._installed.leftovers.discard(scope)
            await self._installed.remove_home(scope)
        await self._installed.take(row, found.record.manifest, await self._installed.revoked())
        old = current.row.previous_version if current is not None else None
        if old is not None and old not in (row.version, row.previous_version):
            await self._installed.cache.remove(scope, old)

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
        return await download(msg.url, dev=self._installed.dev)

    async def _from_catalog(self, name: str) -> bytes:
        if self._installed.catalog is None:
            raise LineUpError(ErrorCode.CATALOG_ENTRY_NOT_FOUND, "no catalog")
        return await trio.to_thread.run_sync(self._installed.catalog.read, name)

    async def _crash(self, point: str) -> None:
        """Test-only: SIGKILL focus, or wait forever, at `point` if configured (`CRASH_POINTS`)."""
        assert point in CRASH_POINTS, point
        if self._installed.crash_at == point:
            log.warning("registry.crash_point point=%s", point)
            os.kill(os.getpid(), signal.SIGKILL)
        if self._installed.pause_at == point:
            log.warning("registry.pause_point point=%s", point)
            await trio.sleep_forever()

    def _thread_point(self, point: str) -> Callable[[], None] | None:
        """`_crash(point)` for a worker thread's flow (it blocks that thread while paused), or
        None when no test configured the point."""
        if point not in (self._installed.crash_at, self._installed.pause_at):
            return None
        return lambda: trio.from_thread.run(self._crash, point)


async def download(url: str, *, dev: bool) -> bytes:
    """The bundle at `url`, whole but bounded in size and time: https, or http on loopback
    for a development runtime (`dev`); a redirect is never followed."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    allowed = (parts.scheme == "https" and bool(host)) or (
        parts.scheme == "http" and dev and _is_loopback(host)
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
