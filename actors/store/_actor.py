"""The store actor: the only process that opens the database (DESIGN §1, §3).

Theory of operation: `run` opens and migrates `<data_dir>/lineup.db` on a worker thread, starts
the group committer, and only then reports itself started. Every handler is a thin shell: it
turns its request into one operation (`_queries`, `_conversations`, and for the runtime's
records `_tool_calls`, `_instances`, `_app_data` via `_record_handlers`) and awaits it through the
committer, which answers only after the operation's transaction has committed — persist, then
acknowledge. A request that arrives before the database is open simply waits in the committer's
queue.

The store writes audit rows itself: the bus calls `write_audit` with the rows it would otherwise
send to the store, and other actors send `AuditAppendRequest`s. The row's `actor` is the
channel-bound sender, never what the record claims.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Final, TypeVar

import trio

from lineup.actors.kernel.actor import Actor, ActorContext, handles
from lineup.actors.kernel.bus import Envelope
from lineup.actors.kernel.errors import ErrorCode, LineUpError
from lineup.actors.kernel.identity import ActorKind

from . import _conversations as c
from . import _queries as q
from ._committer import Committer
from ._db import Connection, Database, open_database
from ._record_handlers import RecordHandlers
from .messages import (
    AuditAppendReply,
    AuditAppendRequest,
    AuditQueryReply,
    AuditQueryRequest,
    AuditRecord,
    ConversationHistoryReply,
    ConversationHistoryRequest,
    ConversationMessageReply,
    ConversationMessageRequest,
    ConversationReceiveManyReply,
    ConversationReceiveManyRequest,
    ConversationReceiveReply,
    ConversationReceiveRequest,
    ConversationSendReply,
    ConversationSendRequest,
    CursorGetReply,
    CursorGetRequest,
    CursorSetReply,
    CursorSetRequest,
    InboxAckManyReply,
    InboxAckManyRequest,
    InboxAckReply,
    InboxAckRequest,
    InboxListReply,
    InboxListRequest,
    InboxPutReply,
    InboxPutRequest,
    OutboxAckReply,
    OutboxAckRequest,
    OutboxAppendReply,
    OutboxAppendRequest,
    OutboxFailReply,
    OutboxFailRequest,
    OutboxPendingReply,
    OutboxPendingRequest,
    OutboxRetryReply,
    OutboxRetryRequest,
    StoreStatsReply,
    StoreStatsRequest,
)

__all__ = ["StoreActor"]

log = logging.getLogger("lineup.store")

R = TypeVar("R")
Q = TypeVar("Q")

READ: Final = False
WRITE: Final = True


class StoreActor(RecordHandlers, Actor):
    """Serves the `store.*` protocol. Never replies before the data is committed. The handlers
    for tool calls, instances, session data, registry and inventory are in `RecordHandlers`."""

    kind = ActorKind.STORE
    writes_own_audit = True

    def __init__(self, ctx: ActorContext) -> None:
        super().__init__(ctx)
        self._committer = Committer()
        self._db: Database | None = None
        self.audit_lost = 0  # rows the bus handed us that could not be written

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Open the database, start committing, then report started. Raises
        `LineUpError(store_unavailable)` if the database cannot be opened or migrated."""
        db = await trio.to_thread.run_sync(open_database, self.ctx.data_dir, self.ctx.config)
        self._db = db
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self._committer.run, db.conn)
                task_status.started()
        finally:
            # The committer has stopped (its last batch finished), so nothing else uses the
            # connection; closing it checkpoints the WAL.
            self._db = None
            try:
                db.close()
            except LineUpError:
                log.warning("store.close_failed")

    async def _apply(
        self, query: Callable[[Connection, Q, float], R], request: Q, *, write: bool
    ) -> R:
        return await self._committer.submit(
            lambda conn: query(conn, request, time.time()), write=write
        )

    # ------------------------------------------------------------------ outbox

    @handles(OutboxAppendRequest)
    async def on_outbox_append(self, msg: OutboxAppendRequest, env: Envelope) -> OutboxAppendReply:
        return await self._apply(q.outbox_append, msg, write=WRITE)

    @handles(OutboxPendingRequest)
    async def on_outbox_pending(
        self, msg: OutboxPendingRequest, env: Envelope
    ) -> OutboxPendingReply:
        return await self._apply(q.outbox_pending, msg, write=READ)

    @handles(OutboxAckRequest)
    async def on_outbox_ack(self, msg: OutboxAckRequest, env: Envelope) -> OutboxAckReply:
        return await self._write_as(c.outbox_ack, msg, env)  # may complete a tool call

    @handles(OutboxFailRequest)
    async def on_outbox_fail(self, msg: OutboxFailRequest, env: Envelope) -> OutboxFailReply:
        return await self._write_as(c.outbox_fail, msg, env)  # may fail a tool call

    @handles(OutboxRetryRequest)
    async def on_outbox_retry(self, msg: OutboxRetryRequest, env: Envelope) -> OutboxRetryReply:
        return await self._apply(c.outbox_retry, msg, write=WRITE)

    # ------------------------------------------------------------------ conversations

    @handles(ConversationReceiveRequest)
    async def on_conversation_receive(
        self, msg: ConversationReceiveRequest, env: Envelope
    ) -> ConversationReceiveReply:
        return await self._apply(c.conversation_receive, msg, write=WRITE)

    @handles(ConversationReceiveManyRequest)
    async def on_conversation_receive_many(
        self, msg: ConversationReceiveManyRequest, env: Envelope
    ) -> ConversationReceiveManyReply:
        return await self._apply(c.conversation_receive_many, msg, write=WRITE)

    @handles(ConversationSendRequest)
    async def on_conversation_send(
        self, msg: ConversationSendRequest, env: Envelope
    ) -> ConversationSendReply:
        return await self._apply(c.conversation_send, msg, write=WRITE)

    @handles(ConversationHistoryRequest)
    async def on_conversation_history(
        self, msg: ConversationHistoryRequest, env: Envelope
    ) -> ConversationHistoryReply:
        return await self._apply(c.conversation_history, msg, write=READ)

    @handles(ConversationMessageRequest)
    async def on_conversation_message(
        self, msg: ConversationMessageRequest, env: Envelope
    ) -> ConversationMessageReply:
        return await self._apply(c.conversation_message, msg, write=READ)

    # ------------------------------------------------------------------ app inboxes

    @handles(InboxPutRequest)
    async def on_inbox_put(self, msg: InboxPutRequest, env: Envelope) -> InboxPutReply:
        return await self._apply(q.inbox_put, msg, write=WRITE)

    @handles(InboxListRequest)
    async def on_inbox_list(self, msg: InboxListRequest, env: Envelope) -> InboxListReply:
        return await self._apply(q.inbox_list, msg, write=READ)

    @handles(InboxAckRequest)
    async def on_inbox_ack(self, msg: InboxAckRequest, env: Envelope) -> InboxAckReply:
        return await self._apply(q.inbox_ack, msg, write=WRITE)

    @handles(InboxAckManyRequest)
    async def on_inbox_ack_many(self, msg: InboxAckManyRequest, env: Envelope) -> InboxAckManyReply:
        return await self._apply(q.inbox_ack_many, msg, write=WRITE)

    # ------------------------------------------------------------------ cursors

    @handles(CursorGetRequest)
    async def on_cursor_get(self, msg: CursorGetRequest, env: Envelope) -> CursorGetReply:
        return await self._apply(q.cursor_get, msg, write=READ)

    @handles(CursorSetRequest)
    async def on_cursor_set(self, msg: CursorSetRequest, env: Envelope) -> CursorSetReply:
        return await self._apply(q.cursor_set, msg, write=WRITE)

    # ------------------------------------------------------------------ audit

    @handles(AuditAppendRequest)
    async def on_audit_append(self, msg: AuditAppendRequest, env: Envelope) -> AuditAppendReply:
        # Who wrote a row is the channel's bound identity, whatever the record says.
        records = [r.model_copy(update={"actor": env.sender.name}) for r in msg.records]
        await self._apply(q.audit_append, records, write=WRITE)
        return AuditAppendReply(count=len(records))

    @handles(AuditQueryRequest)
    async def on_audit_query(self, msg: AuditQueryRequest, env: Envelope) -> AuditQueryReply:
        return await self._apply(q.audit_query, msg, write=READ)

    async def write_audit(self, records: list[AuditRecord]) -> None:
        """The bus's local audit sink. Never raises: a failure here must not stop the bus."""
        try:
            await self._apply(q.audit_append, records, write=WRITE)
        except LineUpError as exc:
            self.audit_lost += len(records)
            log.error("store.audit_lost count=%d code=%s", len(records), exc.code.value)

    # ------------------------------------------------------------------ stats

    @handles(StoreStatsRequest)
    async def on_stats(self, msg: StoreStatsRequest, env: Envelope) -> StoreStatsReply:
        db = self._db
        if db is None:
            raise LineUpError(ErrorCode.STORE_UNAVAILABLE, "database not open")
        stats = self._committer.stats
        return StoreStatsReply(
            commits=stats.commits,
            batches=stats.batches,
            max_batch=stats.max_batch,
            writes=stats.writes,
            ops=stats.ops,
            schema_version=db.schema_version,
            synchronous=db.synchronous,
        )
