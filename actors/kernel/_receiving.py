"""The bus's receiving half: a channel's reader, and what it does with each frame.

Theory of operation
-------------------
`Receiving` is a mixin of `Bus` (the bus is one concept; this is one of its two halves, kept in
its own module to keep each under ~600 lines). Its methods are the bus's own methods: calling
them costs what it did when they lived in `bus.py` (no seam, no indirection on the hot path).

One reader task per channel (`_read`) takes each batch of frames the channel returns: a reply
fills its request's slot (`_resolve`, decoding the body only if a slot still waits); a request
or an event is checked against the rate budget and the ACL *before* its body is decoded
(`_accept`), then run: a plain function handler inline in the reader (`_start`: no task, no
scheduler trip), an `async def` one in a task of its own (`_complete`), within the bounded
mailbox. When the mailbox is full, requests are parked in the channel's backlog (in order) and
reading goes on, so that replies on the channel still arrive; a full backlog stops the reading
(backpressure). A handler's reply goes out on the channel its request came in on.
"""

from __future__ import annotations

import inspect
import logging
import socket
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Final

import pydantic
import trio

from ._bodies import error_body, refusal_of, to_json
from ._connection import Connection, Envelope, Handler, Mailbox, Outcome, new_envelope
from ._refusals import Refusals
from .acl import refusal
from .channel import Channel
from .control import ChannelOpenedEvent
from .errors import ErrorCode, LineUpError, RemoteProtocolError, describe_failure
from .framing import encode_frame, parse_frame_fields
from .identity import ActorKind, Identity
from .messages import REGISTRY, Message, lookup

__all__ = ["ACL_CACHE_LIMIT", "Receiving"]

log = logging.getLogger("lineup.bus")

ACL_CACHE_LIMIT: Final = 512  # tags whose ACL answer a connection remembers
_SETTLED: Final = (Message, Exception, type(None))  # a handler's outcome that is not awaitable


