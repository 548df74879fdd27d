"""Per-MiniApp quotas the kernel cannot hold alone: bytes in its data dir, and its threads.

Theory of operation
-------------------
Disk. RLIMIT_FSIZE (set in the child, `_sandbox`) bounds any one file: a write past it fails
EFBIG. Many files could still fill the disk, so the supervisor measures each running MiniApp's
data directory (`measure`): on start and then every `CHECK_INTERVAL` seconds, in a worker
thread, walking at most `disk_entries + 1` entries (a directory of a million empty files costs
the walk no more than that). A directory at or past `disk_mb`, or with more entries than
`disk_entries`, stops the app for good, with a `sandbox.quota_exceeded` audit row whose code
names the quota (`disk`). A file that reached RLIMIT_FSIZE is itself `disk_mb` bytes: the app
got EFBIG, and the measure records it.

Threads. RLIMIT_NPROC counts every process of the user, so it cannot bound one app. Where the
kernel offers a pids cgroup we may write (cgroup v1's `pids` hierarchy, or a cgroup v2 whose
`cgroup.subtree_control` delegates `pids` to us), the supervisor makes one per MiniApp,
`lineup-<supervisor pid>/<app_scope>`, with `pids.max` = the policy's `threads`, and moves the
child there while it applies its sandbox (a move waits for an RCU grace period, 7-15 ms on
cgroup v1, so the supervisor starts that wait as it asks for the fork: `prime`); the child waits
for the supervisor's word before it runs any app code. A thread
past the limit fails to start (EAGAIN); each time the cgroup's `max` event count rose since
the last check, one `sandbox.quota_exceeded` row (code `threads`) is written. Where there is
no such cgroup, `lineup status` says so.
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lineup.actors.kernel.errors import ErrorCode

__all__ = [
    "CHECK_INTERVAL",
    "QUOTA_CODE",
    "QUOTA_EXCEEDED",
    "STATUS_FSIZE",
    "STATUS_PIDS",
    "PidsCgroups",
    "Usage",
    "find_pids_cgroup",
    "measure",
    "over_quota",
]

log = logging.getLogger("lineup.sandbox")

QUOTA_EXCEEDED: Final = "sandbox.quota_exceeded"  # the audit event; its code names the quota
QUOTA_CODE: Final = (
    ErrorCode.QUOTA_EXCEEDED
)  # why focus fails the instances of an app stopped for it
CHECK_INTERVAL: Final = 2.0  # seconds between two measures of one app's data dir
# `lineup status`'s keys (in StatusReply.info) for the quota layers in force.
STATUS_FSIZE: Final = "sandbox_fsize"
STATUS_PIDS: Final = "sandbox_pids_cgroup"


@dataclass(frozen=True)
class Usage:
    bytes: int  # the larger of each file's size and the blocks it holds, summed
    entries: int  # files, directories and the rest, not counting the directory itself
    complete: bool  # False: the walk stopped at its entry budget


def measure(home: Path, max_entries: int) -> Usage:
    """What `home` holds, walking at most `max_entries + 1` entries. Never follows a symlink;
    never raises (an entry that vanishes mid-walk is skipped)."""
    total = entries = 0
    pending = [home]
    while pending:
        try:
            scan = os.scandir(pending.pop())
        except OSError:
            continue
        with scan:
            for entry in scan:
                entries += 1
                if entries > max_entries:
                    return Usage(total, entries, complete=False)
                try:
                    stat = entry.stat(follow_symlinks=False)
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(Path(entry.path))
                except OSError:
                    continue
                total += max(stat.st_size, stat.st_blocks * 512)
    return Usage(total, entries, complete=True)


def over_quota(usage: Usage, *, max_bytes: int, max_entries: int) -> bool:
    return not usage.complete or usage.bytes >= max_bytes or usage.entries > max_entries


# ---------------------------------------------------------------------- the pids cgroup


def _mounts() -> list[tuple[str, str, str]]:
    """(mount point, file system type, super options) of each cgroup mount."""
    found = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                found.append((fields[4], tail[0], tail[2]))
    return found


def find_pids_cgroup() -> tuple[Path, str] | None:
    """The cgroup directory of this process in which we may make pids cgroups, and which
    version it is ("v1" or "v2"); None when the kernel offers none we may write."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    own = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            own[controller] = path
    for mount, kind, options in _mounts():
        if kind == "cgroup" and "pids" in options.split(",") and "pids" in own:
            where = Path(mount + own["pids"])
            if os.access(where / "cgroup.procs", os.W_OK) and os.access(where, os.W_OK):
                return where, "v1"
    for mount, kind, _ in _mounts():
        if kind == "cgroup2" and "" in own:
            where = Path(mount + own[""])
            try:
                delegated = "pids" in (where / "cgroup.subtree_control").read_text().split()
            except OSError:
                continue
            if delegated and os.access(where, os.W_OK):
                return where, "v2"
    return None


