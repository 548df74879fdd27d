"""A channel: one connected Unix stream socket carrying length-prefixed frames (DESIGN §2).

Partial reads are handled by the sans-IO `FrameDecoder`; partial writes by looping under a send
lock so concurrent senders never interleave bytes (a frame the kernel takes whole at once, with
nobody else mid-frame, needs no lock: nothing can run between its start and its end). A control
channel may also carry file descriptors (SCM_RIGHTS): they queue up in arrival order and are
claimed by the frame that announced them.
"""

from __future__ import annotations

import array
import math
import os
import socket
from collections import deque
from collections.abc import Sequence
from typing import Final

import trio
from trio.lowlevel import wait_readable

from .errors import ChannelClosed, DeadlineExceeded, ErrorCode
from .framing import DEFAULT_MAX_FRAME, FrameDecoder

__all__ = ["Channel", "channel_pair"]

# Below glibc's mmap threshold (128 KiB): a larger `recv` buffer is mmap'd and unmapped on every
# read, which costs more than the read (measured: ~13 µs of a ~1.5 µs small read).
_RECV_SIZE: Final = 64 * 1024
_MAX_FDS_PER_MESSAGE: Final = 8
_ANC_SIZE: Final = socket.CMSG_SPACE(_MAX_FDS_PER_MESSAGE * array.array("i").itemsize)
_FAIRNESS: Final = 16  # reads between forced checkpoints


class Channel:
    """Owns its socket. `receive()` returns the next batch of frame payloads, or [] at EOF."""

    def __init__(
        self, sock: socket.socket, *, max_frame: int = DEFAULT_MAX_FRAME, carries_fds: bool = False
    ) -> None:
        sock.setblocking(False)
        self._raw = sock
        self._fd = sock.fileno()
        self._decoder = FrameDecoder(max_frame)
        self._send_max = max_frame
        self._send_lock = trio.Lock()
        self._carries_fds = carries_fds
        self.received_fds: deque[int] = deque()
        self.closed = False
        self._reads = 0
        self._drained = False  # the last read found the socket empty

    @classmethod
    def from_fd(cls, fd: int, **kwargs: bool | int) -> Channel:
        return cls(socket.socket(fileno=fd), **kwargs)  # type: ignore[arg-type]

    def limit_frames(self, max_frame: int) -> None:
        """Lower the limit on *incoming* frames (for a peer trusted less): a larger one closes
        the channel. What we send is bounded by `max_frame`, unchanged."""
        self._decoder.max_frame = min(self._decoder.max_frame, max_frame)

    @property
    def max_frame(self) -> int:
        """The largest frame this side sends."""
        return self._send_max

    def fileno(self) -> int:
        return self._raw.fileno()

    async def send(
        self, data: bytes, fds: Sequence[int] = (), *, deadline: float = math.inf
    ) -> None:
        """Send whole frames. Raises ChannelClosed if the peer is gone, DeadlineExceeded if
        the channel stays full (a slow receiver's backpressure) until `deadline`.

        Hot path: a send that the kernel accepts at once costs no trip through the scheduler
        (trio's socket methods always yield); only the waits below are cancellable, and only
        they pay for a cancel scope.
        """
        if self.closed:
            raise ChannelClosed(ErrorCode.ACTOR_RESTARTED, "channel closed")
        lock = self._send_lock
        sent = 0
        if not fds and not lock.locked():
            # The hot path: nobody is mid-frame, and a frame the kernel takes whole needs no
            # lock at all (nothing here yields, so no other sender can run in between).
            try:
                sent = self._raw.send(data)
            except BlockingIOError:
                sent = 0
            except OSError as exc:
                raise ChannelClosed(ErrorCode.ACTOR_RESTARTED, "channel closed") from exc
            if sent == len(data):
                return
        view = memoryview(data)[sent:]  # the rest goes out under the lock, waiting as needed
        sock = self._raw
        acquired = False
        try:
            lock.acquire_nowait()  # `async with lock` would always yield to the scheduler
        except trio.WouldBlock:
            with trio.move_on_at(deadline):
                await lock.acquire()
                acquired = True
            if not acquired:
                raise DeadlineExceeded(ErrorCode.DEADLINE_EXCEEDED, "channel busy") from None
        try:
            anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
            while view:
                try:
                    sent = sock.sendmsg([view], anc) if anc else sock.send(view)
                except BlockingIOError:
                    with trio.move_on_at(deadline):
                        await trio.lowlevel.wait_writable(sock)
                        continue
                    raise DeadlineExceeded(ErrorCode.DEADLINE_EXCEEDED, "channel full") from None
                view, anc = view[sent:], []
        except (OSError, trio.ClosedResourceError) as exc:
            raise ChannelClosed(ErrorCode.ACTOR_RESTARTED, "channel closed") from exc
        except BaseException:
            if 0 < len(view) < len(data):
                self.close()  # interrupted mid-frame: the framing is lost for good
            raise
        finally:
            lock.release()

    async def receive(self) -> list[bytes]:
        """Next frame payloads; [] at EOF. Raises RemoteProtocolError on a bad length.

        Reads without a scheduler trip while data is waiting, but checkpoints every
        `_FAIRNESS` reads so a flooding peer cannot starve the other tasks of this process.
        After a read that emptied the socket it waits for more before reading again: trying
        first would almost always cost a failed read (a syscall and an exception) for nothing.
        """
        sock = self._raw
        while True:
            self._reads += 1
            if self._drained or self._reads % _FAIRNESS == 0:
                if self.closed:  # the fd's number may already belong to another file
                    return []
                try:
                    await wait_readable(self._fd)  # the int: trio would call fileno() again
                except trio.ClosedResourceError:
                    return []
            try:
                if self._carries_fds:
                    data, anc, _flags, _addr = sock.recvmsg(_RECV_SIZE, _ANC_SIZE)
                    self._collect_fds(anc)
                    self._drained = False
                else:
                    data = sock.recv(_RECV_SIZE)
                    # A short read took all there was (a stream socket's read spans its queued
                    # segments; one that passes fds stops at each, so it never counts).
                    self._drained = len(data) < _RECV_SIZE
            except BlockingIOError:
                self._drained = True
                continue
            except OSError:
                return []
            if not data:
                return []
            frames = self._decoder.feed(data)
            if frames:
                return frames

    def _collect_fds(self, anc: list[tuple[int, int, bytes]]) -> None:
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds = array.array("i")
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
                self.received_fds.extend(fds)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            # Wake any task blocked on this socket (it sees ClosedResourceError) before closing.
            trio.lowlevel.notify_closing(self._raw)
            self._raw.close()
            while self.received_fds:
                os.close(self.received_fds.popleft())


def channel_pair() -> tuple[socket.socket, socket.socket]:
    """A fresh connected pair; both ends close-on-exec (children get them by fd passing)."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