class Receiving:
    """The receiving half of `Bus` (see the module docstring); not used on its own."""

    # Set by `Bus.__init__`.
    me: Identity
    more_frames: bool
    _handler: Handler
    _mailbox: Mailbox
    _refusals: Refusals
    _nursery: trio.Nursery | None

    if TYPE_CHECKING:  # `Bus`'s own

        def connect(self, identity: Identity, incarnation: int, channel: Channel) -> Connection: ...

        def _close(self, conn: Connection) -> None: ...

    async def _read(self, conn: Connection) -> None:
        receive = conn.channel.receive
        try:
            while True:
                try:
                    payloads = await receive()
                except RemoteProtocolError as exc:
                    await self._refusals.misbehaved(conn, exc.code, None)
                    return
                if not payloads:
                    return
                more = len(payloads)
                for payload in payloads:
                    more -= 1
                    self.more_frames = more > 0
                    try:
                        kind, fid, raw, reply_to, deadline_ms, ikey = parse_frame_fields(payload)
                    except RemoteProtocolError as exc:
                        await self._refusals.misbehaved(conn, exc.code, None)
                        return
                    if reply_to is not None:  # only replies ("r", "x") carry one
                        self._resolve(conn, kind, reply_to, raw)
                    else:
                        await self._accept(conn, kind, fid, raw, deadline_ms, ikey)
        finally:
            self._close(conn)

    def _resolve(self, conn: Connection, kind: str, reply_to: int, raw: dict[str, Any]) -> None:
        slot = conn.pending.get(reply_to)
        if slot is None or slot.done:
            return  # a late reply to a request that gave up
        if kind == "x":
            slot.resolve(error=refusal_of(raw))
            return
        tag = raw.get("type")
        cls = (REGISTRY.get(tag) or lookup(tag)) if type(tag) is str else None
        try:
            if cls is None:
                raise ValueError("unknown reply type")
            slot.resolve(reply=cls.__pydantic_validator__.validate_python(raw))
        except (ValueError, pydantic.ValidationError):
            slot.resolve(error=RemoteProtocolError(ErrorCode.FRAME_MALFORMED, "bad reply body"))

    async def _accept(
        self,
        conn: Connection,
        kind: str,
        fid: int,
        raw: dict[str, Any],
        deadline_ms: float | None,
        ikey: str | None,
    ) -> None:
        sender = conn.identity
        tag = raw.get("type")
        if type(tag) is not str:
            tag = ""
        if conn.rate_limited and not conn.take_token(time.monotonic()):
            await self._refusals.rate_limited(conn, kind, fid, tag)
            return
        try:
            denied = conn.allowed[tag]
        except KeyError:
            denied = refusal(sender, self.me.kind, tag)
            if len(conn.allowed) < ACL_CACHE_LIMIT:
                conn.allowed[tag] = denied
        if denied is not None:
            await self._refusals.refuse(conn, kind, fid, denied, tag)
            return
        cls = REGISTRY.get(tag) or lookup(tag)
        if cls is None:
            await self._refusals.refuse(conn, kind, fid, ErrorCode.UNKNOWN_MESSAGE_TYPE, tag)
            return
        try:
            # `model_validate`, minus its Python wrapper: the same validator, the same checks.
            body = cls.__pydantic_validator__.validate_python(raw)
        except pydantic.ValidationError:
            await self._refusals.refuse(conn, kind, fid, ErrorCode.FRAME_MALFORMED, tag)
            return
        if isinstance(body, ChannelOpenedEvent):
            self._adopt(conn, body)
            return
        env: Envelope = new_envelope(Envelope, (sender, body, fid, kind == "q", ikey, deadline_ms))
        if not conn.backlogged and self._mailbox.try_acquire():
            await self._start(conn, env)  # the hot path: no scheduler trip, no queue
            return
        # The mailbox is full: park it (in order) and keep reading, so that replies on this
        # channel still arrive; only a full backlog stops the reading (backpressure).
        conn.backlogged += 1
        await conn.backlog_send.send(env)

    def _adopt(self, control: Connection, opened: ChannelOpenedEvent) -> None:
        if not control.channel.received_fds:
            log.error("bus.channel_opened_without_fd peer=%s", opened.peer)
            return
        sock = socket.socket(fileno=control.channel.received_fds.popleft())
        try:
            kind = ActorKind(opened.kind)
        except ValueError:
            sock.close()
            return
        self.connect(Identity(kind, opened.peer), opened.incarnation, Channel(sock))

    async def _drain_backlog(self, conn: Connection) -> None:
        async for env in conn.backlog_recv:
            await self._mailbox.acquire()
            conn.backlogged -= 1
            await self._start(conn, env)

    async def _start(self, conn: Connection, env: Envelope) -> None:
        """Run the handler for `env`, holding one mailbox slot until it is done."""
        try:
            outcome: Outcome | Exception = self._handler(env)
        except Exception as exc:
            outcome = exc
        # Replies and refusals first: `isawaitable` is an ABC check, costly on the hot path.
        if not isinstance(outcome, _SETTLED) and inspect.isawaitable(outcome):
            assert self._nursery is not None
            self._nursery.start_soon(self._complete, conn, env, outcome)
            return
        try:
            if env.is_request:  # `_finish`, inline: one coroutine fewer on the hot path
                reply = self._reply_frame(conn, env, outcome)
                try:
                    await conn.channel.send(reply)
                except LineUpError:
                    pass  # the requester is gone: nobody waits for it
            else:
                self._event_handled(env, outcome)
        finally:
            self._mailbox.release()

    async def _complete(
        self, conn: Connection, env: Envelope, pending: Awaitable[Message | None]
    ) -> None:
        try:
            try:
                result: Message | Exception | None = await pending
            except Exception as exc:
                result = exc
            await self._finish(conn, env, result)
        finally:
            self._mailbox.release()

    async def _finish(self, conn: Connection, env: Envelope, result: object) -> None:
        if not env.is_request:
            self._event_handled(env, result)
            return
        # No deadline is imposed on the handler: the caller enforces its own, and a handler's
        # every wait is itself a bounded request. `env.deadline_ms` tells a handler that waits
        # on something else (a user, the network) how long its caller will wait.
        reply = self._reply_frame(conn, env, result)
        try:
            await conn.channel.send(reply)
        except LineUpError:
            pass  # the requester is gone: nobody waits for it

    @staticmethod
    def _event_handled(env: Envelope, result: object) -> None:
        if isinstance(result, Exception):
            log.error(
                "bus.event_handler_failed type=%s error=%s",
                env.body.TYPE,
                describe_failure(result),
            )

    def _reply_frame(self, conn: Connection, env: Envelope, result: object) -> bytes:
        if isinstance(result, Message):
            try:
                return encode_frame(
                    "r",
                    conn.next_id(),
                    to_json(result),
                    reply_to=env.frame_id,
                    max_frame=conn.channel.max_frame,
                )
            except LineUpError as exc:  # too large, too deep: the request fails, not the actor
                log.error("bus.reply_refused type=%s code=%s", env.body.TYPE, exc.code.value)
                result = LineUpError(ErrorCode.HANDLER_FAILED, "reply out of bounds")
        if isinstance(result, LineUpError):
            code, text = result.code, result.message
        else:
            if isinstance(result, Exception):
                log.error(
                    "bus.request_handler_failed type=%s error=%s",
                    env.body.TYPE,
                    describe_failure(result),
                )
            else:
                log.error("bus.request_handler_gave_no_reply type=%s", env.body.TYPE)
            code, text = ErrorCode.INTERNAL_ERROR, ""
        return encode_frame("x", conn.next_id(), error_body(code, text), reply_to=env.frame_id)
