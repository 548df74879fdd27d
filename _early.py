"""Start the zygote as early as `lineup run` can: forked from the supervisor's own process once
it has imported what both need, and nothing else yet.

The supervisor and the zygote both begin with the same imports (the zygote's `BASE`: trio,
pydantic, the kernel, ~0.3 s). Each in its own interpreter, they paid for them twice, side by
side on the same cores; here they are paid once, and the zygote, forked then, goes on with its
own preload while the supervisor imports the rest of itself. The supervisor adopts it (see
`supervisor/_spawn.py`). Must be called from the main thread, before any other thread exists
(forking a threaded process is unsafe; with a thread it starts no zygote, and the supervisor
starts a fresh-interpreter one itself), and before anything is printed or any file opened.
PR_SET_PDEATHSIG follows the parent *thread* of the zygote and of every child it forks.

The garbage collector is off while `lineup run` imports, and the heap it built is frozen once
they are done (`imports_done`), as CPython's documentation advises for a process that forks
without exec (`gc.freeze`): an import makes objects by the hundred thousand and almost no
garbage, yet each collection walked all of them, ~90 ms of a start's CPU in every interpreter;
and a child forked afterwards never walks (or, by touching their counts, copies) its parent's
heap. The zygote keeps to the same rule (`supervisor/_zygote.py`).
"""

from __future__ import annotations

import gc
import os
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from typing import Final, Protocol

__all__ = [
    "RUNTIME_LANES",
    "RUNTIME_PRELOAD",
    "ZygoteProcess",
    "imports_done",
    "launch_zygote",
    "pause_collection",
    "take_zygote",
    "zygote_argv",
]

# What the zygote imports for `lineup run`'s children: each entry before a child of its
# package forks, the rest once the tree is ready (see `supervisor/_zygote.py`).
RUNTIME_PRELOAD: Final = (
    # The actors' modules, not their packages: a package exports its actor lazily, so that
    # importing its `messages` stays light, and importing the package alone would load nothing.
    # An entry may name more modules after the first: what that module imports only on first
    # use, loaded with it before its child forks.
    "lineup.actors.store._actor",
    "lineup.actors.transport._actor",
    "lineup.actors.router._actor",
    "lineup.actors.focus._actor",
    "lineup.actors.gateway._actor",
    "lineup.hostbridge._actor",
    "hypercorn.trio",
    "starlette.applications",
    "markdown_it",
    "lineup.sdk",
    "lineup.miniapps.chat",
    "lineup.ops.devserver.actor",
    "lineup.ops.agent.demo",
    "lineup.ops.devwatch",
    # The MCP adapter that runs every app of kind `mcp`, with the `mcp` SDK (~0.4 s of CPU
    # and 26 MiB): loaded once here, before the first MCP app's process forks, instead of in
    # each MCP app's process after its fork (at every start and every restart). On demand
    # (named by its target): not before, as most trees run no MCP app and a zygote holds what
    # it loaded, idle, as memory of its own.
    "lineup.sdk._mcp_host:McpAppHost mcp.client.session",
)

# One more zygote for the HTTP servers of `lineup run` (see `supervisor/_spawn.py`): it loads
# and forks the embedded AppServer and the hostbridge (hypercorn, starlette, markdown-it),
# while the first zygote does all the others (whose modules overlap: the store's protocol, the
# wire). Each entry is loaded before a child of its package forks; the rest once the tree is
# ready.
RUNTIME_LANES: Final = (
    (
        "lineup.ops.devserver.actor",
        "lineup.hostbridge._actor",
        "hypercorn.trio",
        "starlette.applications",
        "markdown_it",
    ),
)


class ZygoteProcess(Protocol):
    """The zygote's process as the supervisor handles it (a `subprocess.Popen` is one)."""

    pid: int

    def poll(self) -> int | None: ...

    def kill(self) -> None: ...

    def wait(self) -> int: ...


class _Forked:
    """The zygote forked here, handled as a `Popen` would be: this process is its parent."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            os.kill(self.pid, signal.SIGKILL)  # not reaped yet: the pid is still its own

    def wait(self) -> int:
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.returncode


# At most one early zygote, waiting to be adopted.
_LAUNCHED: list[tuple[ZygoteProcess, socket.socket, tuple[str, ...]]] = []
_PAUSED: list[bool] = []  # the collector was paused by `pause_collection`


def pause_collection() -> None:
    """No garbage collection until `imports_done`: call first thing in a command that imports
    much and then runs long (`lineup run`)."""
    if gc.isenabled():
        gc.disable()
        _PAUSED.append(True)


def imports_done() -> None:
    """The imports are over: what they built is frozen (never walked by a collection again)
    and the collector runs as usual. Nothing, if `pause_collection` paused nothing."""
    if _PAUSED:
        _PAUSED.clear()
        gc.freeze()
        gc.enable()


# A zygote of its own: its collector off before its first import (see the module's docstring).
_ZYGOTE_MAIN: Final = "import gc; gc.disable(); from lineup.supervisor._zygote import main; main()"


def zygote_argv(fd: int) -> list[str]:
    return [sys.executable, "-c", _ZYGOTE_MAIN, str(fd), str(os.getpid())]


def launch_zygote(
    preload: tuple[str, ...] = RUNTIME_PRELOAD,
    lanes: tuple[tuple[str, ...], ...] = RUNTIME_LANES,
) -> None:
    """Import the zygote's `BASE` here, then fork the zygote and one more per lane;
    `take_zygote` hands each to the supervisor."""
    from lineup.supervisor import _zygote  # with what it needs, and nothing of the tree's

    _zygote.load_base()
    if len(os.listdir("/proc/self/task")) != 1:
        return  # an import started a thread: no fork; the supervisor starts fresh zygotes
    parent = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    for modules in _zygote.lane_preloads(preload, lanes):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:
            for _, other, _ in _LAUNCHED:
                other.close()  # an earlier lane's: the supervisor's alone
            _be_the_zygote(_zygote.run, ours, theirs, parent, modules)
        theirs.close()
        _LAUNCHED.append((_Forked(pid), ours, modules))


def _be_the_zygote(
    run: Callable[[int, int, tuple[str, ...]], None],
    ours: socket.socket,
    theirs: socket.socket,
    parent: int,
    preload: tuple[str, ...],
) -> None:
    """The forked child: the zygote, until the supervisor closes its socket. Never returns."""
    code = 1
    try:
        ours.close()
        devnull = os.open(os.devnull, os.O_RDONLY)  # as a Popen'ed zygote: no terminal input
        os.dup2(devnull, 0)
        os.close(devnull)
        run(theirs.detach(), parent, preload)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def take_zygote(modules: tuple[str, ...]) -> tuple[ZygoteProcess, socket.socket] | None:
    """The early zygote that preloads `modules`, if one was started (once). The first call
    also stops every early zygote that no one will take: another preload was asked for."""
    for index, (process, sock, its_modules) in enumerate(_LAUNCHED):
        if its_modules == modules:
            del _LAUNCHED[index]
            return process, sock
    while _LAUNCHED:
        process, sock, _ = _LAUNCHED.pop()
        process.kill()
        process.wait()
        sock.close()
    return None
