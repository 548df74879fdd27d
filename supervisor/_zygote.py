"""The zygote: a preloaded interpreter that forks actor processes on request.

Theory of operation
-------------------
A fresh interpreter that imports trio, pydantic and the actors costs ~170 ms; a fork of one that
already has them costs ~4 ms. So the supervisor starts this process once, it imports everything
an actor needs, and then serves `spawn` requests over a Unix socket (the child's control channel
end arrives with the request, by SCM_RIGHTS). `lineup run` forks it from its own process once
both have imported `BASE` (see `lineup._early`); a zygote restarted later is a fresh interpreter
(`main`), as a running trio loop must not be forked.

Each child is created with `clone(CLONE_PARENT)`: its parent is the *supervisor*, not the zygote.
So the supervisor reaps it and gets its exit status (pidfd + waitid), `PR_SET_PDEATHSIG` ties the
child's life to the supervisor's, and a zygote crash harms no running actor. CPython's own fork
bookkeeping (`PyOS_BeforeFork`/`AfterFork_*`, which also run `os.register_at_fork` hooks) is
called around the raw syscall exactly as `os.fork` does.

The zygote never runs trio or any thread: forking a multi-threaded process is unsafe. Nor does
it collect garbage (see `lineup._early`): its collector is off, the heap is frozen before each
fork, and the child turns its own collector on, over none of that heap. Once everything is
imported and built, one collection frees what the imports left, and the rest is frozen.

It says it is ready once it has what every actor needs (`BASE`), and imports the rest of its
preload in order while the supervisor has asked for nothing yet. From the first spawn on, it
imports only what a spawn needs, the preload entries of its target's package (the store's
modules before the store is forked: each child still finds its code loaded), so the first
children start while the last modules load, and a spawn never waits behind an import it does
not need. Once the tree is ready the supervisor says `zygote.preload`, and the rest loads
between spawns, then every message's validator is built (messages defer that to their first
use), so that every later fork (a restart) is cheap again.

In the child, in this order: leave the zygote's socket, new session (`setsid`: terminal signals
go to the supervisor alone), die with the supervisor, take its title (`lineup: router`), make
the pipes that came with the request its stdout and stderr if any did (a MiniApp's: its output
is its own, see `_applog`), move the control channel to fd 3 and close every other descriptor,
apply the sandbox (`_sandbox.prepare_child`, which reports to the supervisor on the control
channel first), then run the actor.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import gc
import importlib
import io
import json
import os
import select
import signal
import socket
import sys
import traceback
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any, Final

from pydantic import BaseModel

from lineup.actors.kernel.framing import FrameDecoder, encode_frame, parse_frame
from lineup.actors.kernel.messages import REGISTRY

from . import _sandbox, _title

# What every actor needs, and the supervisor too: loaded before the zygote says it is ready.
BASE: Final = ("trio", "pydantic", "apsw", "lineup.actors.kernel.actor")  # the whole kernel
CONTROL_FD: Final = 3  # where a child finds its control channel

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG: Final = 1
_CLONE_PARENT: Final = 0x00008000
_SYS_CLONE: Final = {"x86_64": 56, "aarch64": 220}.get(os.uname().machine)
_ANC: Final = socket.CMSG_SPACE(4 * 4)


def load_base() -> None:
    """Import `BASE`, and look pydantic's plugins up: pydantic does that (importlib.metadata,
    ~25 ms of imports, and a scan of every installed package's entry points) when it builds
    its first validator, so done here, before the forks, it is done once and not in every
    child."""
    for module in BASE:
        importlib.import_module(module)
    from pydantic.plugin._loader import get_plugins

    get_plugins()


def die_with(parent_pid: int) -> None:
    """SIGKILL this process when `parent_pid` (our parent) dies; exit now if it already has."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(1)


def _clone_sibling() -> int:
    """fork(), but the child's parent is our parent (CLONE_PARENT). Returns 0 in the child."""
    if _SYS_CLONE is None:  # pragma: no cover - other architectures: plain fork
        return os.fork()
    ctypes.pythonapi.PyOS_BeforeFork()
    pid = _libc.syscall(_SYS_CLONE, _CLONE_PARENT | signal.SIGCHLD, 0, 0, 0, 0)
    if pid == 0:
        ctypes.pythonapi.PyOS_AfterFork_Child()
        return 0
    errno = ctypes.get_errno()
    ctypes.pythonapi.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(errno, os.strerror(errno))
    return int(pid)


