"""Run `lineup` as a real subprocess and read what it prints, without sleeps."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Final, TypeVar

import trio

SHELL_LINE: Final = "lineup: open the Shell: "  # `lineup run` is ready: the Shell's URL follows

T = TypeVar("T")


class LineReader:
    """The lines a plain child prints on `stream`, read by a thread for as long as it prints
    (so the pipe never fills however long a test takes), and waited on without polling."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self.ended = False  # the stream is closed: no line is to come
        self._stream = stream
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self._stream:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self.ended = True
            self._changed.notify_all()

    def wait(self, found: Callable[[list[str]], T | None], timeout: float) -> T | None:
        """What `found(lines)` gives once it gives something, asked again at each new line;
        None once `timeout` s pass or the stream ends without it."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                result = found(self.lines)
                if result is not None:
                    return result
                left = deadline - time.monotonic()
                if left <= 0 or self.ended:
                    return None
                self._changed.wait(left)

    def close(self, timeout: float) -> None:
        """Once the child exited: the reader done, the pipe closed."""
        self._thread.join(timeout)
        self._stream.close()


class LineupProcess:
    """A `python -m lineup ...` child with a line reader over its stdout."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self._buffer = b""
        self.lines: list[str] = []

    @classmethod
    async def start(
        cls, *args: str, env: dict[str, str] | None = None, own_group: bool = False
    ) -> LineupProcess:
        """With `own_group`, the child leads a process group of its own (`kill_group`)."""
        env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "lineup", *args],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=own_group,
        )
        return cls(process)

    async def readline(self) -> str | None:
        assert self.process.stdout is not None
        while b"\n" not in self._buffer:
            chunk = await self.process.stdout.receive_some(65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        text = line.decode()
        self.lines.append(text)
        return text

    async def wait_for_line(self, needle: str) -> str:
        while True:
            line = await self.readline()
            if line is None:
                raise AssertionError(f"exited before printing {needle!r}: {self.lines}")
            if needle in line:
                return line

    def signal(self, sig: int) -> None:
        self.process.send_signal(sig)

    async def wait(self) -> int:
        return await self.process.wait()

    def kill(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)

    def kill_group(self) -> None:
        """SIGKILL every process of the child's group at once, as a power cut would (started
        with `own_group`)."""
        if self.process.returncode is None:
            os.killpg(self.process.pid, signal.SIGKILL)


@asynccontextmanager
async def lineup_run(
    data_dir: Path, *, within_s: float
) -> AsyncIterator[tuple[LineupProcess, str]]:
    """`lineup run --data-dir DATA_DIR` and the Shell's URL, once it printed it (within
    `within_s`); killed on the way out if it is still running."""
    process = await LineupProcess.start("run", "--data-dir", str(data_dir))
    try:
        with trio.fail_after(within_s):
            line = await process.wait_for_line(SHELL_LINE)
        yield process, line.split(SHELL_LINE, 1)[1]
    finally:
        process.kill()
        await process.wait()


async def stopped(process: LineupProcess, *, within_s: float) -> None:
    """SIGTERM, and the whole tree stopped cleanly (exit status 0) within `within_s`."""
    process.signal(signal.SIGTERM)
    with trio.fail_after(within_s):
        assert await process.wait() == 0


async def start_lineup_run(data_dir: Path, env: dict[str, str] | None = None) -> LineupProcess:
    """`lineup run --data-dir DATA_DIR` (with `env` added to this process's environment), once
    it has printed the Shell's URL (the tree is ready) and its demo Agent, started after that,
    is ready too; fails after 30 s."""
    process = await LineupProcess.start("run", "--data-dir", str(data_dir), env=env)
    with trio.fail_after(30):
        await process.wait_for_line(SHELL_LINE)
        agent = "lineup: demo-agent ready "
        if not any(line.startswith(agent) for line in process.lines):
            await process.wait_for_line(agent)
    return process


class SharedLineupRun:
    """`lineup run --data-dir DATA_DIR ARGS` for a module's tests that only read the tree: a
    plain child (usable from a module-scoped fixture, outside any trio run), its stdout read by
    a thread for as long as it runs, so the pipe never fills however long the module takes."""

    def __init__(self, data_dir: Path, *args: str) -> None:
        self.data_dir = data_dir
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lineup", "run", "--data-dir", str(data_dir), *args],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
            text=True,
        )
        assert self.process.stdout is not None
        self.output = LineReader(self.process.stdout)

    def wait_for_line(self, needle: str, timeout: float) -> str:
        """The first line holding `needle` (printed already or to come); fails once `timeout`
        s pass or the run ends without it."""
        found = self.output.wait(
            lambda lines: next((line for line in lines if needle in line), None), timeout
        )
        if found is None:
            raise AssertionError(f"no line with {needle!r} in {timeout:.0f} s: {self.output.lines}")
        return found

    def ready(self, timeout: float = 30) -> SharedLineupRun:
        """Once the tree is ready and its demo Agent, started after that, is too (as
        `start_lineup_run`)."""
        deadline = time.monotonic() + timeout
        self.wait_for_line("lineup: open the Shell: ", timeout)
        self.wait_for_line("lineup: demo-agent ready ", max(0.0, deadline - time.monotonic()))
        return self

    def kill(self) -> None:
        """SIGKILL, and wait for it and its reader."""
        self.process.kill()
        self.process.wait(timeout=30)
        self.output.close(timeout=30)


def _app_argv(args: tuple[str, ...], data_dir: Path | None) -> list[str]:
    data = ["--data-dir", str(data_dir)] if data_dir is not None else []
    return [sys.executable, "-m", "lineup", "app", *args, *data]


def lineup_app(
    *args: str,
    data_dir: Path | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 150,
) -> subprocess.CompletedProcess[str]:
    """`lineup app ARGS` as a user runs it (with `--data-dir` when given, `env` added to this
    process's environment, no stdin), whatever its exit code; raises only past `timeout` s."""
    return subprocess.run(
        _app_argv(args, data_dir),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
        check=False,
    )


async def run_app(
    *args: str, data_dir: Path, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`lineup_app`, for trio tests (the runtime it talks to runs meanwhile): a child of trio's,
    so that the test's own deadline cancels it (and kills it) like any other wait."""
    done = await trio.run_process(
        _app_argv(args, data_dir),
        capture_stdout=True,
        capture_stderr=True,
        stdin=b"",
        cwd=cwd,
        check=False,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def modules_after(statement: str) -> set[str]:
    """The modules loaded after a fresh interpreter runs `statement` (within 60 s): the names in
    `sys.modules` but those set to None, which blocks an import (`lineup` blocks one)."""
    code = (
        f"import json, sys\n{statement}\n"
        "print(json.dumps(sorted(n for n, m in sys.modules.items() if m is not None)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return set(json.loads(done.stdout))


def lineup_status(data_dir: Path) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-m", "lineup", "status", "--json", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    document = json.loads(out.stdout)
    assert isinstance(document, dict)
    return document


async def wait_pid_gone(pid: int) -> None:
    """Wait until `pid` has exited, through a pidfd (works for processes that are not ours)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        await trio.lowlevel.wait_readable(fd)
    finally:
        os.close(fd)


def pid_alive(pid: int) -> bool:
    """True if `pid` runs and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
