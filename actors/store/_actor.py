"""The store actor: the only process that opens the database (DESIGN §1, §3).

Theory of operation: `run` opens and migrates `<data_dir>/lineup.db` on a worker thread, starts
the group committer, and only then reports itself started. What the store serves is `TABLE`, one
row per request (`_table`), assembled from each area's `operations.HANDLERS` (`outbox/`,
`conversations/`, `inbox/`, `cursors/`, `audit/`, `tool_calls/`, `interactions/`,
`app_sessions/`, `instances/`, `apps/`, `dead_letters/`, `artifacts/`, `capabilities/`): its
operation and whether it reads, writes, or writes in the sender's name.
Each row's handler awaits its operation through the committer, which answers only after the
operation's transaction has committed — persist, then acknowledge. A request that arrives before
the database is open simply waits in the committer's queue. Only the audit append, the stats and
the dead-letter put have handlers of their own.

Poison is quarantined (issue 11): the first transaction after opening is the start-up sweep
(`dead_letters.sweep`), which moves every row a start-up reader could not decode into the
dead letters, so one bad row never stops the runtime from coming up. The dead letters' summary
(counts by kind, never a body) is kept in `<data_dir>/quarantine.json` for `lineup status`.

The store writes audit rows itself: the bus calls `write_audit` with the rows it would otherwise
send to the store, and other actors send `AuditAppendRequest`s. The row's `actor` is the
channel-bound sender, never what the record claims.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Final

import trio

from lineup.actors.kernel.actor import Actor, ActorContext, handles
from lineup.actors.kernel.bus import Envelope
from lineup.actors.kernel.errors import ErrorCode, LineUpError
from lineup.actors.kernel.identity import ActorKind

from ._committer import Committer
from ._db import Database, open_database
from ._table import Served, ServedByTable
from .app_sessions import operations as app_sessions
from .apps import operations as apps
from .artifacts import operations as artifacts
from .audit import operations as audit
from .capabilities import operations as capabilities
from .capabilities import requests as capability_requests
from .conversations import operations as conversations
from .cursors import operations as cursors
from .dead_letters import operations as dead_letters
from .dead_letters.messages import QUARANTINE_SUMMARY_FILE
from .dead_letters.sweep import sweep_at_start
from .deadline_operations import operations as deadline_operations
from .inbox import operations as inbox
from .instances import operations as instances
from .interactions import operations as interactions
from .messages import (
    AuditAppendReply,
    AuditAppendRequest,
    AuditRecord,
    DeadLetterPutReply,
    DeadLetterPutRequest,
    StoreStatsReply,
    StoreStatsRequest,
)
from .outbox import operations as outbox
from .tool_calls import operations as tool_calls

__all__ = ["StoreActor"]

log = logging.getLogger("lineup.store")

# Every request the store serves by one operation: request, operation, access.
TABLE: Final[tuple[Served, ...]] = (
    *outbox.HANDLERS,
    *conversations.HANDLERS,
    *inbox.HANDLERS,
    *cursors.HANDLERS,
    *audit.HANDLERS,  # appends: `on_audit_append`
    *tool_calls.HANDLERS,
    *interactions.HANDLERS,  # a step may carry its call's step: one transaction
    *app_sessions.HANDLERS,
    *instances.HANDLERS,
    *apps.HANDLERS,
    *dead_letters.HANDLERS,  # puts: `on_dead_letter_put`
    *artifacts.HANDLERS,
    *capabilities.HANDLERS,
    *capability_requests.HANDLERS,
    *deadline_operations.HANDLERS,  # an ending carries its call's step: one transaction
)


class StoreActor(ServedByTable, Actor):
    """Serves the `store.*` protocol: `TABLE`, the audit append and the stats. Never replies
    before the data is committed."""

    kind = ActorKind.STORE
    writes_own_audit = True
    table = TABLE

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
            # Before the committer runs: no request is served from a row the sweep would move.
            count, kinds = await trio.to_thread.run_sync(sweep_at_start, db.conn, time.time())
            await self._write_summary(count, kinds)
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

    async def _append_audit(self, records: list[AuditRecord]) -> None:
        await self._committer.submit(
            lambda conn: audit.audit_append(conn, records, time.time()), write=True
        )

    # ------------------------------------------------------------------ audit

    @handles(AuditAppendRequest)
    async def on_audit_append(self, msg: AuditAppendRequest, env: Envelope) -> AuditAppendReply:
        # Who wrote a row is the channel's bound identity, whatever the record says.
        records = [r.model_copy(update={"actor": env.sender.name}) for r in msg.records]
        await self._append_audit(records)
        return AuditAppendReply(count=len(records))

    async def write_audit(self, records: list[AuditRecord]) -> None:
        """The bus's local audit sink. Never raises: a failure here must not stop the bus."""
        try:
            await self._append_audit(records)
        except LineUpError as exc:
            self.audit_lost += len(records)
            log.error("store.audit_lost count=%d code=%s", len(records), exc.code.value)

    # ------------------------------------------------------------------ dead letters

    @handles(DeadLetterPutRequest)
    async def on_dead_letter_put(
        self, msg: DeadLetterPutRequest, env: Envelope
    ) -> DeadLetterPutReply:
        actor = env.sender.name
        reply = await self._committer.submit(
            lambda conn: dead_letters.dead_letter_put(conn, msg, time.time(), actor=actor),
            write=True,
        )
        if reply.created:
            await self._write_summary(
                *await self._committer.submit(dead_letters.summary, write=False)
            )
        return reply

    async def _write_summary(self, count: int, kinds: dict[str, int]) -> None:
        """`quarantine.json` (atomically: a reader sees the old one or the new one). Never
        raises: `lineup status` then shows the previous summary."""
        document = json.dumps({"count": count, "kinds": kinds}, sort_keys=True)
        path = Path(self.ctx.data_dir) / QUARANTINE_SUMMARY_FILE
        try:
            await trio.to_thread.run_sync(_replace_file, path, document)
        except OSError as exc:
            log.warning("store.summary_not_written error=%s", type(exc).__name__)

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


def _replace_file(path: Path, text: str) -> None:
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(text + "\n")
    os.replace(scratch, path)