def _child(
    boot: dict[str, Any],
    control_fd: int,
    stdio: tuple[int, int] | None,
    zygote_sock: socket.socket,
    supervisor_pid: int,
) -> None:
    """Runs in the new process; never returns."""
    code = 1
    try:
        gc.enable()  # over its own objects: the zygote's were frozen before the fork
        zygote_sock.close()
        os.setsid()
        die_with(supervisor_pid)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _title.set_title(str(boot["name"]))
        if stdio is not None:
            # First, while both are still above fd 3 (fds 0-2 are the zygote's, always open).
            os.dup2(stdio[0], 1)
            os.dup2(stdio[1], 2)
            if isinstance(sys.stdout, io.TextIOWrapper):
                sys.stdout.reconfigure(line_buffering=True)  # a pipe now: line by line
        if control_fd != CONTROL_FD:
            os.dup2(control_fd, CONTROL_FD)
        os.closerange(CONTROL_FD + 1, 65536)
        _sandbox.prepare_child(boot, report_to=CONTROL_FD)

        from lineup.actors.kernel.actor import BootInfo, actor_main

        code = actor_main(BootInfo.from_json(boot), CONTROL_FD)
    except BaseException:
        traceback.print_exc()
    finally:
        # Out, whatever the streams do: a flush that raised (a pipe whose reader is gone) would
        # carry this process back into the zygote's loop, which would catch it and serve on as
        # a second zygote, on a socket closed above (exit 1, its traceback lost on that stream).
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _import(entry: str) -> None:
    """Preload one entry: a module, or a module then what it imports only on first use
    (`"lineup.actors.transport._actor httpcore"`: httpx loads httpcore with its first client);
    an on-demand entry's target names its module (`on_demand`). A failure is not the
    zygote's: the child that needs the module imports it again and fails with its own error,
    reported as any child's is."""
    for module in (word.partition(":")[0] for word in entry.split()):
        try:
            importlib.import_module(module)
        except Exception:
            traceback.print_exc()


def entries_for(modules: Iterable[str], target: str) -> list[str]:
    """The entries of `modules` in the package of `target` (`pkg:Attr`: `pkg` and `pkg.*`),
    by each entry's first module; an on-demand entry, only if it names `target` itself."""
    package = target.partition(":")[0]
    return [
        m
        for m in modules
        if _first(m) == target
        or (not on_demand(m) and (_first(m) == package or _first(m).startswith(package + ".")))
    ]


def on_demand(entry: str) -> bool:
    """Whether `entry` is loaded only for a spawn of the target it names first
    (`"lineup.sdk._mcp_host:McpAppHost mcp.client.session"`), and never otherwise: what
    few trees run, which every zygote would hold, idle, in memory of its own."""
    return ":" in _first(entry)


def _first(entry: str) -> str:
    return entry.split(maxsplit=1)[0] if entry.strip() else ""


def lane_preloads(
    preload: Iterable[str], lanes: Iterable[tuple[str, ...]] = ()
) -> tuple[tuple[str, ...], ...]:
    """What each zygote of a tree preloads besides `BASE`: the first, `preload` but what a lane
    claims; each lane, its own modules (see `Zygote` in `_spawn`). A zygote loads nothing a
    tree does not name: once the tree is ready it loads the rest of its list, and anything
    more would only compete with the tree for the cores."""
    lanes = tuple(lanes)
    claimed = {module for lane in lanes for module in lane}
    first = dict.fromkeys(m for m in preload if _first(m) not in BASE and m not in claimed)
    return (tuple(first), *lanes)


class Preload:
    """What the zygote imports, and when (no I/O: `serve` asks, then imports).

    Before the first spawn and after `preload_all`, the zygote is `idling`: it imports the
    `next` entry in order while no request waits. In between, it imports only what a spawn
    needs, `for_spawn(target)`: the pending entries of the target's package (`pkg` of
    `pkg:Attr`, as `pkg` itself and `pkg.*`). An entry `on_demand` waits, idle or not, for a
    spawn of the target it names.
    """

    def __init__(self, pending: Iterable[str]) -> None:
        self.pending = deque(pending)
        self._idle = True
        self._all = False

    @property
    def idling(self) -> bool:
        return self._idle and any(not on_demand(entry) for entry in self.pending)

    def next(self) -> str:
        entry = next(entry for entry in self.pending if not on_demand(entry))
        self.pending.remove(entry)
        return entry

    def for_spawn(self, target: str) -> list[str]:
        self._idle = self._all  # children are starting: import only what each needs
        wanted = entries_for(self.pending, target)
        for module in wanted:
            self.pending.remove(module)
        return wanted

    def preload_all(self) -> None:
        self._idle = self._all = True  # the tree is ready: load the rest, spawns or not

    @property
    def done(self) -> bool:
        """Everything imported (but what waits for a spawn that needs it), and no spawn of the
        start under way."""
        return self._idle and all(on_demand(entry) for entry in self.pending)


def unbuilt_messages() -> Iterator[type[BaseModel]]:
    """The messages whose validators are still to build. Their classes defer it to their first
    use (`defer_build`), so that an import costs what a command needs and no more; a zygote
    builds them all once it has nothing else to do, so that a child forked after that (a
    restart, a MiniApp) finds them built, as it finds its modules imported."""
    for cls in list(REGISTRY.values()):
        if not cls.__pydantic_complete__:
            yield cls