class PidsCgroups:
    """The pids cgroups of one supervisor's MiniApps, beneath `lineup-<pid>` in `parent`."""

    def __init__(self, parent: Path, version: str) -> None:
        self.version = version
        self.base = parent / f"lineup-{os.getpid()}"
        self._apps: dict[str, Path] = {}
        self._events: dict[str, int] = {}

    def sweep(self) -> None:
        """Remove what a supervisor that was killed left (`lineup-<pid>` of a dead pid, once
        its processes are gone too). Never raises."""
        with contextlib.suppress(OSError):
            for stale in self.base.parent.glob("lineup-*"):
                pid = stale.name.removeprefix("lineup-")
                if not pid.isdigit() or int(pid) == os.getpid() or Path(f"/proc/{pid}").exists():
                    continue
                for app in stale.iterdir():
                    if app.is_dir():
                        with contextlib.suppress(OSError):
                            app.rmdir()
                with contextlib.suppress(OSError):
                    stale.rmdir()

    def for_app(self, scope: str, threads: int) -> Path:
        """The cgroup of `scope`, made if need be, with `pids.max` = `threads`. Raises OSError."""
        path = self._apps.get(scope)
        if path is None:
            self.base.mkdir(mode=0o755, exist_ok=True)
            path = self.base / scope
            path.mkdir(mode=0o755, exist_ok=True)
            self._apps[scope] = path
        (path / "pids.max").write_text(str(threads))
        return path

    def prime(self) -> None:
        """Begin, now, the wait a `move` has: write this process's own pid into the cgroup it
        is in (`parent`), a move that changes nothing but takes the kernel's lock the same
        way. The first taking of that lock waits for an RCU grace period; a move begun while
        this one waits shares its grace period, and one begun within a grace period or so
        after it takes the lock at once. So the supervisor calls it as it asks for a fork, and
        the child's move, which must wait for the child's pid, is done that much sooner.
        Blocking (run it in a worker thread); never raises."""
        with contextlib.suppress(OSError):
            fd = os.open(self.base.parent / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
            try:
                os.write(fd, str(os.getpid()).encode())
            finally:
                os.close(fd)

    def move(self, pid: int, cgroup: Path) -> bool:
        """Move process `pid` (all its threads) into `cgroup`. Blocking: it waits for an RCU
        grace period, so run it in a worker thread. False if it failed (the process is gone)."""
        try:
            fd = os.open(cgroup / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            os.write(fd, str(pid).encode())
        except OSError:
            return False
        finally:
            os.close(fd)
        return True

    def limit_hits(self, scope: str) -> int:
        """How many more times `scope` hit its limit since the last call (0 if unknown)."""
        path = self._apps.get(scope)
        if path is None:
            return 0
        try:
            fields = dict(
                line.split(maxsplit=1) for line in (path / "pids.events").read_text().splitlines()
            )
            count = int(fields.get("max", "0"))
        except (OSError, ValueError):
            return 0
        hits = count - self._events.get(scope, 0)
        self._events[scope] = count
        return max(hits, 0)

    def close(self) -> None:
        """Remove every cgroup made (once their processes are gone). Never raises."""
        for path in self._apps.values():
            with contextlib.suppress(OSError):
                path.rmdir()
        with contextlib.suppress(OSError):
            self.base.rmdir()
        self._apps.clear()
