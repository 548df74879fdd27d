"""The supervisor's side of the zygote: start it, ask it for children, restart it if it dies.

A tree may give its zygote lanes: each lane is one more zygote process, which preloads and
forks the children whose target's package it names, while the first zygote does all others.
The lanes load their modules side by side (each on a core of its own), where one zygote would
import them one after another; every lane is forked from the supervisor with `BASE` loaded
(`lineup._early`), or started, and restarted, as a fresh interpreter on its own.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from typing import Any, Final

import trio

from lineup._early import ZygoteProcess, take_zygote, zygote_argv
from lineup.actors.kernel import Channel, ErrorCode, LineUpError, encode_frame, parse_frame

from ._zygote import entries_for, lane_preloads

__all__ = ["Zygote"]

ZYGOTE_START_TIMEOUT: Final = 15.0
# A fork answers in milliseconds, but while the tree starts a spawn also imports its target's
# package, which on a loaded machine takes seconds: the bound is for a hung zygote, not a slow
# one (a dead one is seen at once, as EOF).
SPAWN_TIMEOUT: Final = 15.0


class Zygote:
    """The tree's zygote: `preload` names the modules it loads for the tree's children, each of
    `lanes` the modules of one more zygote (see the module's docstring)."""

    def __init__(
        self, preload: tuple[str, ...] = (), lanes: tuple[tuple[str, ...], ...] = ()
    ) -> None:
        self._lanes = [_Lane(modules) for modules in lane_preloads(preload, lanes)]

    @property
    def pid(self) -> int | None:
        """The first zygote's (`lineup status` shows one)."""
        return self._lanes[0].pid

    async def start(self) -> None:
        """Start every zygote not already running (one may serve tree after tree: see
        `Supervisor(zygote=…)`)."""
        starting = [lane for lane in self._lanes if not lane.running]
        for lane in starting:  # all at once: each preloads while the others start
            lane.launch()
        for lane in starting:
            await lane.wait_ready()

    async def spawn(
        self, boot: dict[str, Any], control: socket.socket, stdio: tuple[int, int] | None = None
    ) -> int:
        """Fork a child running `boot`, with `control` as its control channel and, if given,
        `stdio` (two writable descriptors, not closed here) as its stdout and stderr instead of
        the runtime's, by the lane that names its target's package (or the first). Returns
        its pid."""
        lane = self._lanes[self.lane_of(str(boot.get("target", "")))]
        return await lane.spawn(boot, control, stdio)

    def lane_of(self, target: str) -> int:
        """Which zygote forks children of `target` (`pkg:Attr`): 0, the first, or a lane's."""
        lanes = enumerate(self._lanes[1:], start=1)
        return next((i for i, lane in lanes if entries_for(lane.modules, target)), 0)

    async def preload_all(self) -> None:
        """Have every zygote import the rest of its preload, between spawns (once the tree is
        ready: until then each imports only what each spawn needs)."""
        for lane in self._lanes:
            await lane.preload_all()

    async def stop(self) -> None:
        """Stop every zygote. Shielded and bounded."""
        with trio.CancelScope(shield=True):
            for lane in self._lanes:
                await lane.stop()


class _Lane:
    """One zygote process, which preloads `modules` besides `BASE`."""

    def __init__(self, modules: tuple[str, ...]) -> None:
        self.modules = modules
        self._process: ZygoteProcess | None = None
        self._pidfd: int | None = None
        self._channel: Channel | None = None
        self._lock = trio.Lock()
        self._ids = 1
        self._preload_all = False  # once the tree is ready: the zygote loads all it preloads
        self.pid: int | None = None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    async def start(self) -> None:
        self.launch()
        await self.wait_ready()

    def launch(self) -> None:
        """Adopt the early zygote of these modules, or start a fresh one."""
        early = take_zygote(self.modules)
        if early is not None:
            self._process, ours = early  # forked before our imports: it preloaded meanwhile
        else:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            env = dict(os.environ, LINEUP_ZYGOTE_PRELOAD=json.dumps(list(self.modules)))
            # Started from *this* thread, never a worker thread (as trio's open_process would):
            # the zygote and every child it forks (CLONE_PARENT) have this thread as parent,
            # and PR_SET_PDEATHSIG fires when the parent *thread* exits — an idle worker thread
            # retiring would SIGKILL the whole tree. Popen of a tiny argv costs a few ms, once.
            # (Not a fork: trio is running here, and its loop must not be copied.)
            self._process = subprocess.Popen(
                zygote_argv(theirs.fileno()),
                pass_fds=(theirs.fileno(),),
                env=env,
                stdin=subprocess.DEVNULL,
            )
            theirs.close()
        self._pidfd = os.pidfd_open(self._process.pid)
        self._channel = Channel(ours)

    async def wait_ready(self) -> None:
        assert self._process is not None
        assert self._channel is not None
        with trio.fail_after(ZYGOTE_START_TIMEOUT):
            frames = await self._channel.receive()
        if not frames or parse_frame(frames[0]).body.get("type") != "zygote.ready":
            raise LineUpError(ErrorCode.INTERNAL_ERROR, "the zygote failed to start")
        self.pid = self._process.pid
        if self._preload_all:  # a zygote restarted after the tree was ready
            await self._send_preload()

    async def preload_all(self) -> None:
        async with self._lock:
            self._preload_all = True
            if self._channel is not None:
                await self._send_preload()

    async def _send_preload(self) -> None:
        assert self._channel is not None
        self._ids += 1
        frame = encode_frame("e", self._ids, {"type": "zygote.preload"})
        try:
            with trio.fail_after(SPAWN_TIMEOUT):
                await self._channel.send(frame)
        except (LineUpError, trio.TooSlowError):
            pass  # it died meanwhile: the next spawn restarts it, and tells the new one

    async def spawn(
        self, boot: dict[str, Any], control: socket.socket, stdio: tuple[int, int] | None = None
    ) -> int:
        async with self._lock:
            if self._process is None or self._process.poll() is not None:
                await self._restart()
            try:
                return await self._spawn(boot, control, stdio)
            except LineUpError as exc:
                if exc.code is not ErrorCode.ACTOR_RESTARTED:
                    raise
            await self._restart()  # the zygote died under us: one fresh try
            return await self._spawn(boot, control, stdio)

    async def _spawn(
        self, boot: dict[str, Any], control: socket.socket, stdio: tuple[int, int] | None
    ) -> int:
        assert self._channel is not None
        self._ids += 1
        body = {"type": "zygote.spawn", "boot": boot, "stdio": stdio is not None}
        request = encode_frame("q", self._ids, body)
        try:
            with trio.fail_after(SPAWN_TIMEOUT):
                await self._channel.send(request, fds=(control.fileno(), *(stdio or ())))
                frames = await self._channel.receive()
        except trio.TooSlowError:
            # Its answer may still come, and would be taken for the next spawn's (the pid of
            # another child): this zygote is done with; the next spawn starts a fresh one.
            await self.stop()
            raise LineUpError(ErrorCode.DEADLINE_EXCEEDED, "the zygote did not answer") from None
        if not frames:
            raise LineUpError(ErrorCode.ACTOR_RESTARTED, "zygote closed")
        reply = parse_frame(frames[0])
        if reply.kind != "r":
            raise LineUpError(ErrorCode.INTERNAL_ERROR, str(reply.body.get("message", "")))
        pid = reply.body["pid"]
        assert isinstance(pid, int)
        return pid

    async def _restart(self) -> None:
        await self.stop()
        await self.start()

    async def stop(self) -> None:
        """Close the zygote's socket (it exits on EOF); kill it if it lingers. Bounded."""
        with trio.CancelScope(shield=True):
            if self._channel is not None:
                self._channel.close()
                self._channel = None
            process, self._process = self._process, None
            pidfd, self._pidfd = self._pidfd, None
            if process is None or pidfd is None:
                return
            with trio.move_on_after(1.0):
                await trio.lowlevel.wait_readable(pidfd)
            if process.poll() is None:
                process.kill()
                await trio.lowlevel.wait_readable(pidfd)
            process.wait()  # reaps at once: it has exited
            os.close(pidfd)
