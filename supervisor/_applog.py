"""Where a MiniApp's stdout and stderr go: its own log file, never the runtime's terminal.

Theory of operation
-------------------
For each MiniApp process the supervisor makes two pipes; the zygote turns their write ends into
the child's fd 1 and 2 right after the fork, before the sandbox or any app code runs (the sandbox
keeps fds 0 to 3 open and closes the rest). The supervisor reads the other ends (`capture`) and
appends each line to `<data dir>/logs/<app_scope>.log`, owner-only:

    2025-05-01T12:00:00.123Z out hello \\x1b[31mworld
    2025-05-01T12:00:00.124Z err Traceback (most recent call last):

Every byte an app writes is untrusted. Control characters (C0, DEL, C1), Unicode format and
line-separator characters (bidi overrides, zero-width joiners, U+2028) and invalid UTF-8 are
escaped, so the file is safe to print in a terminal, and a backslash is doubled, so the escaping
is unambiguous (`\\xNN` below 0x80 is a control character, at or above it a byte that was not
UTF-8; `\\uNNNN` a code point). A line longer than `MAX_LINE` bytes is cut (` [cut]`) and the rest
of it dropped, up to the next newline. When the next lines would take the file past `MAX_FILE`,
it is rotated once (to `.log.1`): one app holds at most twice that on disk. Reading is paced at
`READ_RATE` bytes a second: an app that floods its output blocks on its full pipe, and the
supervisor, the root of the tree, is never kept busy by it.

The splitting and escaping are pure (`LineSplitter`, `escape`, `format_line`), tested without I/O.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import time
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Final, Literal

import trio

from lineup.actors.kernel import ErrorCode, LineUpError

__all__ = [
    "MAX_FILE",
    "MAX_LINE",
    "READ_RATE",
    "AppLog",
    "LineSplitter",
    "app_log_path",
    "capture",
    "escape",
    "format_line",
    "log_files",
    "open_logs_dir",
]

log = logging.getLogger("lineup.supervisor")

Stream = Literal["out", "err", "view"]  # `view`: its Surface's log lines (AppViewLogEvent)

LOGS_DIR: Final = "logs"
MAX_LINE: Final = 2048  # bytes of one line as the app wrote it; the rest of the line is dropped
MAX_FILE: Final = 1 << 20  # bytes of one log file before it is rotated (once)
READ_RATE: Final = 1 << 20  # bytes a second read from one app's stream, after a burst of:
READ_BURST: Final = 256 << 10
READ_CHUNK: Final = 64 << 10
CUT_MARK: Final = " [cut]"

_SCOPE: Final = re.compile(r"[a-z][a-z0-9-]{0,62}")  # the manifest's rule for an app_scope
_ASCII_UNSAFE: Final = re.compile(r"[\\\x00-\x1f\x7f]")
_UNSAFE_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def app_log_path(data_dir: str | Path, app_scope: str) -> Path:
    """`<data dir>/logs/<app_scope>.log`. Raises LineUpError(invalid_arguments) for a scope
    that is not an app_scope (so a name never becomes a path outside the logs directory)."""
    if not _SCOPE.fullmatch(app_scope):
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "not an app_scope")
    return Path(data_dir) / LOGS_DIR / f"{app_scope}.log"


def log_files(path: Path) -> tuple[Path, Path]:
    """The rotated part, then the current one: the order to read them in."""
    return path.with_name(path.name + ".1"), path


# ---------------------------------------------------------------------- pure: lines and escapes


class LineSplitter:
    """Bytes in, whole lines out (without their newline), each at most `limit` bytes."""

    def __init__(self, limit: int = MAX_LINE) -> None:
        self._limit = limit
        self._partial = bytearray()
        self._dropping = False  # past the limit: the rest of this line is dropped

    def feed(self, data: bytes) -> list[tuple[bytes, bool]]:
        """The lines `data` completes, each with whether it was cut."""
        lines: list[tuple[bytes, bool]] = []
        start = 0
        while start <= len(data):
            newline = data.find(b"\n", start)
            end = len(data) if newline < 0 else newline
            if self._dropping:
                self._dropping = newline < 0
            elif len(self._partial) + end - start > self._limit:
                self._partial += data[start : start + self._limit - len(self._partial)]
                lines.append((bytes(self._partial), True))
                self._partial.clear()
                self._dropping = newline < 0
            else:
                self._partial += data[start:end]
                if newline >= 0:
                    lines.append((bytes(self._partial), False))
                    self._partial.clear()
            if newline < 0:
                break
            start = newline + 1
        return lines

    def finish(self) -> list[tuple[bytes, bool]]:
        """The last line, if the stream ended without a newline."""
        if not self._partial:
            return []
        line = (bytes(self._partial), False)
        self._partial.clear()
        return [line]


def _escape_char(char: str) -> str:
    code = ord(char)
    if char == "\\":
        return "\\\\"
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def escape(raw: bytes) -> str:
    """`raw` as printable text: see the module's docstring for what is escaped, and how."""
    text = raw.decode("utf-8", "surrogateescape")
    if text.isascii():  # the usual case, one regex pass
        return _ASCII_UNSAFE.sub(lambda match: _escape_char(match.group()), text)
    return "".join(
        _escape_char(char)
        if char == "\\" or unicodedata.category(char) in _UNSAFE_CATEGORIES
        else char
        for char in text
    )


