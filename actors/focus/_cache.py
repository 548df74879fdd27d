"""The verified cache of installed bundles: `<data_dir>/bundles/<app_scope>/<version>/`.

Theory of operation: only a `VerifiedBundle` is ever written, and never in place: its bytes
(`bundle.lineup`) and its unpacked package (`app/<package>/…`) go into a fresh
`bundles/.tmp-<random>/`, every file and directory fsynced, then the directory is renamed to
`<scope>/<version>` and the parent fsynced. A crash leaves either no version directory (a
`.tmp-*` that `sweep` removes at start) or a whole one. Before an app runs (start, launch,
enable) `verify` reads it again: the header's digest must be the registry row's
`bundle_sha256`, the payload must hash to it, and the unpacked files must be exactly the
payload's. The app's process runs from `app_dir(...)` with `entry = "<package>:"`; an MCP
server (kind `mcp`) runs from `app_dir(...)/<package>/`, its command's folder.

Every blocking call runs in `trio.to_thread.run_sync`.
"""

from __future__ import annotations

import hashlib
import io
import os
import secrets
import shutil
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final

import trio

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.sdk.bundle import (
    MAX_BUNDLE_FILE_BYTES,
    MAX_BUNDLE_FILES,
    BundleRefused,
    VerifiedBundle,
    read_header,
)

__all__ = ["BUNDLE_FILE", "BundleCache"]

BUNDLE_FILE: Final = "bundle.lineup"
_TMP: Final = ".tmp-"
_IGNORED: Final = frozenset({"__pycache__"})  # never in a payload; tolerated if made later


class BundleCache:
    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir / "bundles"

    def version_dir(self, app_scope: str, version: str) -> Path:
        return self.root / app_scope / version

    def app_dir(self, app_scope: str, version: str) -> Path:
        """What goes on the app's `sys.path` (`app_path`): it holds the one package."""
        return self.version_dir(app_scope, version) / "app"

    async def write(
        self, bundle: VerifiedBundle, data: bytes, *, midway: Callable[[], None] | None = None
    ) -> Path:
        """Put a verified bundle in place atomically; a whole directory already there for the
        same digest is kept (a retry), a broken one is replaced. A write that fails (a full
        disk, a name the filesystem refuses) leaves nothing behind and raises
        `internal_error`: the runtime's failure, not the bundle's. `midway` (test-only: the
        install's `cache_writing` point) is called in the worker thread once the bytes and the
        package's first file are written, before the next write."""
        try:
            return await trio.to_thread.run_sync(self._write, bundle, data, midway)
        except OSError as exc:
            raise LineUpError(ErrorCode.INTERNAL_ERROR, f"cache write: {exc.strerror}") from None

    async def verify(self, app_scope: str, version: str, bundle_sha256: str) -> bool:
        return await trio.to_thread.run_sync(self._verify, app_scope, version, bundle_sha256)

    async def remove(self, app_scope: str, version: str | None = None) -> None:
        """Remove one version, or (None) every version of the app; the app's folder goes with
        its last version, so a failed first install leaves the cache as it was."""
        if version is None:
            await trio.to_thread.run_sync(self._discard, self.root / app_scope)
        else:
            await trio.to_thread.run_sync(self._discard_version, app_scope, version)

    async def sweep(self, keep: Iterable[tuple[str, str]]) -> list[str]:
        """At start: remove every `.tmp-*` left by a crash and every version directory the
        registry does not name (`keep`: (scope, version) pairs). Returns what it removed."""
        return await trio.to_thread.run_sync(self._sweep, frozenset(keep))

    # ------------------------------------------------------------------ blocking

    def _write(
        self, bundle: VerifiedBundle, data: bytes, midway: Callable[[], None] | None = None
    ) -> Path:
        signed = bundle.signed
        target = self.version_dir(signed.app_scope, signed.version)
        if self._verify(signed.app_scope, signed.version, signed.sha256):
            return target
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.root / f"{_TMP}{secrets.token_hex(8)}"
        tmp.mkdir(mode=0o700)
        try:
            _write_file(tmp / BUNDLE_FILE, data)
            package = tmp / "app" / bundle.package
            for index, (name, body) in enumerate(sorted(bundle.files.items())):
                _write_file(package / name, body)
                if index == 0 and midway is not None:
                    midway()
            _fsync_tree(tmp)
            scope_dir = target.parent
            scope_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            _fsync_dir(self.root)
            if target.exists():
                self._discard(target)  # broken: it did not verify
            os.rename(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)  # a crash here leaves it to `sweep`
            raise
        _fsync_dir(scope_dir)
        return target

    def _verify(self, app_scope: str, version: str, bundle_sha256: str) -> bool:
        where = self.version_dir(app_scope, version)
        try:
            data = (where / BUNDLE_FILE).read_bytes()
            signed, payload = read_header(data)
        except (OSError, BundleRefused):
            return False
        if (
            signed.sha256 != bundle_sha256
            or (signed.app_scope, signed.version) != (app_scope, version)
            or len(payload) != signed.size
            or hashlib.sha256(payload).hexdigest() != bundle_sha256
        ):
            return False
        try:
            expected = _payload_files(payload)
            present = _files_under(where / "app")
        except (OSError, ValueError, zipfile.BadZipFile):
            return False
        if set(present) != set(expected):
            return False
        return all(path.read_bytes() == expected[name] for name, path in present.items())

    def _discard(self, target: Path) -> None:
        if not target.exists():
            return
        # Renamed out of the way first, so no half-removed version is ever found by its name.
        trash = self.root / f"{_TMP}{secrets.token_hex(8)}"
        os.rename(target, trash)
        _fsync_dir(target.parent)
        shutil.rmtree(trash, ignore_errors=True)

    def _discard_version(self, app_scope: str, version: str) -> None:
        self._discard(self.version_dir(app_scope, version))
        try:
            (self.root / app_scope).rmdir()
        except OSError:
            pass  # another version is there (or the folder is gone)

    def _sweep(self, keep: frozenset[tuple[str, str]]) -> list[str]:
        removed: list[str] = []
        if not self.root.is_dir():
            return removed
        for entry in sorted(self.root.iterdir()):
            if entry.name.startswith(_TMP):
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry.name)
                continue
            if not entry.is_dir():
                continue
            for version in sorted(entry.iterdir()):
                if (entry.name, version.name) not in keep:
                    self._discard(version)
                    removed.append(f"{entry.name}/{version.name}")
            if not any(entry.iterdir()):
                entry.rmdir()
        return removed


def _payload_files(payload: bytes) -> dict[str, bytes]:
    """The payload's `app/…` entries (path relative to `app/`), bounded like the install."""
    files: dict[str, bytes] = {}
    with zipfile.ZipFile(io.BytesIO(payload)) as archive:
        infos = archive.infolist()
        if len(infos) > MAX_BUNDLE_FILES:
            raise ValueError("too many files")
        for info in infos:
            if info.is_dir() or not info.filename.startswith("app/"):
                continue
            with archive.open(info) as entry:
                files[info.filename.removeprefix("app/")] = entry.read(MAX_BUNDLE_FILE_BYTES + 1)
    return files


def _files_under(root: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _IGNORED]
        for name in filenames:
            path = Path(dirpath) / name
            if path.is_symlink():
                raise ValueError("a link in the cache")
            found[path.relative_to(root).as_posix()] = path
    return found


def _write_file(path: Path, body: bytes) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        view = memoryview(body)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    """Each directory under `root` (the files were fsynced as they were written)."""
    for dirpath, _, _ in os.walk(root, topdown=False):
        _fsync_dir(Path(dirpath))
