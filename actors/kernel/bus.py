"""The bus: typed request/reply and events over direct, identity-bound channels.

Theory of operation
-------------------
Every process runs one `Bus`. A `Connection` is one channel to one peer whose identity was
bound when the channel was made: by the supervisor when it hands a socket end over
(`supervisor.channel.opened` + SCM_RIGHTS), or by the supervisor itself for the control channels
it owns. Nothing in a frame can change who sent it.

To reach a peer it has no channel to, a bus asks the supervisor to introduce it (the Mojo-broker
model: the supervisor decides from the ACL table whether the channel may exist, creates a
socketpair and gives one end to each side). Frames then go directly, with no hop through the
supervisor.

Inbound requests and events are checked against the ACL *before* their body is decoded; a denied
one is answered with `acl_denied`, audited, and never reaches the actor's handler. A frame that
breaks the protocol (malformed, oversize) closes the channel, is audited, and is reported to the
supervisor, which stops the offender (as Chromium kills a renderer that sends a bad message);
on the supervisor's own bus (a MiniApp's control channel) the report is `on_misbehaved`. A MiniApp
is reported once per channel. Refusals are audited per offender at a bounded rate (the audit
module's `RefusalLedger`: a few rows a second, then one counter row); a MiniApp that keeps sending
frames refused even as policy (`permission_denied`) is reported as well.

Each request gets one reply slot, removed in `finally`: a late reply finds no slot and is
dropped. When a channel dies, every slot on it fails at once with `actor_restarted`, so callers
retry immediately instead of waiting out a deadline. Handlers run concurrently up to a bound
(the mailbox); when it is full the reader stops reading and the peer's writes block
(backpressure, never unbounded memory).

Why one class over two modules: `Bus` is one concept, a process's end of every channel, and
its halves are one loop seen from two sides (a request's slot is filled by the reader; a
handler's reply goes out on the channel the request came in on), sharing the connections, the
slots and the mailbox. The receiving half is a mixin in `_receiving` (the reader, the ACL check
before decoding, the handlers' runs): its methods are `Bus`'s own, so the split costs no call.
The request/reply round trip is the runtime's hottest path (`make bench`), and its steps are
inlined on purpose (`_send` in `_send_request`, `_finish` in `_start`): a seam through it
would put a call on every message. What is not on it lives beside it: a channel's state and
the mailbox (`_connection`), the bodies a frame holds and the error reply (`_bodies`), reply
slots and their deadlines (`_replies`), refusals and misbehaviour (`_refusals`) and the audit
rows' way to the store (`_audit_queue`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import Final, NoReturn, TypeVar

import trio

from ._audit_queue import AuditQueue
from ._bodies import to_json
from ._connection import (
    MINIAPP_CREDIT_LIMIT,
    Connection,
    Envelope,
    Handler,
    Mailbox,
    Outcome,
)
from ._receiving import Receiving
from ._refusals import Refusals
from ._replies import Deadlines, ReplySlot
from .audit import AuditAppendRequest, AuditRecord
from .channel import Channel
from .control import IntroduceReply, IntroduceRequest, PeerMisbehavedEvent
from .errors import (
    ActorRestarted,
    ChannelClosed,
    DeadlineExceeded,
    ErrorCode,
    LineUpError,
    RemoteProtocolError,
)
from .framing import MAX_DEADLINE_MS, encode_frame
from .identity import ActorKind, Identity
from .messages import Message

__all__ = ["DEFAULT_TIMEOUT", "Bus", "Connection", "Envelope", "Handler", "Outcome"]


DEFAULT_TIMEOUT: Final = 10.0  # seconds a request waits for its reply unless told otherwise
MAILBOX_LIMIT: Final = 256  # handlers in flight per process
# Untrusted peers (MiniApps) get tighter bounds than the runtime's own actors: smaller frames,
# and a token bucket on what they may ask per second (`_connection.MINIAPP_RATE`).
MINIAPP_MAX_FRAME: Final = 512 * 1024  # above the largest legitimate write (256 KiB of data)
SUPERVISOR: Final = "supervisor"
STORE: Final = "store"

M = TypeVar("M", bound=Message)


class Bus(Receiving):
    """One per process. Start it with `await nursery.start(bus.run)` before connecting."""

    def __init__(
        self,
        me: Identity,
        handler: Handler,
        *,
        incarnation: int = 0,
        audit_locally: Callable[[list[AuditRecord]], Awaitable[None]] | None = None,
    ) -> None:
        self.me = me
        self.incarnation = incarnation
        self._handler = handler
        self._conns: dict[str, Connection] = {}
        self._intro_locks: dict[str, trio.Lock] = {}
        self._mailbox = Mailbox(MAILBOX_LIMIT)
        self._deadlines = Deadlines()
        self._nursery: trio.Nursery | None = None
        # The store writes its own audit rows instead of sending them to itself.
        self._audit = AuditQueue(me.name, self._audit_to_store, audit_locally)
        self._refusals = Refusals(me.name, self._audit, self._report_misbehaviour)
        # Called (synchronously) when a peer's connection ends; the supervisor hooks this.
        self.on_disconnect: Callable[[Connection], None] | None = None
        # While a handler runs inline: whether more frames of the same read follow the one it
        # handles (a burst), so that it may group its work with theirs (the store's commits).
        self.more_frames = False
        # The supervisor's own bus has nobody to report a misbehaving peer to: it hooks this.
        self.on_misbehaved: Callable[[Connection, ErrorCode], Awaitable[None]] | None = None

    # ------------------------------------------------------------------ lifecycle

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._audit.run)
                nursery.start_soon(self._deadlines.run)
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._nursery = None
            for conn in list(self._conns.values()):
                self._close(conn)

    def connect(self, identity: Identity, incarnation: int, channel: Channel) -> Connection:
        """Adopt a channel to `identity`; replaces (and fails) any older one to the same name."""
        assert self._nursery is not None, "Bus.run must be started first"
        old = self._conns.get(identity.name)
        if old is not None:
            self._close(old)
        if identity.kind is ActorKind.MINIAPP:
            channel.limit_frames(MINIAPP_MAX_FRAME)
        conn = Connection(identity, incarnation, channel, refilled_at=time.monotonic())
        self._conns[identity.name] = conn
        self._nursery.start_soon(self._read, conn)
        self._nursery.start_soon(self._drain_backlog, conn)
        return conn

    def set_handler(self, handler: Handler) -> None:
        """Replace the handler (e.g. with the actor's own `dispatch`, once it exists)."""
        self._handler = handler

    def connection(self, name: str) -> Connection | None:
        conn = self._conns.get(name)
        return conn if conn is not None and not conn.closed.is_set() else None

    def grant(self, peer: str, frames: int) -> None:
        """Let `peer` (a MiniApp) send `frames` more beside its rate budget: the answers to what
        the runtime has just asked of it (a tool call pushed to it), which it did not choose to
        send. Bounded (`MINIAPP_CREDIT_LIMIT`); lost with the channel; a no-op for a peer that
        has no budget or no channel."""
        conn = self._conns.get(peer)
        if conn is not None and conn.rate_limited:
            conn.credit = min(MINIAPP_CREDIT_LIMIT, conn.credit + frames)

    def disconnect(self, name: str) -> None:
        conn = self._conns.get(name)
        if conn is not None:
            self._close(conn)

    # ------------------------------------------------------------------ sending

    async def request(
        self,
        peer: str,
        body: Message,
        *,
        expect: type[M],
        timeout: float = DEFAULT_TIMEOUT,
        idempotency_key: str | None = None,
        retry: bool = False,
    ) -> M:
        """Send `body` to `peer` and return its reply.

        Raises the peer's refusal as `LineUpError(code)`, `ActorRestarted` if the peer died
        with the request in flight (safe to retry at once), `DeadlineExceeded` after `timeout`.
        With `retry=True` an `actor_restarted` is retried at once, within the same deadline
        (only for requests whose handler is idempotent).
        """
        now = trio.current_time()
        deadline = now + timeout
        while True:
            conn = self._conns.get(peer)
            try:
                if conn is None or conn.closed.is_set():
                    return await self._reach_and_request(
                        peer, body, expect, deadline, idempotency_key
                    )
                return await self._send_request(conn, body, expect, now, deadline, idempotency_key)
            except ActorRestarted:
                if not retry:
                    raise
                now = trio.current_time()
                if now >= deadline:
                    raise

    async def _reach_and_request(
        self,
        peer: str,
        body: Message,
        expect: type[M],
        deadline: float,
        idempotency_key: str | None,
    ) -> M:
        conn = await self._reach(peer, deadline)
        return await self._send_request(
            conn, body, expect, trio.current_time(), deadline, idempotency_key
        )

    async def _send_request(
        self,
        conn: Connection,
        body: Message,
        expect: type[M],
        now: float,
        deadline: float,
        idempotency_key: str | None,
    ) -> M:
        fid = conn.next_id()
        slot = ReplySlot(deadline)
        conn.pending[fid] = slot
        try:
            # Clamped to what the wire allows, floored to whole microseconds: a float whose
            # JSON is short (an integer over 1000 is the float nearest that decimal).
            remaining_ms = (deadline - now) * 1000
            if remaining_ms >= MAX_DEADLINE_MS:
                remaining_ms = MAX_DEADLINE_MS
            elif remaining_ms > 0:
                remaining_ms = int(remaining_ms * 1000) / 1000
            else:
                remaining_ms = 0.0
            frame = encode_frame(
                "q",
                fid,
                to_json(body),
                deadline_ms=remaining_ms,
                idempotency_key=idempotency_key,
                max_frame=conn.channel.max_frame,
            )
            try:  # `_send`, inline: one coroutine fewer on the hot path
                await conn.channel.send(frame, deadline=deadline)
            except ChannelClosed as exc:
                await self._gone(conn, exc)
            if not slot.done:
                self._deadlines.add(slot)
                await slot.wait()
        finally:
            slot.abandon()
            conn.pending.pop(fid, None)
        reply, error = slot.reply, slot.error
        slot.reply = slot.error = None  # the slot may outlive the request (see Deadlines)
        if error is not None:
            raise error
        if not isinstance(reply, expect):
            raise RemoteProtocolError(
                ErrorCode.FRAME_MALFORMED, f"{conn.identity.name} answered {type(reply).__name__}"
            )
        return reply

    async def notify(
        self,
        peer: str,
        body: Message,
        *,
        fds: tuple[int, ...] = (),
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        """Send an event (no reply). Raises ActorRestarted if the channel is gone."""
        deadline = trio.current_time() + timeout
        conn = await self._reach(peer, deadline)
        frame = encode_frame("e", conn.next_id(), to_json(body), max_frame=conn.channel.max_frame)
        await self._send(conn, frame, fds, deadline=deadline)

    async def tell(
        self, peer: str, body: Message, *, timeout: float = DEFAULT_TIMEOUT
    ) -> ErrorCode | None:
        """`notify`, for an event that is a fast path only (the peer also learns it another
        way, e.g. from the store when it starts): None once sent, else the refusal's code.
        Never raises LineUpError. A channel found dead is tried once more, at once: the
        event reached no one, and the peer's new process (one that started before the event
        was written, so never listed what it says) gets it on a new channel."""
        deadline = trio.current_time() + timeout
        try:
            try:
                await self.notify(peer, body, timeout=timeout)
            except ActorRestarted:
                await self.notify(peer, body, timeout=max(0.0, deadline - trio.current_time()))
        except LineUpError as exc:
            return exc.code
        return None

    async def _reach(self, peer: str, deadline: float) -> Connection:
        """The channel to `peer`, asking the supervisor for one if there is none yet."""
        conn = self.connection(peer)
        if conn is not None:
            return conn  # the hot path: no cancel scope
        with trio.move_on_at(deadline):
            return await self._connection(peer, deadline)
        raise DeadlineExceeded(ErrorCode.DEADLINE_EXCEEDED, f"could not reach {peer} in time")

    async def _send(
        self,
        conn: Connection,
        data: bytes,
        fds: tuple[int, ...] = (),
        *,
        deadline: float = math.inf,
    ) -> None:
        try:
            await conn.channel.send(data, fds, deadline=deadline)
        except ChannelClosed as exc:
            await self._gone(conn, exc)

    async def _gone(self, conn: Connection, exc: ChannelClosed) -> NoReturn:
        # The reader may not have seen the EOF yet: close now, so that a retry re-introduces
        # instead of finding the dead channel again; and yield, so that a retry loop cannot
        # starve the scheduler (the send's fast path never yields).
        self._close(conn)
        await trio.lowlevel.checkpoint()
        raise ActorRestarted(ErrorCode.ACTOR_RESTARTED, f"{conn.identity.name} went away") from exc

    async def _connection(self, peer: str, deadline: float) -> Connection:
        conn = self.connection(peer)
        if conn is not None:
            return conn
        if peer == SUPERVISOR or self.me.kind is ActorKind.SUPERVISOR:
            raise LineUpError(ErrorCode.ACTOR_UNAVAILABLE, f"no channel to {peer}")
        lock = self._intro_locks.setdefault(peer, trio.Lock())
        async with lock:
            conn = self.connection(peer)
            if conn is None:
                timeout = max(0.0, deadline - trio.current_time())
                await self.request(
                    SUPERVISOR, IntroduceRequest(peer=peer), expect=IntroduceReply, timeout=timeout
                )
                # The control channel is ordered: `channel.opened` was read before the reply.
                conn = self.connection(peer)
            if conn is None:
                raise ActorRestarted(ErrorCode.ACTOR_RESTARTED, f"{peer} went away")
            return conn

    async def _report_misbehaviour(self, conn: Connection, code: ErrorCode) -> None:
        if conn.reported or conn.identity.kind is ActorKind.SUPERVISOR:
            return
        conn.reported = True
        if self.me.kind is ActorKind.SUPERVISOR:
            if self.on_misbehaved is not None:
                await self.on_misbehaved(conn, code)
            return
        event = PeerMisbehavedEvent(
            peer=conn.identity.name, incarnation=conn.incarnation, code=code.value
        )
        try:
            await self.notify(SUPERVISOR, event, timeout=1.0)
        except LineUpError:
            conn.reported = False  # not heard: its next offence is reported again

    def _close(self, conn: Connection) -> None:
        if conn.closed.is_set():
            return
        conn.closed.set()
        conn.channel.close()
        conn.backlog_send.close()
        if self._conns.get(conn.identity.name) is conn:
            del self._conns[conn.identity.name]
        for slot in list(conn.pending.values()):
            slot.resolve(
                error=ActorRestarted(ErrorCode.ACTOR_RESTARTED, f"{conn.identity.name} went away")
            )
        if self.on_disconnect is not None:
            self.on_disconnect(conn)

    # ------------------------------------------------------------------ audit

    @property
    def audit_locally(self) -> Callable[[list[AuditRecord]], Awaitable[None]] | None:
        """Where this process writes its audit rows itself (the store's), else None."""
        return self._audit.audit_locally

    @audit_locally.setter
    def audit_locally(self, write: Callable[[list[AuditRecord]], Awaitable[None]] | None) -> None:
        self._audit.audit_locally = write

    @property
    def audit_dropped(self) -> int:
        """Audit rows this process could not queue or write."""
        return self._audit.dropped

    def audit(self, record: AuditRecord) -> None:
        """Queue an audit row for the store. Never blocks; counts what it must drop."""
        self._audit.put(record)

    def audit_refusal(self, record: AuditRecord) -> bool:
        """Audit a refusal of `record.peer`'s (the offender) within the per-offender bound: the
        first few of a window as rows, the rest as one counter row at the window's end. Never
        blocks. Returns whether the offender keeps being refused (past the bound in one window:
        a MiniApp's bus then has it stopped)."""
        return self._audit.refusal(record)

    async def _audit_to_store(self, request: AuditAppendRequest) -> None:
        await self.request(STORE, request, expect=Message, timeout=5.0)
