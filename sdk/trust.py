"""The runtime's trusted bundle keys: `<data_dir>/trusted-keys.json` (seed 000 §9).

    {"keys": [{"key_id": "ed25519:<16 hex>", "public_key": <base64, 32 bytes>,
               "added_at": <ISO 8601 UTC>}]}

The file is the whole truth: a missing file trusts no key, and a file that is not exactly this
shape (bad JSON, a key whose id is not its own, a key of the wrong length, a duplicate) trusts
nothing either — `keys()` raises `LineUpError(invalid_arguments)` rather than guess which
entries are sound. Focus reads it at every install, so a key added while the runtime runs counts
at once. Writes are atomic (a temporary file in the same folder, fsync, rename, fsync of the
folder), mode 0600, and serialised by a lock on the folder. No trio, no database.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import fcntl
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from lineup._paths import default_data_dir
from lineup.actors.kernel.errors import ErrorCode, LineUpError

from .bundle import PublicKey, key_id_of

__all__ = ["TRUSTED_KEYS_FILE", "TrustStore", "TrustedKey", "default_data_dir"]

TRUSTED_KEYS_FILE: Final = "trusted-keys.json"
MAX_TRUST_FILE_BYTES: Final = 1024 * 1024


_FILE_MODE: Final = 0o600
_DIR_MODE: Final = 0o700


@dataclass(frozen=True)
class TrustedKey:
    key_id: str
    public_key: bytes
    added_at: str  # ISO 8601, UTC


class TrustStore:
    """The trusted keys of the runtime whose data dir is `data_dir`."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.path = data_dir / TRUSTED_KEYS_FILE

    def keys(self) -> dict[str, bytes]:
        """key_id → 32-byte public key. Raises `LineUpError(invalid_arguments)` for a corrupt
        file; never trusts part of one."""
        return {key.key_id: key.public_key for key in self.list()}

    def list(self) -> list[TrustedKey]:
        """Every trusted key, in the order added. Raises as `keys()`."""
        try:
            with open(self.path, "rb") as file:
                data = file.read(MAX_TRUST_FILE_BYTES + 1)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise _corrupt(f"cannot read it: {exc.strerror}") from None
        if len(data) > MAX_TRUST_FILE_BYTES:
            raise _corrupt("too large")
        return _parse(data)

    def add(self, key: PublicKey) -> bool:
        """Trust `key`; False when it already was (the file is then left as it is). Raises as
        `keys()` when the present file is corrupt (it is never overwritten then), or
        `OSError` when the folder is not writable."""
        self.data_dir.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
        # Two `lineup app trust` at once: each reads and rewrites the whole file, so the second
        # waits for the first (a lock on the folder, held only here) and keeps its key.
        dir_fd = os.open(self.data_dir, os.O_RDONLY)
        try:
            fcntl.flock(dir_fd, fcntl.LOCK_EX)
            present = self.list()
            if any(entry.key_id == key.key_id for entry in present):
                return False
            added_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
            entries = [*present, TrustedKey(key.key_id, key.key, added_at)]
            self._write(_dumps(entries), dir_fd)
            return True
        finally:
            os.close(dir_fd)  # and the lock with it

    def _write(self, text: str, dir_fd: int) -> None:
        tmp = self.data_dir / f".{TRUSTED_KEYS_FILE}.{secrets.token_hex(8)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _FILE_MODE)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(text.encode())
                file.flush()
                os.fsync(file.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        os.fsync(dir_fd)


def _parse(data: bytes) -> list[TrustedKey]:
    try:
        raw: Any = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise _corrupt("not JSON") from None
    if not isinstance(raw, dict) or set(raw) != {"keys"} or not isinstance(raw["keys"], list):
        raise _corrupt('not {"keys": [...]}')
    entries: list[TrustedKey] = []
    seen: set[str] = set()
    for item in raw["keys"]:
        if (
            not isinstance(item, dict)
            or set(item) != {"key_id", "public_key", "added_at"}
            or not all(isinstance(value, str) for value in item.values())
        ):
            raise _corrupt("an entry is malformed")
        try:
            public = base64.b64decode(item["public_key"], validate=True)
        except (ValueError, binascii.Error):
            raise _corrupt("a public key is not base64") from None
        if len(public) != 32 or key_id_of(public) != item["key_id"] or item["key_id"] in seen:
            raise _corrupt("a key is not what its key_id says, or listed twice")
        seen.add(item["key_id"])
        entries.append(TrustedKey(item["key_id"], public, item["added_at"]))
    return entries


def _dumps(entries: list[TrustedKey]) -> str:
    body = {
        "keys": [
            {
                "key_id": entry.key_id,
                "public_key": base64.b64encode(entry.public_key).decode(),
                "added_at": entry.added_at,
            }
            for entry in entries
        ]
    }
    return json.dumps(body, indent=2, sort_keys=True) + "\n"


def _corrupt(why: str) -> LineUpError:
    return LineUpError(ErrorCode.INVALID_ARGUMENTS, f"{TRUSTED_KEYS_FILE} is corrupt: {why}")