def _build(cls: type[BaseModel]) -> None:
    """Build one message's validator; a failure is the child's that uses it, as in `_import`."""
    try:
        cls.model_rebuild(force=True)
    except Exception:
        traceback.print_exc()


def serve(sock: socket.socket, supervisor_pid: int, preload: Preload | None = None) -> None:
    """Fork a child for each spawn request until the supervisor closes `sock`, importing
    what `preload` says: a spawn's own modules first, the rest while no request waits."""
    preload = Preload(()) if preload is None else preload
    decoder = FrameDecoder()
    fds: deque[int] = deque()
    unbuilt = unbuilt_messages()  # reads the registry at its first `next`: all is imported then
    collected = False
    while True:
        if (preload.idling or preload.done) and not select.select([sock], [], [], 0)[0]:
            if preload.idling:
                _import(preload.next())
                continue
            if (cls := next(unbuilt, None)) is not None:
                _build(cls)
                continue
            if not collected:  # all imported and built: free what that left, once
                collected = True
                gc.collect()
                gc.freeze()
        try:
            data, anc, _flags, _addr = sock.recvmsg(65536, _ANC)
        except ConnectionResetError:
            return  # the supervisor closed us before reading our ready frame: exit
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                received = array.array("i")
                received.frombytes(payload[: len(payload) - len(payload) % 4])
                fds.extend(received)
        if not data:
            return  # the supervisor closed us: exit
        for raw in decoder.feed(data):
            frame = parse_frame(raw)
            if frame.body.get("type") == "zygote.preload":
                preload.preload_all()
                continue
            control_fd = fds.popleft()
            # The child's stdout and stderr, when the supervisor sent them (after the channel).
            stdio = (fds.popleft(), fds.popleft()) if frame.body.get("stdio") else None
            for module in preload.for_spawn(str(frame.body["boot"].get("target", ""))):
                _import(module)
            try:
                if _sandbox.is_sandboxed(frame.body["boot"].get("config") or {}):
                    # Each sandboxed child's own work, done once, before the first one forks
                    # (~2 ms): not before `ready`, on the way of every tree's first children;
                    # and what is the same for each child of its app (~1 ms).
                    _sandbox.warm(frame.body["boot"])
                gc.freeze()  # the child's collector never walks (nor copies) the zygote's heap
                pid = _clone_sibling()
                if pid == 0:
                    _child(frame.body["boot"], control_fd, stdio, sock, supervisor_pid)
                reply = encode_frame(
                    "r", frame.id, {"type": "zygote.spawned", "pid": pid}, reply_to=frame.id
                )
            except Exception as exc:  # report, keep serving
                reply = encode_frame(
                    "x",
                    frame.id,
                    {"code": "internal_error", "message": repr(exc)[:300]},
                    reply_to=frame.id,
                )
            finally:
                for fd in (control_fd, *(stdio or ())):
                    os.close(fd)
            try:
                sock.sendall(reply)
            except (BrokenPipeError, ConnectionResetError):
                return  # the supervisor stopped waiting for this spawn and closed us: exit


def run(fd: int, supervisor_pid: int, modules: Iterable[str] = ()) -> None:
    """Be the zygote on `fd`, a socket to the supervisor `supervisor_pid` (our parent), until
    the supervisor closes it; `modules` are what it preloads besides `BASE` (`lane_preloads`)."""
    gc.disable()  # never on in the zygote (see the module's docstring)
    die_with(supervisor_pid)
    _title.set_title("zygote")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the supervisor's to handle
    # httpx imports its command-line client when it can (rich, pygments and click, if they are
    # installed: over 100 ms); no actor runs it, so its import fails and httpx does without.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    load_base()  # already done if the zygote was forked from the supervisor
    preload = Preload(m for m in modules if _first(m) not in BASE)
    sock = socket.socket(fileno=fd)
    sock.setblocking(True)
    try:
        sock.sendall(encode_frame("e", 1, {"type": "zygote.ready", "pid": os.getpid()}))
    except (BrokenPipeError, ConnectionResetError):
        return  # the supervisor is gone before we were ready (a refused start): exit, as below
    serve(sock, supervisor_pid, preload)


def main() -> None:
    """A zygote of its own (`lineup._early.zygote_argv`: this, with `FD SUPERVISOR_PID` as its
    arguments, its collector off from the first import), which preloads what
    `LINEUP_ZYGOTE_PRELOAD` lists (JSON)."""
    fd, supervisor_pid = int(sys.argv[1]), int(sys.argv[2])
    run(fd, supervisor_pid, json.loads(os.environ.get("LINEUP_ZYGOTE_PRELOAD", "[]")))


if __name__ == "__main__":
    main()