def _timestamp(now: float) -> str:
    seconds = int(now)
    millis = int((now - seconds) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


def format_line(now: float, stream: Stream, raw: bytes, cut: bool = False) -> str:
    """One line of the log file, with its newline."""
    return f"{_timestamp(now)} {stream} {escape(raw)}{CUT_MARK if cut else ''}\n"


# ---------------------------------------------------------------------- I/O: the file


class AppLog:
    """One app's log file, appended to by both of its streams, across its restarts."""

    def __init__(self, path: Path, *, max_file: int = MAX_FILE) -> None:
        self.path = path
        self._max_file = max_file
        self._failing = False

    def write(self, lines: Sequence[str]) -> None:
        """Append `lines`, rotating first whenever the next would take the file past its cap.
        Synchronous and small (one chunk of one app). Never raises: a file that cannot be
        written (disk full, directory removed) costs the app its lines, not the supervisor."""
        if not lines:
            return
        try:
            self._write(lines)
        except OSError as exc:
            if not self._failing:  # once per failing spell, not once per chunk
                log.warning(
                    "supervisor.app_log_failed errno=%s", errno.errorcode.get(exc.errno or 0)
                )
            self._failing = True
        else:
            self._failing = False

    def _write(self, lines: Sequence[str]) -> None:
        fd = self._open()
        try:
            size = os.fstat(fd).st_size
            pending: list[bytes] = []
            pending_size = 0
            for line in lines:
                data = line.encode("utf-8", "surrogateescape")
                if size + pending_size + len(data) > self._max_file and size + pending_size > 0:
                    _write_all(fd, b"".join(pending))
                    os.close(fd)
                    fd = -1
                    os.replace(self.path, log_files(self.path)[0])
                    fd = self._open()
                    size, pending, pending_size = 0, [], 0
                pending.append(data)
                pending_size += len(data)
            _write_all(fd, b"".join(pending))
        finally:
            if fd >= 0:
                os.close(fd)

    def _open(self) -> int:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        return os.open(self.path, flags, 0o600)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def open_logs_dir(data_dir: Path) -> Path:
    """Create `<data dir>/logs`, owner-only (whatever the umask). Returns it."""
    logs = data_dir / LOGS_DIR
    logs.mkdir(mode=0o700, parents=True, exist_ok=True)
    logs.chmod(0o700)
    return logs


# ---------------------------------------------------------------------- I/O: one stream


async def capture(
    read_fd: int,
    stream: Stream,
    applog: AppLog,
    *,
    rate: float = READ_RATE,
    burst: float = READ_BURST,
) -> None:
    """Read one stream of one app until it closes (the process, and anything it passed the
    pipe to, has exited), writing each line to `applog`. Owns and closes `read_fd`."""
    splitter = LineSplitter()
    budget = burst
    last = trio.current_time()
    pipe = trio.lowlevel.FdStream(read_fd)  # owns it from here, before any checkpoint
    async with pipe:
        while True:
            try:
                data = await pipe.receive_some(READ_CHUNK)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if not data:
                break
            now = time.time()
            applog.write([format_line(now, stream, raw, cut) for raw, cut in splitter.feed(data)])
            # Paced: the app's next writes wait in its pipe, and then in its own write().
            clock = trio.current_time()
            budget = min(burst, budget + (clock - last) * rate) - len(data)
            last = clock
            if budget < 0:
                await trio.sleep(-budget / rate)
            else:
                await trio.lowlevel.checkpoint()
        applog.write([format_line(time.time(), stream, raw, cut) for raw, cut in splitter.finish()])
