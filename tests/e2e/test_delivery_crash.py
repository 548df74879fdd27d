"""SIGKILL of the whole runtime at every step of an install and of an update (issues 15, 27):
the supervisor and every process under it are killed at once while focus waits at one of the
install's points (`CRASH_POINTS`, in order; focus config `registry_pause_at`, test-only: it
logs the point and waits, so the test knows exactly where the install is). The runtime is then
started again on the same data dir: the active version is exactly the one the point must leave
(`NEW_AFTER_RESTART`), its cache verifies, no crash leftover and no version that no row names
is in the cache, the operation ended as it must (never `requested` or `running`), the app
answers a tool call, and the same install, asked again, gets the answer it now must. The tree
that is killed is a process of its own (`support/delivery_runtime.py`), supervisor and all; the
one that recovers runs under a supervisor in the test's process, as the other e2e trees do."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final, TypeVar

import pytest
import trio

from lineup.actors.focus._cache import BUNDLE_FILE, BundleCache
from lineup.actors.focus._installed import CRASH_POINTS
from lineup.actors.focus.messages import RegistryInstallRequest, RegistryListRequest
from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.sdk.bundle import SigningKey, read_header
from lineup.sdk.protocol import AppOperationInfo, RegistryListReply
from lineup.supervisor._app_cli import REGISTRY_TIMEOUT
from lineup.supervisor._app_cli import _list_json as list_json
from lineup.supervisor._control import focus_request
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.bundles import PACKAGE, build_bundle, trust
from lineup.tests.support.delivery_runtime import delivery_specs
from lineup.tests.support.process import wait_pid_gone
from lineup.tests.support.runtime import CONVERSATION, agent_client, supervise

KEY = SigningKey(b"\x05" * 32)
M = TypeVar("M", bound=Message)
SCOPE = "deliver"
WAIT: Final = 60.0


class Tree:
    """The runtime in a process of its own (`support/delivery_runtime.py`), its stderr read
    (focus logs its pause point there) so the pipe never fills."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.stderr: list[str] = []
        self.appserver_url = ""
        self._paused = trio.Event()

    @classmethod
    async def start(cls, nursery: trio.Nursery, data_dir: Path, **focus: Any) -> Tree:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "lineup.tests.support.delivery_runtime", str(data_dir),
             json.dumps(focus)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )  # fmt: skip
        tree = cls(process)
        nursery.start_soon(tree._read_stderr)
        with trio.fail_after(WAIT):
            line = await tree._stdout_line()
        assert line.startswith("ready "), (line, tree.stderr[-20:])
        tree.appserver_url = line.split()[1]
        return tree

    async def _stdout_line(self) -> str:
        assert self.process.stdout is not None
        buffer = b""
        while b"\n" not in buffer:
            chunk = await self.process.stdout.receive_some(4096)
            if not chunk:
                return buffer.decode()
            buffer += chunk
        return buffer.split(b"\n", 1)[0].decode()

    async def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        buffer = b""
        async with self.process.stderr:
            while chunk := await self.process.stderr.receive_some(65536):
                buffer += chunk
                *lines, rest = buffer.split(b"\n")
                buffer = rest
                for line in lines:
                    text = line.decode(errors="replace")
                    self.stderr.append(text)
                    if "registry.pause_point" in text:
                        self._paused.set()

    async def paused(self) -> None:
        with trio.fail_after(WAIT):
            await self._paused.wait()

    def pids(self) -> list[int]:
        """The supervisor and every process under it (the zygote, each actor and app)."""
        found: list[int] = []
        todo = [self.process.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            for task in Path(f"/proc/{pid}/task").glob("*"):
                try:
                    todo += [int(c) for c in (task / "children").read_text().split()]
                except OSError:
                    pass  # gone meanwhile
        return found

    async def kill_all(self) -> None:
        """SIGKILL the whole tree at once: stopped first (nothing restarts what dies), then
        killed, then waited for."""
        pids = self.pids()
        for pid in pids:
            _signal(pid, signal.SIGSTOP)
        pids = sorted(set(pids) | set(self.pids()))  # anything forked before the stop
        for pid in pids:
            _signal(pid, signal.SIGKILL)
        with trio.fail_after(WAIT):
            await self.process.wait()
            for pid in pids[1:]:
                await wait_pid_gone(pid)
        assert self.process.stdout is not None
        await self.process.stdout.aclose()


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


# What a restart must make of a crash at each point: the new version (the row was written, and
# the operation completed with it), or the version before (the operation failed
# `actor_restarted`, the cache as it was). Every point says, in `CRASH_POINTS`' order.
NEW_AFTER_RESTART: Final = {
    "operation_requested": False,
    "operation_running": False,
    "bundle_verified": False,
    "cache_writing": False,
    "cache_renamed": False,
    "instances_closed": False,  # an update only: an install has no instance to close
    "row_written": True,
    "superseded_removed": True,
    "inventory_published": True,
}
CASES: Final = [
    (kind, point)
    for kind in ("install", "update")
    for point in CRASH_POINTS
    if kind == "update" or point != "instances_closed"
]
# An update goes from 2.0 (its predecessor 1.0) to 3.0, so that it also replaces a predecessor.
VERSIONS: Final = ("1.0", "2.0", "3.0")


@dataclass(frozen=True)
class Prepared:
    """The bundles, and a data dir (copied for each update) where 1.0 then 2.0 were
    installed by a runtime that was then killed, with its operations as listed."""

    bundles: dict[str, bytes]
    files: dict[str, Path]
    data_dir: Path
    operations: list[dict[str, Any]]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Prepared:
    work = tmp_path_factory.mktemp("bundles")
    # A Surface too: two files in the package, so the cache write has a middle.
    bundles = {v: build_bundle(work / "src", KEY, version=v, surface=True) for v in VERSIONS}
    files = {v: work / f"{SCOPE}-{v}.lineup" for v in VERSIONS}
    for version, data in bundles.items():
        files[version].write_bytes(data)
    data_dir = tmp_path_factory.mktemp("lu")
    data_dir.chmod(0o700)
    trust(data_dir, KEY.public)

    async def install_two() -> list[dict[str, Any]]:
        async with trio.open_nursery() as nursery:
            tree = await Tree.start(nursery, data_dir)
            try:
                for version in ("1.0", "2.0"):
                    done = await install(data_dir, files[version])
                    assert done.state == "completed", done
                operations: list[dict[str, Any]] = (await listed(data_dir))["operations"]
            finally:
                await tree.kill_all()
        return operations

    return Prepared(bundles, files, data_dir, trio.run(install_two))


def test_every_install_point_says_what_a_restart_makes_of_a_crash_there() -> None:
    assert tuple(NEW_AFTER_RESTART) == CRASH_POINTS


async def listed(data_dir: Path) -> dict[str, Any]:
    """`lineup app list --json`'s document."""
    reply = await _asked(data_dir, RegistryListRequest(), RegistryListReply)
    document: dict[str, Any] = json.loads(list_json(reply))
    return document


async def install(data_dir: Path, bundle: Path) -> AppOperationInfo:
    """`lineup app install BUNDLE`: its operation as focus ended it. Raises LineUpError, or
    OSError for a runtime that died under the request."""
    request = RegistryInstallRequest(operation_id=f"cli-{uuid.uuid4().hex}", path=str(bundle))
    return await _asked(data_dir, request, AppOperationInfo)


async def _asked(data_dir: Path, body: Message, expect: type[M]) -> M:
    """The request, asked of focus as `lineup app` asks it, from this process: a fresh
    interpreter for each (the CLI's) costs more than the request itself, and the CLI has its
    own tests (`tests/supervisor/test_app_cli.py`)."""
    return await trio.to_thread.run_sync(
        partial(focus_request, data_dir, body, expect, timeout=REGISTRY_TIMEOUT)
    )


def files_of(root: Path) -> dict[str, str]:
    """Every file under `root` and its digest (what an app's run may add, `__pycache__`,
    aside)."""

    def walk() -> Iterator[tuple[str, str]]:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for name in filenames:
                path = Path(dirpath) / name
                yield (
                    path.relative_to(root).as_posix(),
                    hashlib.sha256(path.read_bytes()).hexdigest(),
                )

    return dict(walk())


def sockets(folder: str, names: list[str]) -> list[str]:
    """What a copy of a data dir leaves out: the dead runtime's sockets."""
    return [n for n in names if stat.S_ISSOCK(os.lstat(os.path.join(folder, n)).st_mode)]


async def call_echo(agent: AgentView, version: str, call_id: str) -> None:
    """The installed app answers a tool call, from `version`."""
    revision = await agent.revision_with(f"{SCOPE}.echo")
    await agent.client.call_tool(
        CONVERSATION, f"{SCOPE}.echo", {"text": "after"}, revision, call_id=call_id
    )
    done = await agent.terminal(call_id)
    assert done["type"] == "lineup.v1.tool.result", done
    assert done["payload"]["result"]["version"] == version


def ended(operations: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    return sorted((op["operation_id"], op["state"], op["code"]) for op in operations)


async def kill_at(point: str, data_dir: Path, bundle: Path, running: str | None) -> None:
    """Start a runtime that pauses the install of `bundle` at `point` (the app `running`
    that version first, if given: an update has a live instance to close), and kill all of it
    there; then check the point left what `CRASH_POINTS` says: half a folder in the middle of
    the cache write, the new version's whole folder from its rename on."""
    async with trio.open_nursery() as nursery:
        tree = await Tree.start(nursery, data_dir, registry_pause_at=point)
        if running is not None:
            async with trio.open_nursery() as client:
                agent = AgentView(await agent_client(client, tree.appserver_url), wait_s=WAIT)
                await call_echo(agent, running, "c-before")
                client.cancel_scope.cancel()  # the client goes; the app's instance stays
        outcome: list[BaseException] = []

        async def request() -> None:
            try:
                await install(data_dir, bundle)
            except (LineUpError, OSError) as exc:
                outcome.append(exc)

        nursery.start_soon(request)
        await tree.paused()
        assert any(f"point={point}" in line for line in tree.stderr)
        await tree.kill_all()
    assert len(outcome) == 1  # the runtime died under the request
    bundles_dir = BundleCache(data_dir).root
    tmp = list(bundles_dir.glob(".tmp-*"))
    if point == "cache_writing":
        # The bytes and the package's first file, not yet its second (`web/index.html`).
        [folder] = tmp
        assert set(files_of(folder)) == {BUNDLE_FILE, f"app/{PACKAGE}/__init__.py"}
    else:
        assert tmp == []
    version = read_header(bundle.read_bytes())[0].version
    renamed = CRASH_POINTS.index(point) >= CRASH_POINTS.index("cache_renamed")
    assert (bundles_dir / SCOPE / version).is_dir() == renamed


async def assert_cache_holds(data_dir: Path, prepared: Prepared, named: list[str]) -> None:
    """The cache holds exactly the versions `named` (by the app's row), each whole, verifying
    and its bundle's bytes, and nothing else: no crash leftover, no other app."""
    cache = BundleCache(data_dir)
    present = sorted(p.name for p in cache.root.iterdir()) if cache.root.exists() else []
    assert present == ([SCOPE] if named else [])
    if named:
        assert sorted(os.listdir(cache.root / SCOPE)) == named
    for version in named:
        digest = read_header(prepared.bundles[version])[0].sha256
        assert await cache.verify(SCOPE, version, digest)
        assert (cache.version_dir(SCOPE, version) / BUNDLE_FILE).read_bytes() == (
            prepared.bundles[version]
        )


@pytest.mark.parametrize(("kind", "point"), CASES)
async def test_a_sigkill_of_the_whole_runtime_at_any_step_leaves_one_whole_version(
    nursery: trio.Nursery, data_dir: Path, prepared: Prepared, kind: str, point: str
) -> None:
    """Each case starts a runtime that is killed at the point, then one that recovers."""
    if kind == "update":
        shutil.copytree(prepared.data_dir, data_dir, dirs_exist_ok=True, ignore=sockets)
        target, before, operations = "3.0", ("2.0", "1.0"), prepared.operations
    else:
        trust(data_dir, KEY.public)
        target, before, operations = "1.0", None, []
    cache_before = files_of(BundleCache(data_dir).root)
    new = NEW_AFTER_RESTART[point]
    await kill_at(point, data_dir, prepared.files[target], before[0] if before else None)

    # The runtime again, on the same data dir: in this process, forking from the shared zygote
    # (the tree killed above had to be a process of its own; what recovers is focus, the store
    # and the cache, the same children either way). The test's end stops it.
    plan, specs = delivery_specs(data_dir)
    await supervise(nursery, plan, data_dir, specs)
    document = await listed(data_dir)
    # The journal: the operation ended as the point says, the others as they were.
    [interrupted] = [op for op in document["operations"] if op not in operations]
    assert (interrupted["kind"], interrupted["version"]) == (kind, target)
    assert (interrupted["state"], interrupted["code"]) == (
        ("completed", None) if new else ("failed", ErrorCode.ACTOR_RESTARTED.value)
    )
    others = [op for op in document["operations"] if op != interrupted]
    assert ended(others) == ended(operations)
    # The registry: exactly the version the point leaves; the cache exactly what it names
    # (before the row, byte for byte what it was).
    expected = (target, before[0] if before else None) if new else before
    apps = [a for a in document["apps"] if a["app_scope"] == SCOPE]
    assert [(a["version"], a["predecessor"], a["state"]) for a in apps] == (
        [(*expected, "active")] if expected else []
    )
    await assert_cache_holds(data_dir, prepared, sorted(v for v in expected or () if v))
    if not new:
        assert files_of(BundleCache(data_dir).root) == cache_before

    agent = AgentView(await agent_client(nursery, plan.appserver_url), wait_s=WAIT)
    if expected is not None:
        await call_echo(agent, expected[0], "c-after")
    # The same install again (a new operation): what was undone goes through now; what
    # was done is not done twice (not above the active version).
    again = await install(data_dir, prepared.files[target])
    if new:
        assert (again.state, again.code) == ("failed", ErrorCode.APP_VERSION_MISMATCH.value)
    else:
        assert again.state == "completed", again
        await call_echo(agent, target, "c-again")
