"""`lineup run` and `lineup status` as a user runs them: real subprocesses, real signals.

The tests that only read a running tree share one `lineup run` (`running`, per module); a test
whose tree is stopped, killed or started with its own arguments starts its own. The module is
one xdist group (`make test` distributes by `--dist loadgroup`): its tests run on one worker,
so that worker alone starts the shared run."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trio

from lineup.supervisor._run_cli import EXIT_USAGE, PASSWORD_ENV
from lineup.tests.support.cli import lineup
from lineup.tests.support.process import (
    LineupProcess,
    SharedLineupRun,
    modules_after,
    pid_alive,
    start_lineup_run,
    wait_pid_gone,
)

pytestmark = pytest.mark.xdist_group("supervisor-test-cli")

ACTORS = [
    "store",
    "devserver",
    "transport",
    "router",
    "focus",
    "gateway",
    "hostbridge",
    "miniapp:chat",
    "demo-agent",
]


AFTER_READY = "demo-agent"  # started once the tree is ready: nothing of the runtime waits for it


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedLineupRun]:
    """One `lineup run`, ready with its demo Agent, for the tests that only read it."""
    data_dir = tmp_path_factory.mktemp("lu")
    data_dir.chmod(0o700)
    run = SharedLineupRun(data_dir)
    try:
        yield run.ready()
    finally:
        run.kill()


def lineup_status(data_dir: Path) -> dict[str, object]:
    """`lineup status --json`'s document, from the CLI's own `main` in this process (the
    table test runs `lineup status` as a process of its own)."""
    result = lineup("status", "--json", "--data-dir", str(data_dir))
    document = json.loads(result.stdout)
    assert isinstance(document, dict)
    assert result.returncode == (0 if document["running"] else 1), result.stderr
    return document


def pid_of(document: dict[str, object], key: str) -> int:
    """A pid `lineup status --json` names (JSON: checked, not assumed)."""
    pid = document[key]
    assert isinstance(pid, int), key
    return pid


def tree_pids(data_dir: Path, output: list[str] | None = None) -> list[int]:
    """The supervisor's, the zygote's and every child's pid, from `lineup status`: each child
    must have its process (one listed without is between two of its processes: restarting,
    and the run's `output` says why)."""
    document = lineup_status(data_dir)
    children = document["children"]
    assert isinstance(children, list)
    assert all(c["pid"] is not None for c in children), (
        f"a child without its process: {children}; the run printed {output}"
    )
    return [pid_of(document, "pid"), pid_of(document, "zygote_pid"), *(c["pid"] for c in children)]


def title(pid: int) -> str:
    """What `ps -o args` and `top -c` show for `pid`."""
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()


def test_run_prints_each_child_ready_then_ready_and_status_lists_them(
    running: SharedLineupRun,
) -> None:
    data_dir, lines = running.data_dir, list(running.output.lines)
    # Each child once, all but the demo Agent before the tree's own line, in any order, as
    # most start together; the demo Agent after it.
    tree_ready = next(i for i, line in enumerate(lines) if "lineup: ready in" in line)
    ready = [line.split()[1] for line in lines if " ready (pid " in line]
    assert sorted(ready) == sorted(ACTORS)
    after = [line.split()[1] for line in lines[tree_ready:] if " ready (pid " in line]
    assert after == [AFTER_READY], lines
    document = lineup_status(data_dir)
    assert document["running"] is True
    assert document["state"] == "running"
    children = document["children"]
    assert isinstance(children, list)
    assert [c["name"] for c in children] == ACTORS
    info = document["info"]
    assert isinstance(info, dict)
    assert info["shell_url"].startswith("http://127.0.0.1:")
    assert "#token=" in info["shell_url"]
    assert info["appserver_url"].startswith("http://127.0.0.1:")
    assert any(line.endswith(info["shell_url"]) for line in lines)
    for child in children:
        assert set(child) == {"name", "kind", "pid", "state", "restarts", "uptime_s"}
        assert child["state"] == "running" and child["restarts"] == 0
        assert pid_alive(child["pid"])


def test_status_json_reports_numbers_as_numbers_and_each_sandbox_layer_as_an_object(
    running: SharedLineupRun,
) -> None:
    document = lineup_status(running.data_dir)
    assert set(document) == {
        "running",
        "pid",
        "state",
        "data_dir",
        "uptime_s",
        "children",
        "zygote_pid",
        "sandbox",
        "runtime",
        "info",
        "quarantine",
    }
    assert document["quarantine"] == {"count": 0, "kinds": {}}  # a fresh data dir: nothing
    runtime = document["runtime"]  # null only until the transport has first spoken
    assert runtime is None or (
        isinstance(runtime, dict)
        and set(runtime) == {"state", "reason"}
        and type(runtime["state"]) is str
    )
    assert type(document["pid"]) is int and type(document["zygote_pid"]) is int
    assert type(document["uptime_s"]) is float
    children = document["children"]
    assert isinstance(children, list) and children
    for child in children:
        assert type(child["pid"]) is int and type(child["restarts"]) is int
        assert type(child["uptime_s"]) is float
    sandbox = document["sandbox"]
    assert isinstance(sandbox, dict)
    # This machine has every layer (test_sandbox.py proves each one holds).
    assert sandbox == {
        "netns": {"available": True},
        "landlock": {
            "available": True,
            "abi": sandbox["landlock"]["abi"],
            "network": True,
            "scopes": True,
        },
        "rlimits": {"available": True},
        "capabilities": {"available": True},
        "seccomp": {"available": True, "audit": True},
        "missing": [],
    }
    assert type(sandbox["landlock"]["abi"]) is int and sandbox["landlock"]["abi"] >= 6
    info = document["info"]
    assert isinstance(info, dict)
    assert all(type(value) is str for value in info.values())  # URLs and names, nothing typed
    assert "zygote_pid" not in info and "sandbox" not in info
    # The quota layers in force: this kernel offers root cgroup v1's pids hierarchy.
    assert info["sandbox_fsize"] == "on (data dir measured every 2 s)"
    assert info["sandbox_pids_cgroup"] == "on (cgroup v1)"


async def test_status_without_json_is_a_table_with_the_sandbox_in_one_line(
    running: SharedLineupRun,
) -> None:
    result = await trio.run_process(
        [sys.executable, "-m", "lineup", "status", "--data-dir", str(running.data_dir)],
        capture_stdout=True,
    )
    lines = result.stdout.decode().splitlines()
    assert lines[0].startswith("lineup running, pid ")
    assert lines[1].split() == ["NAME", "KIND", "PID", "STATE", "RESTARTS", "UPTIME"]
    assert [line.split()[0] for line in lines[2 : 2 + len(ACTORS)]] == ACTORS
    assert any(line.startswith("zygote: pid ") for line in lines)
    sandbox = next(line for line in lines if line.startswith("sandbox: "))
    assert sandbox.startswith("sandbox: netns on, landlock on (abi ")
    assert sandbox.endswith("seccomp on (audit); missing: none")
    quotas = next(line for line in lines if line.startswith("quotas: "))
    assert quotas == "quotas: fsize on (data dir measured every 2 s), pids cgroup on (cgroup v1)"


def test_each_process_of_the_tree_is_titled_after_what_it_is(running: SharedLineupRun) -> None:
    document = lineup_status(running.data_dir)
    children = document["children"]
    assert isinstance(children, list)
    titles = {child["name"]: title(child["pid"]) for child in children}
    supervisor = title(pid_of(document, "pid"))
    zygote = title(pid_of(document, "zygote_pid"))
    assert supervisor == "lineup: supervisor"
    assert zygote == "lineup: zygote"
    assert titles == {
        "store": "lineup: store",
        "devserver": "lineup: devserver",
        "transport": "lineup: transport",
        "router": "lineup: router",
        "focus": "lineup: focus",
        "gateway": "lineup: gateway",
        "hostbridge": "lineup: hostbridge",
        "miniapp:chat": "lineup: miniapp chat",
        "demo-agent": "lineup: demo-agent",
    }


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_a_stop_signal_shuts_the_tree_down_cleanly_and_leaves_no_process(
    data_dir: Path, sig: int
) -> None:
    process = await start_lineup_run(data_dir)
    pids = tree_pids(data_dir, process.lines)
    process.signal(sig)
    # A hang guard, not the 2 s a clean stop takes on a quiet machine (`make bench` measures
    # that): the stop path's own bound is ~1 s plus ~3 s a child, one child after another.
    with trio.fail_after(30):
        code = await process.wait()
    assert code == 0
    for pid in pids:
        assert not pid_alive(pid)
    assert not (data_dir / "control.sock").exists()


async def test_a_sigkill_of_the_supervisor_leaves_no_process_of_the_tree(data_dir: Path) -> None:
    process = await start_lineup_run(data_dir)
    pids = tree_pids(data_dir, process.lines)
    process.kill()
    await process.wait()
    with trio.fail_after(5):
        for pid in pids[1:]:
            await wait_pid_gone(pid)
    for pid in pids:
        assert not pid_alive(pid)


async def test_a_second_run_on_the_same_data_dir_is_refused(running: SharedLineupRun) -> None:
    second = await LineupProcess.start("run", "--data-dir", str(running.data_dir))
    with trio.fail_after(30):
        assert await second.wait() == 1
    assert lineup_status(running.data_dir)["running"] is True


def test_status_says_not_running_with_exit_code_1(data_dir: Path) -> None:
    result = lineup("status", "--json", "--data-dir", str(data_dir))
    assert result.returncode == 1
    assert '"running": false' in result.stdout


def test_the_control_socket_and_data_dir_are_owner_only(running: SharedLineupRun) -> None:
    data_dir = running.data_dir
    assert stat.S_IMODE((data_dir / "control.sock").stat().st_mode) == 0o600
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700


async def run_exit_code(data_dir: Path, *args: str) -> int:
    """`lineup run` with `args`, stdin not a terminal: its exit status (it must exit)."""
    with trio.fail_after(30):
        result = await trio.run_process(
            [sys.executable, "-m", "lineup", "run", "--data-dir", str(data_dir), *args],
            stdin=subprocess.DEVNULL,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    return result.returncode


async def test_a_password_in_argv_or_a_file_others_can_read_is_refused(data_dir: Path) -> None:
    """Finding 12: `--password` would be in /proc/PID/cmdline for every local user to read. The
    first as a process of its own (the entry point's exit status), the rest through the CLI's
    own `main` in this process."""
    assert await run_exit_code(data_dir, "--password", "demo") == EXIT_USAGE

    def exit_code(*args: str) -> int:
        return lineup("run", "--data-dir", str(data_dir), *args).returncode

    loose = data_dir.parent / f"{data_dir.name}-loose"
    loose.write_text("demo\n")
    loose.chmod(0o644)
    assert exit_code("--password-file", str(loose)) == EXIT_USAGE
    link = data_dir.parent / f"{data_dir.name}-link"
    tight = data_dir.parent / f"{data_dir.name}-tight"
    tight.write_text("demo\n")
    tight.chmod(0o600)
    link.symlink_to(tight)  # followed, the check would be of another file
    assert exit_code("--password-file", str(link)) == EXIT_USAGE
    # A real AppServer, nothing that names a password, and no terminal to ask on.
    assert exit_code("--appserver", "http://127.0.0.1:9") == EXIT_USAGE
    assert not (data_dir / "control.sock").exists()  # nothing was started


@pytest.mark.parametrize("source", ["file", "environment"])
async def test_the_appserver_password_from_a_file_or_the_environment_is_in_no_cmdline(
    data_dir: Path, source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    password = f"pw-{source}-{os.getpid()}"
    args: list[str] = []
    if source == "file":
        path = data_dir.parent / f"{data_dir.name}-password"
        path.write_text(password + "\n")
        path.chmod(0o600)
        args = ["--password-file", str(path)]
    else:
        monkeypatch.setenv(PASSWORD_ENV, password)
    process = await LineupProcess.start("run", "--data-dir", str(data_dir), *args)
    try:
        with trio.fail_after(30):
            await process.wait_for_line("lineup: open the Shell: ")
        document = lineup_status(data_dir)
        # Every process, the demo Agent too: it starts once the tree is ready, and has no pid
        # until it has.
        agent = "lineup: demo-agent ready "
        if not any(line.startswith(agent) for line in process.lines):
            with trio.fail_after(30):
                await process.wait_for_line(agent)
        pids = tree_pids(data_dir, process.lines)
        info = document["info"]
        assert isinstance(info, dict)
        # The embedded AppServer and the transport both have it: the transport is logged in
        # (`ready` waits for that; its first sync may still be under way), and the AppServer
        # takes this password, not the default.
        runtime = document["runtime"]
        assert isinstance(runtime, dict) and runtime["state"] in {"synchronizing", "online"}
        async with httpx.AsyncClient(base_url=info["appserver_url"]) as http:
            logins = [
                await http.post("/v1/auth/login", json={"username": "demo", "password": pw})
                for pw in (password, "demo")
            ]
        assert [login.status_code for login in logins] == [200, 401]
        for pid in pids:
            assert password.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
    finally:
        process.kill()
        await process.wait()


def test_the_cli_module_loads_no_command_until_it_runs_one() -> None:
    """Every `lineup` command is an interpreter of its own: `lineup app pack` or `lineup status`
    must not first load the tree's modules (trio, the supervisor, its messages), nor the
    registry's (`lineup app list`'s) to learn which side a `lineup app` command is, nor
    `lineup run`'s to parse another command's arguments."""
    loaded = modules_after("import lineup.supervisor.cli as cli\ncli._parser(['status'])")
    assert "lineup.supervisor.cli" in loaded
    heavy = {
        "trio",
        "pydantic",
        "lineup.supervisor._run_cli",
        "lineup.supervisor._app_cli",
        "lineup.actors.kernel.control",
    }
    assert heavy & loaded == set()
    # `lineup status` and the registry commands speak to the tree over a plain socket: the
    # control socket's client side, without the bus or trio (its server side is the tree's).
    asked = modules_after(
        "import io, pathlib, lineup.supervisor.cli as cli\n"
        "cli.status(pathlib.Path('/nonexistent/lineup'), as_json=True, out=io.StringIO())"
    )
    assert "lineup.supervisor._control" in asked
    server = {"trio", "lineup.supervisor._control_server", "lineup.actors.kernel.bus"}
    assert server & asked == set()
