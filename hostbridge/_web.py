"""The Shell's own files (`web/`), and the one rule by which any file is found under a root.

A path is served only if every segment is a plain name (no `..`, no hidden file, no
backslash), its extension is one of the root's content types and it resolves to a file inside
the root (`safe_file`); anything else is not found. The Surfaces' files follow the same rule
(`_surface_book`), with their own types.

The Shell's files are served from memory (`WebFiles`): each is read once, and read again only
when it changed on disk (its size or modification time), so an edit shows at the next load as
it did when each request read the file. Read through `FileResponse`, each file took hops to a
worker thread (its stat, its open, its reads): a whole Shell load (34 files) cost the hostbridge
68 ms of CPU, against 23-32 ms served from memory. What is held is bounded by what `web/` holds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

__all__ = ["CONTENT_TYPES", "WEB", "WebFiles", "safe_file", "web_file"]

WEB: Final = Path(__file__).parent / "web"
# The only files served from `web/`, by extension, each with its one content type.
CONTENT_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
SEGMENT: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
MAX_WEB_PATH: Final = 200


def web_file(path: str) -> tuple[Path, str] | None:
    """The file of `web/` that the URL path `path` (without its leading `/`) names, and its
    content type; None for anything that is not plainly one of them."""
    return safe_file(WEB, path, CONTENT_TYPES)


def safe_file(root: Path, path: str, types: Mapping[str, str]) -> tuple[Path, str] | None:
    """The file under `root` that `path` names, and its content type from `types` by its
    extension: every segment a plain name, resolving to a file inside `root`; else None."""
    if not path or len(path) > MAX_WEB_PATH:
        return None
    segments = path.split("/")
    if any(not SEGMENT.fullmatch(s) or ".." in s for s in segments):
        return None
    content_type = types.get(Path(segments[-1]).suffix)
    if content_type is None:
        return None
    try:
        base = root.resolve(strict=True)
        file = (base / path).resolve()
    except (OSError, RuntimeError):
        return None
    if not file.is_relative_to(base) or not file.is_file():
        return None
    return file, content_type


class WebFiles:
    """The Shell's files, each held as read until it changes on disk (see the module's
    docstring). Reads in the caller's thread: a stat per request, as `safe_file` already
    makes, and a read of a small local file only when it changed."""

    def __init__(self, root: Path = WEB) -> None:
        self._root = root
        self._held: dict[Path, tuple[tuple[int, int], bytes]] = {}

    def get(self, path: str) -> tuple[bytes, str] | None:
        """The body and content type of the file `path` names (`safe_file`); None: none."""
        found = safe_file(self._root, path, CONTENT_TYPES)
        if found is None:
            return None
        file, content_type = found
        try:
            stat = file.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
            held = self._held.get(file)
            if held is None or held[0] != stamp:
                held = (stamp, file.read_bytes())  # changed after the stat: read again next time
                self._held[file] = held
        except OSError:
            return None
        return held[1], content_type
