"""A dev app, then the signed bundle of the same app, in one data dir, through real `lineup run`
processes and the real `lineup app` CLI (its installs as processes, its lists through its own
`main` in this process): while `--dev-app hello` runs, an install of `hello` is refused
`app_protected` (the dev app is live); once a run without it starts, the row the dev run left is
a leftover and the install takes its scope; and a later `--dev-app hello` says in one terminal
line that the installed `hello` is the one loaded. The waits are on what the runtime prints,
each bounded; no sleeps."""

from __future__ import annotations

import functools
import io
import json
import signal
from pathlib import Path
from typing import Any

import trio

from lineup.sdk.bundle import SigningKey
from lineup.supervisor._app_cli import main
from lineup.tests.support.bundles import build_bundle, trust
from lineup.tests.support.process import LineupProcess, run_app
from lineup.tests.support.reload_app import SCOPE, write_dev_app

KEY = SigningKey(b"\x0d" * 32)
WAIT = 30.0


async def listed(data_dir: Path) -> dict[str, Any] | None:
    """`lineup app list --json`'s row for SCOPE: the CLI's own `main`, in this process (the
    installs are `lineup app` processes, as the user runs them)."""
    out, err = io.StringIO(), io.StringIO()
    argv = ["list", "--json"]
    run = functools.partial(main, argv, data_dir_default=data_dir, out=out, err=err)
    assert await trio.to_thread.run_sync(run) == 0, err.getvalue()
    apps: list[dict[str, Any]] = json.loads(out.getvalue())["apps"]
    return next((app for app in apps if app["app_scope"] == SCOPE), None)


class Run:
    """One `lineup run` on the data dir, until `stop` (a clean stop, exit status 0)."""

    def __init__(self, process: LineupProcess) -> None:
        self.process = process

    @classmethod
    async def start(cls, data: Path, *dev_apps: Path) -> Run:
        args = [arg for folder in dev_apps for arg in ("--dev-app", str(folder))]
        process = await LineupProcess.start(
            "run", "--data-dir", str(data), "--no-demo-agent", *args
        )
        run = cls(process)
        await run.line("lineup: open the Shell: ")
        return run

    async def line(self, needle: str) -> str:
        with trio.fail_after(WAIT):
            return await self.process.wait_for_line(needle)

    async def stop(self) -> None:
        self.process.signal(signal.SIGTERM)
        with trio.fail_after(WAIT):
            await self.process.wait_for_line("lineup: stopped")
            assert await self.process.wait() == 0


async def test_a_past_dev_app_leaves_its_scope_to_the_installed_bundle_of_the_same_app(
    data_dir: Path, tmp_path: Path
) -> None:
    """About ten seconds, by what it is about: three `lineup run`s one after another on one data
    dir (what each leaves is what the next finds), with `lineup app` run as a user runs it."""
    data = data_dir / "rt"
    trust(data, KEY.public)
    folder = write_dev_app(tmp_path / "src" / "hello_dev")
    bundle = tmp_path / "hello-1.0.lineup"
    bundle.write_bytes(build_bundle(tmp_path / "bundle", KEY, scope=SCOPE, version="1.0"))
    runs: list[Run] = []
    try:
        # The dev app runs: its scope is its own.
        runs.append(await Run.start(data, folder))
        refused = await run_app("install", str(bundle), data_dir=data)
        assert (refused.returncode, refused.stdout) == (1, ""), refused
        assert refused.stderr.endswith(": failed (app_protected)\n"), refused.stderr
        dev = await listed(data)
        assert dev is not None and dev["source"] == "dev"
        await runs.pop().stop()

        # A run without it: the dev row is a leftover, and the bundle takes the scope.
        runs.append(await Run.start(data))
        assert await listed(data) is None  # a leftover is no app
        installed = await run_app("install", str(bundle), data_dir=data)
        assert installed.returncode == 0, installed.stderr
        assert installed.stdout == f"install {SCOPE} 1.0: completed\n"
        app = await listed(data)
        assert app is not None
        assert {k: app[k] for k in ("version", "source", "enabled", "state", "removable")} == {
            "version": "1.0",
            "source": "installed",
            "enabled": True,
            "state": "active",
            "removable": True,
        }
        await runs.pop().stop()

        # The dev app again: the installed one wins, and the terminal says so in one line.
        runs.append(await Run.start(data, folder))
        line = await runs[0].line(f"lineup: dev app {folder}: ")
        assert line.startswith(
            f"lineup: dev app {folder}: {SCOPE} is not loaded: the installed {SCOPE} 1.0 "
        ), line
        app = await listed(data)
        assert app is not None and (app["source"], app["version"]) == ("installed", "1.0")
        await runs.pop().stop()
    finally:
        for run in runs:
            run.process.kill()
            await run.process.wait()
