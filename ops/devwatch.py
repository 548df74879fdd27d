"""Reload on save for `lineup run --dev-app PATH`: the folder watcher, a child of the tree.

Theory of operation
-------------------
The watcher is a development tool beside the runtime, as the reference AppServer is: a child of
kind `dev` named `devwatch`, started with the tree when `lineup run` has development apps, whose
requests to focus the ACL reserves to it (`focus.dev_app.*`). So the supervisor, which focus
asks to start and stop processes, asks focus nothing (DESIGN §2: no request cycle).

The development apps are the registry entries the plan gives focus marked `dev`
(`supervisor._runtime.dev_app`); the plan gives the watcher each one's scope and folder. While
the tree runs, one task per folder polls it every POLL_INTERVAL: a walk that only stats (name,
inode, size, mtime of every file, no read), bounded to MAX_FILES entries and MAX_DEPTH levels,
leaving out what no save of the app's makes: `__pycache__` and other tool folders,
`manifest.json` itself (this watcher writes it), hidden files and editor temp and backup files
(`.x.swp`, `x~`, `#x#`, vim's `4913`). A change is acted on once the folder has been quiet for
QUIET seconds (one save often writes several files, or one file twice).

Then the manifest is regenerated in a subprocess, `python -m lineup.sdk.cli manifest PATH
--out <tmp>`: the developer's code is imported there, never in a runtime process, within
MANIFEST_TIMEOUT (then killed). A refusal (the code does not import, a tool is refused, the
app_scope changed, it timed out) prints one line in the terminal, `lineup: dev app PATH:
<reason> <where>`, and focus is told the same line for the Shell (`focus.dev_app.refused`);
nothing else changes, so the previous version keeps running. Otherwise `manifest.json` is
replaced atomically (a temporary file renamed over it) if its content changed, and focus is
asked to reload the app (`focus.dev_app.reload`, see `lineup.actors.focus._dev_reload`), which
restarts its process even when the manifest is the same (its code changed). What focus
answers is printed too.

A development app whose scope an installed app of this data dir holds is not loaded (focus
logs `focus.app_shadowed`: the verified bundle wins). When it starts, the watcher asks focus
for its registry (`focus.dev_app.list`) and prints one line for each such app, `lineup: dev app
PATH: SCOPE is not loaded: ...`, naming the command that frees the scope; it watches only the
others. Its lines go to the terminal as the supervisor's do (its stdout is the runtime's).

It stops with the tree, its subprocess killed with it (trio's `run_process`, cancelled).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import trio

import lineup
from lineup.actors.focus.messages import (
    DevAppListRequest,
    DevAppRefusedEvent,
    DevAppReloadReply,
    DevAppReloadRequest,
)
from lineup.actors.kernel import Bus, LineUpError
from lineup.actors.kernel.actor import Actor
from lineup.actors.kernel.identity import ActorKind
from lineup.sdk.protocol import RegistryListReply

__all__ = [
    "DevApp",
    "DevWatch",
    "DevWatchActor",
    "dev_apps_of",
    "refusal_line",
    "shadowed_line",
    "snapshot",
]

log = logging.getLogger("lineup.devwatch")

POLL_INTERVAL: Final = 0.5  # between two walks of a folder (stat only)
QUIET: Final = 0.3  # a change is acted on once the folder stayed the same this long
MANIFEST_TIMEOUT: Final = 30.0  # the manifest subprocess, then killed
RELOAD_TIMEOUT: Final = 60.0  # focus's reload: a store write, a stop and a start of the app
TELL_TIMEOUT: Final = 5.0
LIST_TIMEOUT: Final = 30.0  # focus's registry (it verifies the catalog's bundles to list them)
MAX_FILES: Final = 5000  # a walk stops counting here (a folder this big is not an app's)
MAX_DEPTH: Final = 16
MAX_STDERR: Final = 64 * 1024  # what is kept of the subprocess's stderr (its last line counts)
MANIFEST: Final = "manifest.json"
CLI_PREFIX: Final = "lineup app manifest: "
IGNORED_DIRS: Final = frozenset(
    {"__pycache__", "node_modules", ".git", ".hg", ".svn", ".mypy_cache", ".pytest_cache",
     ".ruff_cache", ".venv", "venv"}
)  # fmt: skip
IGNORED_SUFFIXES: Final = (".swp", ".swo", ".swx", ".tmp", ".pyc", ".pyo", "~")

Snapshot = dict[str, tuple[int, int, int]]  # relative path -> (inode, size, mtime_ns)
Reporter = Callable[[str], None]


@dataclass(frozen=True)
class DevApp:
    app_scope: str
    folder: Path

    @property
    def manifest(self) -> Path:
        return self.folder / MANIFEST


def dev_apps_of(config: Mapping[str, Any]) -> list[DevApp]:
    """The development apps the plan gives the watcher (`{"dev_apps": [{"app_scope",
    "folder"}]}`)."""
    return [
        DevApp(str(app["app_scope"]), Path(str(app["folder"])))
        for app in config.get("dev_apps", ())
        if isinstance(app, dict)
    ]


def refusal_line(folder: Path, reason: str, where: str = "") -> str:
    """The one line a refused reload prints in the terminal and shows in the Shell."""
    line = f"lineup: dev app {folder}: {reason}" + (f" {where}" if where else "")
    return line.replace("\n", " ")[:2000]


def shadowed_line(app: DevApp, version: str) -> str:
    """The line (after `lineup: `) for a development app an installed one shadows."""
    return (
        f"dev app {app.folder}: {app.app_scope} is not loaded: the installed {app.app_scope}"
        f" {version} of this data dir has its scope (lineup app remove {app.app_scope}, then"
        " restart, to run the dev app)"
    )


def _ignored(name: str, *, top: bool) -> bool:
    return (
        (top and name == MANIFEST)
        or name.startswith((".", "#"))
        or name.endswith(IGNORED_SUFFIXES)
        or name == "4913"  # vim's probe that it may write in the folder
    )


def snapshot(folder: Path) -> Snapshot:
    """What the folder's files are now, by stat only (see the module's docstring). A folder
    that cannot be read is an empty snapshot (gone for now, back later)."""
    seen: Snapshot = {}
    pending: list[tuple[Path, str, int]] = [(folder, "", 0)]
    while pending and len(seen) < MAX_FILES:
        path, prefix, depth = pending.pop()
        try:
            entries = list(os.scandir(path))
        except OSError:
            continue
        for entry in entries:
            if _ignored(entry.name, top=depth == 0):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            name = f"{prefix}{entry.name}"
            if is_dir:
                if entry.name not in IGNORED_DIRS and depth + 1 < MAX_DEPTH:
                    pending.append((Path(entry.path), f"{name}/", depth + 1))
                continue
            seen[name] = (info.st_ino, info.st_size, info.st_mtime_ns)
            if len(seen) >= MAX_FILES:
                break
    return seen


class _Refused(Exception):
    def __init__(self, reason: str, where: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.where = where


class DevWatch:
    """The watcher of the tree's development apps (see the module's docstring). `report`
    prints a line in the terminal (the CLI puts `lineup: ` before it)."""

    def __init__(self, bus: Bus, apps: Iterable[DevApp], report: Reporter) -> None:
        self.bus = bus
        self.apps = tuple(apps)
        self._report = report
        # The baseline is taken as the watcher starts, once the tree is ready: a save from then
        # on is a change.
        self._seen = {app: snapshot(app.folder) for app in self.apps}

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            task_status.started()
            shadowed = await self._shadowed()
            for app in self.apps:
                if app.app_scope in shadowed:
                    self._report(shadowed_line(app, shadowed[app.app_scope]))
                    continue
                await nursery.start(self._watch, app)

    async def _shadowed(self) -> dict[str, str]:
        """The development apps an installed app shadows, with its version (none if focus
        cannot say: then every app is watched, and a reload of a shadowed one is refused)."""
        try:
            reply = await self.bus.request(
                "focus", DevAppListRequest(), expect=RegistryListReply, timeout=LIST_TIMEOUT
            )
        except LineUpError as exc:
            log.info("devwatch.unchecked code=%s", exc.code.value)
            return {}
        scopes = {app.app_scope for app in self.apps}
        return {
            app.app_scope: app.version
            for app in reply.apps
            if app.app_scope in scopes and app.source == "installed"
        }

    async def _watch(self, app: DevApp, *, task_status: trio.TaskStatus[None]) -> None:
        seen = self._seen[app]
        task_status.started()
        while True:
            await trio.sleep(POLL_INTERVAL)
            now = await trio.to_thread.run_sync(snapshot, app.folder)
            if now == seen:
                continue
            while True:  # until it stays quiet: one save may write several times
                await trio.sleep(QUIET)
                later = await trio.to_thread.run_sync(snapshot, app.folder)
                if later == now:
                    break
                now = later
            seen = now
            await self.reload(app)

    async def reload(self, app: DevApp) -> None:
        """Regenerate the app's manifest, then have focus reload it; a refusal is printed and
        shown in the Shell, and changes nothing."""
        try:
            text = await self._generate(app)
            _write_if_changed(app.manifest, text)
        except _Refused as exc:
            await self._refused(app, exc.reason, exc.where)
            return
        try:
            reply = await self.bus.request(
                "focus",
                DevAppReloadRequest(app_scope=app.app_scope),
                expect=DevAppReloadReply,
                timeout=RELOAD_TIMEOUT,
            )
        except LineUpError as exc:  # focus refused it, having changed nothing
            await self._refused(app, exc.code.value, exc.message)
            return
        revision = f", inventory revision {reply.revision}" if reply.tools_changed else ""
        self._report(f"dev app {app.folder}: {app.app_scope} reloaded{revision}")

    async def _refused(self, app: DevApp, reason: str, where: str) -> None:
        line = refusal_line(app.folder, reason, where)
        self._report(line.removeprefix("lineup: "))  # the reporter puts it back
        log.info("devwatch.refused app=%s reason=%s", app.app_scope, reason)
        code = await self.bus.tell(
            "focus", DevAppRefusedEvent(app_scope=app.app_scope, line=line), timeout=TELL_TIMEOUT
        )
        if code is not None:
            log.info("devwatch.focus_not_told app=%s code=%s", app.app_scope, code.value)

    async def _generate(self, app: DevApp) -> str:
        """The app's manifest as its code declares it now, from a subprocess. Raises
        _Refused with the CLI's reason and detail (or the timeout's, the crash's)."""
        with tempfile.TemporaryDirectory(prefix="lineup-manifest-") as tmp:
            out = Path(tmp) / MANIFEST
            command = [sys.executable, "-B", "-m", "lineup.sdk.cli", "manifest"]
            command += [str(app.folder), "--out", str(out)]
            result: subprocess.CompletedProcess[bytes] | None = None
            with trio.move_on_after(MANIFEST_TIMEOUT):
                result = await trio.run_process(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    capture_stderr=True,
                    check=False,
                    env=_environment(),
                )
            if result is None:
                raise _Refused("manifest_timeout", f"no manifest within {MANIFEST_TIMEOUT:g} s")
            if result.returncode != 0:
                raise _refusal_of(result.stderr[-MAX_STDERR:], result.returncode)
            try:
                text = out.read_text(encoding="utf-8")
                document: Any = json.loads(text)
            except (OSError, ValueError) as exc:
                raise _Refused("manifest_invalid", f"{out.name}: {exc}") from exc
        scope = document.get("app_scope") if isinstance(document, dict) else None
        if scope != app.app_scope:
            raise _Refused(
                "app_scope_mismatch",
                f"app_scope changed from {app.app_scope} to {scope}: restart lineup to run it",
            )
        return text


