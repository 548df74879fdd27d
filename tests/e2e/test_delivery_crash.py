"""SIGKILL of the whole runtime in the middle of an install or an update (issue 15): the
supervisor and every process under it are killed at once while focus waits at a pause point of
the install (focus config `registry_pause_at`, test-only: it logs the point and waits, so the
test knows exactly where the install is). The runtime is then started again on the same data
dir: the active version is the old one or the new one (never a mix), its cache verifies, no
crash leftover is in the cache, the operation ended (failed or completed), and the app answers
a tool call."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import pytest
import trio

from lineup.actors.focus._cache import BundleCache
from lineup.sdk.bundle import SigningKey, read_header
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.bundles import build_bundle, trust
from lineup.tests.support.process import run_app, wait_pid_gone
from lineup.tests.support.runtime import CONVERSATION, agent_client

KEY = SigningKey(b"\x05" * 32)
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


async def listed(data_dir: Path) -> dict[str, Any]:
    result = await run_app("list", "--json", data_dir=data_dir)
    assert result.returncode == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


async def call_echo(nursery: trio.Nursery, appserver_url: str, version: str) -> None:
    agent = AgentView(await agent_client(nursery, appserver_url), wait_s=WAIT)
    revision = await agent.revision_with(f"{SCOPE}.echo")
    await agent.client.call_tool(
        CONVERSATION, f"{SCOPE}.echo", {"text": "after"}, revision, call_id="c-after"
    )
    done = await agent.terminal("c-after")
    assert done["type"] == "lineup.v1.tool.result", done
    assert done["payload"]["result"]["version"] == version


def write_bundles(tmp_path: Path) -> tuple[dict[str, bytes], dict[str, Path]]:
    """Versions 1.0 and 2.0, and the files `lineup app install` is given."""
    bundles = {v: build_bundle(tmp_path / "src", KEY, version=v) for v in ("1.0", "2.0")}
    files = {v: tmp_path / f"{SCOPE}-{v}.lineup" for v in bundles}
    for version, data in bundles.items():
        files[version].write_bytes(data)
    return bundles, files


@pytest.mark.parametrize(
    ("kind", "point", "survivor"),
    [
        ("install", "cache_renamed", None),  # the row was never written: nothing installed
        ("update", "cache_renamed", "1.0"),  # the old version, its orphan cache swept
        ("update", "row_written", "2.0"),  # the new version, the old its predecessor
    ],
)
async def test_a_sigkill_of_the_whole_runtime_mid_install_leaves_one_whole_version(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path, kind: str, point: str,
    survivor: str | None,
) -> None:  # fmt: skip
    """Over ten seconds on a loaded machine, by what it is about: what a SIGKILL of every
    process of the runtime leaves on disk, so two or three whole trees start one after another
    (one installs 1.0, one is killed at the crash point, one recovers and answers a call)."""
    trust(data_dir, KEY.public)
    bundles, files = write_bundles(tmp_path)
    digests = {v: read_header(data)[0].sha256 for v, data in bundles.items()}
    if kind == "update":
        async with trio.open_nursery() as first:
            tree = await Tree.start(first, data_dir)
            assert (await run_app("install", str(files["1.0"]), data_dir=data_dir)).returncode == 0
            await tree.kill_all()
    target = "2.0" if kind == "update" else "1.0"

    async with trio.open_nursery() as second:
        tree = await Tree.start(second, data_dir, registry_pause_at=point)
        outcome: list[subprocess.CompletedProcess[str]] = []

        async def request() -> None:
            outcome.append(await run_app("install", str(files[target]), data_dir=data_dir))

        second.start_soon(request)
        await tree.paused()
        assert any(f"point={point}" in line for line in tree.stderr)
        await tree.kill_all()
    assert outcome[0].returncode != 0  # the runtime died under the request

    tree = await Tree.start(nursery, data_dir)
    try:
        document = await listed(data_dir)
        app = next((a for a in document["apps"] if a["app_scope"] == SCOPE), None)
        ops = [op for op in document["operations"] if op["app_scope"] == SCOPE]
        interrupted = next(op for op in ops if op["version"] == target)
        assert interrupted["state"] in ("failed", "completed")
        assert interrupted["state"] == ("completed" if survivor == target else "failed")
        cache = BundleCache(data_dir)
        leftovers = [p.name for p in cache.root.iterdir() if p.name.startswith(".tmp-")]
        assert leftovers == []
        if survivor is None:
            assert app is None and not (cache.root / SCOPE).exists()
            assert interrupted["code"] == "actor_restarted"
            # Nothing half-installed is in the way: the same install goes through now.
            again = await run_app("install", str(files[target]), data_dir=data_dir)
            assert again.returncode == 0, again.stdout
            survivor = target
        else:
            assert app is not None
            assert (app["version"], app["state"]) == (survivor, "active")
            kept = sorted(os.listdir(cache.root / SCOPE))
            expected = ["1.0", "2.0"] if survivor == "2.0" else ["1.0"]
            assert kept == expected  # whole versions only: the orphan 2.0 of a crash is gone
            assert app["predecessor"] == ("1.0" if survivor == "2.0" else None)
        for version in os.listdir(cache.root / SCOPE):
            assert await cache.verify(SCOPE, version, digests[version])
            assert (cache.version_dir(SCOPE, version) / "bundle.lineup").read_bytes() == bundles[
                version
            ]
        await call_echo(nursery, tree.appserver_url, survivor)
    finally:
        await tree.kill_all()
