"""The local catalog folder (`lineup run --catalog DIR`): the bundles the App Registry offers.

Theory of operation
-------------------
`DIR/*.lineup` are the bundles offered; `DIR/*.pub` are the catalog's signing keys, in the
format `lineup app keygen` writes. The keys are trusted only when focus is told so
(`trusted`: the runtime runs the embedded default, where `make run` signs the catalog with a
development key); then they count beside `<data dir>/trusted-keys.json`, and are never written
into it. Otherwise `keys()` is empty and the catalog's bundles are refused `unknown_key`, unless
the user trusted their key with `lineup app trust`.

Every read is bounded and made off the trio thread (each public method here blocks: call it in
`trio.to_thread.run_sync`): at most `MAX_SCANNED` names of the folder are looked at, at most
`MAX_ENTRIES` bundles and `MAX_KEYS` keys kept; each file is opened relative to the folder's
own descriptor with `O_NOFOLLOW` and must be a regular file (checked on the open descriptor)
no larger than its cap. Anything else is passed over, as if absent.

Listing is cheap: a bundle is read and verified only when it is new or changed (its
name, size, mtime_ns, ctime_ns and inode), or when the trusted keys or the revocations
changed since it was verified. An install never uses that memory: it reads the file again and
verifies those bytes (`read`).
"""

from __future__ import annotations

import logging
import os
import re
import stat
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.sdk.bundle import BundleRefused, PublicKey, read_header
from lineup.sdk.capabilities import CATALOG_FILE_PATTERN

from .messages import MAX_BUNDLE_BYTES

__all__ = [
    "BUNDLE_SUFFIX",
    "KEY_SUFFIX",
    "MAX_ENTRIES",
    "MAX_KEYS",
    "Catalog",
    "Checked",
    "basis_of",
    "valid_name",
]

log = logging.getLogger("lineup.focus.catalog")

BUNDLE_SUFFIX: Final = ".lineup"
KEY_SUFFIX: Final = ".pub"
MAX_SCANNED: Final = 1000  # names of the folder looked at, whatever they are
MAX_ENTRIES: Final = 64  # bundles offered (the first by name)
MAX_KEYS: Final = 16
MAX_KEY_BYTES: Final = 4096  # a `.pub` is ~100 bytes
_NAME: Final = re.compile(CATALOG_FILE_PATTERN)
_KEY_NAME: Final = re.compile(r"^[A-Za-z0-9_+-]+(\.[A-Za-z0-9_+-]+)*\.pub$")
_OPEN_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

# What a verification is given and answers: the bytes → None (it would install) or a code.
Verify = Callable[[bytes], ErrorCode | None]


def valid_name(name: str) -> bool:
    """`name` is a plain catalog bundle name: no folder, no `..`, ends `.lineup`."""
    return len(name) <= 200 and _NAME.match(name) is not None


@dataclass(frozen=True)
class Checked:
    """One bundle as the catalog found it: its header's facts (None when unreadable) and the
    verification's refusal code, or None."""

    file: str
    app_scope: str | None
    version: str | None
    key_id: str | None
    size: int
    code: str | None


_Stamp = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode


class Catalog:
    def __init__(self, folder: Path, *, trusted: bool) -> None:
        self.folder = folder
        self.trusted = trusted
        self._lock = threading.Lock()  # two lists at once (two worker threads)
        self._seen: dict[str, tuple[_Stamp, object, Checked]] = {}
        self._keys: dict[str, tuple[_Stamp, PublicKey | None]] = {}

    # ------------------------------------------------------------------ blocking

    def keys(self) -> dict[str, bytes]:
        """The catalog's keys, key_id → public key: empty unless the catalog is trusted. A
        `.pub` that is not a lineup public key is passed over."""
        if not self.trusted:
            return {}
        with self._lock:
            found = self._scan(_KEY_NAME, MAX_KEYS)
            keys: dict[str, bytes] = {}
            fresh: dict[str, tuple[_Stamp, PublicKey | None]] = {}
            for name, stamp in found.items():
                known = self._keys.get(name)
                key = known[1] if known is not None and known[0] == stamp else self._key(name)
                fresh[name] = (stamp, key)
                if key is not None:
                    keys[key.key_id] = key.key
            self._keys = fresh
            return keys

    def entries(self, verify: Verify, basis: object) -> list[Checked]:
        """Every bundle offered, by name, each verified with `verify` unless it was already,
        unchanged, against the same `basis` (the trusted keys and revocations it was given)."""
        with self._lock:
            found = self._scan(_NAME, MAX_ENTRIES)
            fresh: dict[str, tuple[_Stamp, object, Checked]] = {}
            for name, stamp in found.items():
                known = self._seen.get(name)
                if known is not None and known[0] == stamp and known[1] == basis:
                    fresh[name] = known
                    continue
                checked = self._check(name, stamp, verify)
                if checked is not None:
                    fresh[name] = (stamp, basis, checked)
            self._seen = fresh
            return [entry for _, _, entry in fresh.values()]

    def read(self, name: str) -> bytes:
        """The bytes of bundle `name`, read whole and bounded. Raises
        `catalog_entry_not_found` (not a plain catalog name, no such regular file) or
        `bundle_malformed` (larger than a bundle may be)."""
        if not valid_name(name):
            raise LineUpError(ErrorCode.CATALOG_ENTRY_NOT_FOUND, "not a catalog file name")
        data = self._read(name, MAX_BUNDLE_BYTES)
        if data is None:
            raise LineUpError(ErrorCode.CATALOG_ENTRY_NOT_FOUND, "no such catalog entry")
        return data

    # ------------------------------------------------------------------ helpers

    def _scan(self, pattern: re.Pattern[str], cap: int) -> dict[str, _Stamp]:
        """The regular files of the folder whose names match, name → stamp, sorted, at most
        `cap` (the first by name among the first `MAX_SCANNED` names)."""
        names: list[tuple[str, _Stamp]] = []
        try:
            with os.scandir(self.folder) as listing:
                for n, entry in enumerate(listing):
                    if n >= MAX_SCANNED:
                        log.info("catalog.truncated scanned=%d", n)
                        break
                    if pattern.match(entry.name) is None or len(entry.name) > 200:
                        continue
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISREG(st.st_mode):
                        names.append((entry.name, _stamp(st)))
        except OSError:
            log.info("catalog.unreadable")
            return {}
        return dict(sorted(names)[:cap])

    def _check(self, name: str, stamp: _Stamp, verify: Verify) -> Checked | None:
        try:
            data = self._read(name, MAX_BUNDLE_BYTES)
        except BundleRefused as exc:
            return Checked(name, None, None, None, stamp[0], exc.code.value)
        if data is None:
            return None  # gone meanwhile
        try:
            signed, _ = read_header(data)
        except BundleRefused as exc:
            return Checked(name, None, None, None, len(data), exc.code.value)
        code = verify(data)
        return Checked(
            name,
            signed.app_scope,
            signed.version,
            signed.key_id,
            len(data),
            code.value if code else None,
        )

    def _key(self, name: str) -> PublicKey | None:
        try:
            text = self._read(name, MAX_KEY_BYTES)
            return PublicKey.loads(text) if text is not None else None
        except BundleRefused:
            log.info("catalog.key_invalid")
            return None

    def _read(self, name: str, cap: int) -> bytes | None:
        """A regular file of the folder, whole, or None (absent, a link, not a regular
        file). Raises `BundleRefused(bundle_malformed)` past `cap`."""
        try:
            dir_fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            try:
                fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
            except OSError:  # absent, or a symbolic link (ELOOP)
                return None
            with os.fdopen(fd, "rb") as file:
                st = os.fstat(file.fileno())
                if not stat.S_ISREG(st.st_mode):
                    return None
                if st.st_size > cap:
                    raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "larger than a bundle may be")
                data = file.read(cap + 1)
        except OSError:
            return None
        finally:
            os.close(dir_fd)
        if len(data) > cap:
            raise BundleRefused(ErrorCode.BUNDLE_MALFORMED, "larger than a bundle may be")
        return data


def _stamp(st: os.stat_result) -> _Stamp:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def basis_of(trusted: Mapping[str, bytes], revoked: set[tuple[str, str]]) -> object:
    """What a verification depends on besides the bytes (the host's version is fixed)."""
    return (frozenset(trusted.items()), frozenset(revoked))