def _environment() -> dict[str, str]:
    """The subprocess's: this one's, with the runtime's package importable as `lineup` and no
    bytecode written into the developer's folder (a stale .pyc could outlive a fast edit)."""
    root = str(Path(lineup.__file__).parent.parent)  # not resolved: `lineup` may be a link
    path = os.environ.get("PYTHONPATH", "")
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([root, path]) if path else root,
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def _refusal_of(stderr: bytes, status: int) -> _Refused:
    """The CLI's refusal line (`lineup app manifest: <reason> <detail>`), or the crash's."""
    for raw in reversed(stderr.decode("utf-8", "replace").splitlines()):
        if raw.startswith(CLI_PREFIX):
            reason, _, where = raw.removeprefix(CLI_PREFIX).partition(" ")
            return _Refused(reason, where)
    return _Refused("manifest_failed", f"exit status {status}")


def _write_if_changed(path: Path, text: str) -> None:
    """Replace `path` with `text` atomically (a hidden temporary file renamed over it), unless
    it already holds it."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except (OSError, UnicodeDecodeError):
        pass
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _Refused("manifest_not_written", f"{path}: {exc.strerror}") from exc


class DevWatchActor(Actor):
    """The watcher as a child of the tree (`devwatch`, see the module's docstring): its lines
    are printed as the supervisor prints its own, `lineup: ` first."""

    kind = ActorKind.DEV

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        watch = DevWatch(self.bus, dev_apps_of(self.ctx.config), _print)
        await watch.run(task_status=task_status)


def _print(line: str) -> None:
    print(f"lineup: {line}", flush=True)
