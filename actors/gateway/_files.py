"""The artifacts' content on disk: `<data_dir>/artifacts/<artifact_id>`, one file each.

Blocking functions, run on a worker thread. A file is written whole or not at all: the bytes go
to a temporary file beside it, are fsynced, renamed over the final name and the directory is
fsynced, so a crash leaves either the complete file or a temporary one, never half a file under
an artifact's name. The gateway writes the file BEFORE the store row; a crash between the two
leaves a file without a row, which the next create of that id overwrites (the same id is the
same content's request). Temporary files are swept at start.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Final

from lineup.actors.kernel.errors import ErrorCode, LineUpError

__all__ = ["ARTIFACTS_DIR", "read_content", "remove_content", "sweep_temporary", "write_content"]

ARTIFACTS_DIR: Final = "artifacts"
_TMP_SUFFIX: Final = ".tmp"


def _path(root: Path, artifact_id: str) -> Path:
    # The id is ours (`art_` + hex), never the app's text: still, refuse anything but a name.
    if not artifact_id or "/" in artifact_id or artifact_id.startswith("."):
        raise LineUpError(ErrorCode.ARTIFACT_NOT_FOUND, "not an artifact id")
    return root / artifact_id


def _fsync_dir(root: Path) -> None:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sweep_temporary(root: Path) -> int:
    """Make the directory (0700) and remove what a crash mid-write left; returns how many."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    removed = 0
    for entry in root.iterdir():
        if entry.name.startswith(".") and entry.name.endswith(_TMP_SUFFIX):
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
                removed += 1
    return removed


def write_content(root: Path, artifact_id: str, data: bytes) -> None:
    """Write `data` as the artifact's content, atomically and durably."""
    final = _path(root, artifact_id)
    tmp = root / f".{artifact_id}{_TMP_SUFFIX}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, final)
    _fsync_dir(root)


def remove_content(root: Path, artifact_id: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        _path(root, artifact_id).unlink()


def read_content(root: Path, artifact_id: str, limit: int) -> bytes | None:
    """The artifact's content (at most `limit` + 1 bytes are read), or None if there is none."""
    try:
        fd = os.open(_path(root, artifact_id), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
