"""What a bus does with a frame it will not take: the error reply, the audit row, and the report
of a peer that breaks its contract.

A refused request gets an error reply (`_bodies.error_body`); a refused event gets none. Every
refusal is audited through the `AuditQueue`, within the bound per offender, except a MiniApp's
requests beyond its rate, audited once a second (a flood must not become a flood of audit rows).
A MiniApp whose frame is refused for anything but policy (`permission_denied`), or that keeps
being refused even as policy, is reported as misbehaving: `report` is the bus's, which tells
the supervisor (or, on the supervisor's own bus, its `on_misbehaved`), once per channel.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from ._audit_queue import AuditQueue
from ._bodies import error_body
from ._connection import Connection
from .audit import AuditRecord
from .errors import ErrorCode, LineUpError
from .framing import encode_frame
from .identity import ActorKind

__all__ = ["Refusals"]

log = logging.getLogger("lineup.bus")


class Refusals:
    """The refusals of the bus of the process `me` (see the module's docstring)."""

    def __init__(
        self,
        me: str,
        audit: AuditQueue,
        report: Callable[[Connection, ErrorCode], Awaitable[None]],
    ) -> None:
        self._me = me
        self._audit = audit
        self._report = report

    async def refuse(
        self, conn: Connection, kind: str, fid: int, code: ErrorCode, tag: str
    ) -> None:
        persistent = self._audit.refusal(self.record(conn, code, tag[:200] or None))
        if kind == "q":
            with contextlib.suppress(LineUpError):
                await conn.channel.send(
                    encode_frame("x", conn.next_id(), error_body(code), reply_to=fid)
                )
        if conn.identity.kind is ActorKind.MINIAPP and (
            persistent or code is not ErrorCode.PERMISSION_DENIED
        ):
            # Untrusted code that breaks its contract is stopped, not argued with. (A request
            # its kind may make but it may not, `permission_denied`, is policy: only refused,
            # unless it keeps asking.)
            await self._report(conn, code)

    def record(self, conn: Connection, code: ErrorCode, tag: str | None) -> AuditRecord:
        return AuditRecord(
            event=f"bus.{code.value}",
            actor=self._me,
            peer=conn.identity.name,
            code=code.value,
            message_type=tag,
        )

    async def rate_limited(self, conn: Connection, kind: str, fid: int, tag: str) -> None:
        """Refuse what a MiniApp sends beyond its rate; audited once a second, not per frame
        (a flood must not become a flood of audit rows)."""
        now = time.monotonic()
        if now - conn.limited_audited_at >= 1.0:
            conn.limited_audited_at = now
            self._audit.put(
                AuditRecord(
                    event="bus.rate_limited",
                    actor=self._me,
                    peer=conn.identity.name,
                    code=ErrorCode.RATE_LIMITED.value,
                    message_type=tag[:200] or None,
                )
            )
        if kind == "q":
            with contextlib.suppress(LineUpError):
                await conn.channel.send(
                    encode_frame(
                        "x", conn.next_id(), error_body(ErrorCode.RATE_LIMITED), reply_to=fid
                    )
                )

    async def misbehaved(self, conn: Connection, code: ErrorCode, tag: str | None) -> None:
        self._audit.refusal(self.record(conn, code, tag))
        log.warning("bus.peer_misbehaved peer=%s code=%s", conn.identity.name, code.value)
        await self._report(conn, code)
