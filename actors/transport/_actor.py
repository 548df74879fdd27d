"""The transport: the only process that talks to the AppServer or holds its token.

Theory of operation
-------------------
Two loops share one login. The *sync loop* long-polls `GET /v1/sync` from the cursor the store
keeps, hands each page to the router, and advances the persisted cursor only once the router
has persisted the page: a SIGKILL anywhere replays at most the last page, which the router
dedupes by message id. The cursor goes to the router with the page, which commits it with the
page's last texts (one commit for both) when the page ends with texts; otherwise the transport
writes it once the router answered. The next page is fetched while one is persisted (never persisted
before it), so a burst costs the AppServer's answers or the router's transactions, not both;
but a page that finds the sync loop idle (one message, the latency a user waits for) is handed
to the router before the next long poll is asked: that request's cost (an HTTP exchange, and
the AppServer's work on it) would otherwise come first, on the message's path.
The *outbox loop* drains the store's outbox in order, one POST at a time, with the outbox id
as `Idempotency-Key`, an inventory ahead of the rest (the Agent's calls name its revision: one
learnt behind a backlog of results would only be refused as stale). A row is acknowledged in
the store only once the AppServer has answered it, but by a task of its own while the next
row is POSTed, so a backlog drains at the pace of its POSTs, not of POST + store + router in
series. A row the AppServer already took is answered the same again and stored nothing, so a
crash between its POST and the store's acknowledgement costs a repeat, never a duplicate (and
never a reordering: what is resent was sent before). Failures back off exponentially with
jitter, capped.

Nothing the AppServer answers can stop this actor: the client (`_client.py`) turns every
malformed answer into one `LinkFailure` with a reason code, shown beside the state. An
envelope of a page that breaks the wire's limits (too deep, too large, not JSON) is refused
here with its code and an audit row, and the cursor moves past it: it costs itself, nothing
more, and it is not safe to hand on. Every other envelope is parsed here, once, by the wire's
own model (`lineup.wire.agent_envelope`), and goes to the router as that model, in the page's
order and in batches that fit a bus frame; one the model refuses (its version, type or shape)
goes in its place as its refusal (`RefusedEnvelope`: its code, id and type, never its body),
which the router answers and audits as every refusal of its filter chain. So the limits are
checked once and the envelope parsed once, and the router sees no dict from the AppServer.

The lifecycle (DESIGN §5) follows the link: authenticating → synchronizing → online, and
reconnecting / offline_degraded (with the reason) while the AppServer is unreachable or
misbehaves; every change is pushed to the hostbridge for the Shell.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Iterator
from typing import Any, Final, TypeVar

import trio

from lineup.actors.kernel import (
    Actor,
    ActorKind,
    AuditRecord,
    Envelope,
    ErrorCode,
    Message,
    handles,
)
from lineup.actors.kernel.control import RuntimeLinkEvent, RuntimeStateEvent
from lineup.actors.router.messages import (
    InboundEnvelope,
    InboundEnvelopesReply,
    InboundEnvelopesRequest,
    OutboxSettledEvent,
    RefusedEnvelope,
    SessionStartedEvent,
)
from lineup.actors.store.messages import (
    CursorGetReply,
    CursorGetRequest,
    CursorSetReply,
    CursorSetRequest,
    OutboxAckReply,
    OutboxAckRequest,
    OutboxFailReply,
    OutboxFailRequest,
    OutboxPendingReply,
    OutboxPendingRequest,
    OutboxRow,
)
from lineup.facts import link
from lineup.facts.link import SESSION_CURSOR, SYNC_CURSOR, LinkEvent, RuntimeState
from lineup.wire import (
    INVENTORY,
    Admitted,
    EnvelopeInvalid,
    Refusal,
    SyncPage,
    agent_envelope,
    message_id_of,
    message_type_of,
)

from ._client import LONG_POLL_MS, AppServerClient, LinkFailure, Refused, Sent
from .messages import AppServerSession, OutboxWakeEvent, RuntimeStateReply, RuntimeStateRequest

__all__ = ["TransportActor"]

log = logging.getLogger("lineup.transport")
M = TypeVar("M", bound=Message)
_Answer = tuple[OutboxRow, Sent | Refused]  # a row the AppServer answered, to be settled

ANNOUNCED_TO: Final = ("supervisor", "hostbridge")  # told every change of the link's state
BACKOFF_BASE: Final = 0.1
BACKOFF_CAP: Final = 5.0
OUTBOX_IDLE: Final = 5.0  # seconds between outbox checks when nobody wakes it
STORE_TIMEOUT: Final = 30.0  # store calls retry through restarts for this long
# A batch of envelopes to the router stays well inside one bus frame (1 MiB).
BATCH_BYTES: Final = 512 * 1024
BATCH_ENVELOPES: Final = 500
# What a parsed envelope may weigh on the bus beyond its own bytes (its absent optional fields,
# written as null), and what a refusal in its place weighs at most.
ITEM_OVERHEAD: Final = 512
PAGES_AHEAD: Final = 4  # sync pages fetched and waiting to be persisted, at most
OUTBOX_PAGE: Final = 50  # outbox rows read per store request, and answers waiting to be settled


def backoff(failures: int) -> float:
    return min(BACKOFF_CAP, BACKOFF_BASE * 2.0 ** max(0, failures - 1)) * random.uniform(0.5, 1.0)


def inbound(item: Admitted) -> InboundEnvelope:
    """An admitted envelope as the router takes it: parsed by the wire's model, or its refusal
    (what is safe to audit of it) in its place."""
    try:
        return agent_envelope(item.document)
    except EnvelopeInvalid as exc:
        return RefusedEnvelope(
            code=exc.code,
            message_id=message_id_of(item.document),
            message_type=message_type_of(item.document),
        )


def batches(items: tuple[Admitted | Refusal, ...]) -> Iterator[tuple[InboundEnvelope, ...]]:
    """The admitted envelopes, in order, parsed (`inbound`), in batches that fit one router
    request."""
    batch: list[InboundEnvelope] = []
    size = 0
    for item in items:
        if not isinstance(item, Admitted):
            continue
        parsed = inbound(item)
        cost = ITEM_OVERHEAD + (0 if isinstance(parsed, RefusedEnvelope) else item.size)
        if batch and (size + cost > BATCH_BYTES or len(batch) == BATCH_ENVELOPES):
            yield tuple(batch)
            batch, size = [], 0
        batch.append(parsed)
        size += cost
    if batch:
        yield tuple(batch)


class TransportActor(Actor):
    kind = ActorKind.TRANSPORT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.state: RuntimeState = "created"
        self.reason: ErrorCode | None = None
        self.since_ns = time.monotonic_ns()  # when it entered `state` (`RuntimeStateEvent`)
        self._wake = trio.Event()
        self._ahead = False  # an inventory was appended: look again before the next row
        self._login_lock = trio.Lock()
        self._token: str | None = None
        self._session: AppServerSession | None = None
        self._failures = 0
        self._state_changed = trio.Event()
        # Set by the sync loop once it has handed a page to the router (`_fetch_pages`).
        self._handed = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        appserver = self.ctx.config.get("appserver")
        if not appserver:  # a tree without an AppServer (tests of the kernel): nothing to do
            task_status.started()
            await trio.sleep_forever()
        self._credentials = (str(appserver["username"]), str(appserver["password"]))
        async with AppServerClient(str(appserver["url"])) as client:
            self._client = client
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                for peer in ANNOUNCED_TO:
                    nursery.start_soon(self._announce_loop, peer)
                self._move("restore")
                task_status.started()
                await self._login()
                nursery.start_soon(self._sync_loop)
                nursery.start_soon(self._outbox_loop)

    # ------------------------------------------------------------------ state

    def _move(self, event: LinkEvent, reason: ErrorCode | None = None) -> None:
        """Move the link by `event` (`facts/link.py`), with why it is down, if it is."""
        state = link.move(self.state, event)
        if state is None:  # news another loop has overtaken (a login's end, once synced)
            log.info("transport.state_kept %s on %s", self.state, event)
            return
        if (state, reason) == (self.state, self.reason):
            return
        log.info("transport.state %s -> %s reason=%s", self.state, state, reason and reason.value)
        self.state, self.reason = state, reason
        self.since_ns = time.monotonic_ns()
        self._state_changed.set()
        self._state_changed = trio.Event()

    async def _announce_loop(self, peer: str) -> None:
        """Tell `peer` the state, the latest one only and in order (one task per peer: tells to
        one peer could otherwise arrive in any order and leave an old state shown). Each peer
        has its own task, so one that is not up yet (the hostbridge starts after us, and a tell
        to it waits for its channel) never holds up the other: the supervisor's `ready` waits
        for the link. A tell that did not get through is tried again a second later, unless the
        state moved on (the hostbridge also asks for the state when a Shell connects)."""
        told: tuple[RuntimeState, ErrorCode | None] | None = None
        while True:
            changed = self._state_changed  # taken first: a change from here on sets it
            state, reason, since_ns = self.state, self.reason, self.since_ns
            if told == (state, reason):
                await changed.wait()
                continue
            why = reason.value if reason else None
            event = (
                RuntimeLinkEvent(state=state, reason=why)
                if peer == "supervisor"
                else RuntimeStateEvent(state=state, reason=why, since_ns=since_ns)
            )
            if await self.bus.tell(peer, event, timeout=2.0) is None:
                told = (state, reason)
            else:
                with trio.move_on_after(1.0):
                    await changed.wait()

    def _link_failed(self, failure: LinkFailure) -> None:
        self._failures += 1
        degraded = self._failures >= link.DEGRADED_AFTER
        self._move("degraded" if degraded else "failed", failure.code)

    def _link_ok(self) -> None:
        self._failures = 0
        self._move("synced")

    @handles(RuntimeStateRequest)
    def on_state(self, msg: RuntimeStateRequest, env: Envelope) -> RuntimeStateReply:
        return RuntimeStateReply(
            state=self.state,
            reason=self.reason.value if self.reason else None,
            since_ns=self.since_ns,
        )

    @handles(OutboxWakeEvent)
    def on_wake(self, msg: OutboxWakeEvent, env: Envelope) -> None:
        self._ahead = self._ahead or msg.ahead
        self._wake.set()

    # ------------------------------------------------------------------ login

    async def _login(self) -> None:
        async with self._login_lock:
            self._move("log_in", self.reason)
            failures = 0
            while True:
                try:
                    answer = await self._client.login(*self._credentials)
                    break
                except LinkFailure as failure:
                    if failure.code is not self.reason:  # once per reason, not once a try
                        log.warning("transport.login_failed reason=%s", failure.code.value)
                    failures += 1
                    self._link_failed(failure)
                    await trio.sleep(backoff(failures))
            self._token = answer.token
            self._session = AppServerSession(
                user_id=answer.user_id,
                agent_id=answer.agent_id,
                conversation_id=answer.conversation_id,
            )
            await self._store(
                CursorSetRequest(name=SESSION_CURSOR, value=self._session.model_dump_json()),
                CursorSetReply,
            )
            self._move("logged_in")
            self._nursery.start_soon(self._tell_router_session)

    async def _tell_router_session(self) -> None:
        # Not told: the router publishes the inventory when it starts, too.
        await self.bus.tell("router", SessionStartedEvent(), timeout=5.0)

    async def _relogin(self, stale: str | None) -> None:
        """The token was refused: log in again, unless another loop already did."""
        if self._token == stale:
            self._token = None
            await self._login()
        else:
            async with self._login_lock:
                pass  # wait for the login under way

    # ------------------------------------------------------------------ inbound

    async def _sync_loop(self) -> None:
        cursor = (await self._store(CursorGetRequest(name=SYNC_CURSOR), CursorGetReply)).value
        # Pages are fetched while earlier ones are persisted, and whatever pages wait are
        # persisted together (one router request, one transaction, one cursor write): a
        # burst costs per batch, not per page. The cursor still moves in page order, and
        # only past pages that are persisted.
        pages_in, pages_out = trio.open_memory_channel[SyncPage](PAGES_AHEAD)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._fetch_pages, cursor, pages_in)
            async with pages_out:
                async for first in pages_out:
                    pages = [first]
                    waiting = len(first.items)
                    while waiting < BATCH_ENVELOPES:
                        try:
                            pages.append(pages_out.receive_nowait())
                        except trio.WouldBlock:
                            break
                        waiting += len(pages[-1].items)
                    items = tuple(item for page in pages for item in page.items)
                    moved = pages[-1].cursor if pages[-1].cursor != cursor else None
                    # The router writes the cursor with the pages' last texts when it can.
                    if not await self._hand_over(items, moved) and moved is not None:
                        await self._store(
                            CursorSetRequest(name=SYNC_CURSOR, value=moved), CursorSetReply
                        )
                    cursor = pages[-1].cursor

    async def _fetch_pages(
        self, cursor: str | None, pages: trio.MemorySendChannel[SyncPage]
    ) -> None:
        async with pages:
            while True:
                token = self._token
                # Until the link is known good, ask without waiting: "online" should not take
                # a whole long poll to show when nothing is waiting.
                wait_ms = LONG_POLL_MS if self.state == "online" else 0
                try:
                    page = await self._client.sync(token or "", cursor or "", wait_ms)
                except LinkFailure as failure:
                    if failure.code is ErrorCode.APPSERVER_UNAUTHORIZED:
                        await self._relogin(token)
                        continue
                    log.warning("transport.sync_failed reason=%s", failure.code.value)
                    self._link_failed(failure)
                    await trio.sleep(backoff(self._failures))
                    continue
                self._link_ok()
                # The sync loop idle: its hand-over goes before the next long poll's request.
                idle = bool(page.items) and pages.statistics().tasks_waiting_receive > 0
                handed = self._handed = trio.Event()
                await pages.send(page)
                if idle:
                    await handed.wait()
                cursor = page.cursor

    async def _hand_over(self, items: tuple[Admitted | Refusal, ...], cursor: str | None) -> bool:
        """Persist pages' items through the router (in frame-sized batches), `cursor` (the
        sync cursor past them) with the last batch; audit their refusals. Whether the router
        persisted the cursor."""
        for item in items:
            if isinstance(item, Refusal):
                log.warning("transport.envelope_refused code=%s", item.code.value)
                self.bus.audit(
                    AuditRecord(
                        event="transport.envelope_refused",
                        actor=self.ctx.identity.name,
                        code=item.code.value,
                        subject_id=item.message_id,
                    )
                )
        session = self._session
        assert session is not None  # pages are fetched only after a login
        saved = False
        parsed = list(batches(items))
        # Set just before the first request goes out (nothing in between yields): the fetcher,
        # waiting on it, asks for the next page only once the router has this one.
        self._handed.set()
        for n, batch in enumerate(parsed, start=1):
            reply = await self.bus.request(
                "router",
                InboundEnvelopesRequest(
                    conversation_id=session.conversation_id,
                    agent_id=session.agent_id,
                    envelopes=batch,
                    cursor=cursor if n == len(parsed) else None,
                ),
                expect=InboundEnvelopesReply,
                timeout=STORE_TIMEOUT,
                retry=True,
            )
            saved = reply.cursor_saved
        return saved

    # ------------------------------------------------------------------ outbound

    async def _outbox_loop(self) -> None:
        failures = 0
        while True:
            self._wake = trio.Event()
            self._ahead = False
            pending = await self._store(
                OutboxPendingRequest(limit=OUTBOX_PAGE, ahead=(INVENTORY,)), OutboxPendingReply
            )
            # Each answer is settled (the store's ack, then the router told) by its own task
            # while the next row is POSTed: the POSTs stay one at a time and in order, and a
            # row's settling costs the drain nothing. Every answer of this page is settled
            # before the next page is read, so no row still being acknowledged is sent again.
            answers_in, answers_out = trio.open_memory_channel[_Answer](OUTBOX_PAGE)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._settle_answers, answers_out)
                async with answers_in:
                    stalled, interrupted = await self._post_rows(pending.rows, answers_in)
            if stalled:
                failures += 1
                await trio.sleep(backoff(failures))
                continue
            failures = 0
            if interrupted or len(pending.rows) == OUTBOX_PAGE:
                continue  # more waiting
            with trio.move_on_after(OUTBOX_IDLE):
                await self._wake.wait()

    async def _post_rows(
        self, rows: tuple[OutboxRow, ...], answers: trio.MemorySendChannel[_Answer]
    ) -> tuple[bool, bool]:
        """POST `rows` in order, handing each answer on to be settled: (stalled, interrupted)
        — the link failed, or an inventory was appended and goes before the rest."""
        for row in rows:
            outcome = await self._post(row)
            if outcome is None:
                return True, False
            answers.send_nowait((row, outcome))  # never blocks: room for a whole page
            if self._ahead:
                return False, True
        return False, False

    async def _post(self, row: OutboxRow) -> Sent | Refused | None:
        """POST one row: the AppServer's answer, or None to retry it later."""
        token = self._token
        try:
            outcome = await self._client.send(token or "", row.body, row.outbox_id)
        except LinkFailure as failure:
            if failure.code is ErrorCode.APPSERVER_UNAUTHORIZED:
                await self._relogin(token)
            else:
                log.warning("transport.send_failed reason=%s", failure.code.value)
                self._link_failed(failure)
            return None
        if isinstance(outcome, Sent):
            self._link_ok()
        return outcome

    async def _settle_answers(self, answers: trio.MemoryReceiveChannel[_Answer]) -> None:
        """Settle each answered row in order: persisted in the store only now that the
        AppServer has it (sent, or refused for good), then the router told."""
        async with answers:
            async for row, outcome in answers:
                await self._settle(row, outcome)

    async def _settle(self, row: OutboxRow, outcome: Sent | Refused) -> None:
        if isinstance(outcome, Refused):
            code = outcome.code[:100]
            failed = await self._store(
                OutboxFailRequest(outbox_id=row.outbox_id, code=code), OutboxFailReply
            )
            await self._settled(
                OutboxSettledEvent(
                    outbox_id=row.outbox_id,
                    state="failed",
                    code=code,
                    message_id=failed.message_id,
                    app_scope=failed.app_scope,
                    client_id=failed.client_id,
                    call_id=failed.call_id,
                )
            )
            return
        acked = await self._store(
            OutboxAckRequest(
                outbox_id=row.outbox_id, remote_id=outcome.message_id, remote_seq=outcome.seq
            ),
            OutboxAckReply,
        )
        await self._settled(
            OutboxSettledEvent(
                outbox_id=row.outbox_id,
                state="sent",
                message_id=acked.message_id,
                app_scope=acked.app_scope,
                client_id=acked.client_id,
                call_id=acked.call_id,
            )
        )

    async def _settled(self, event: OutboxSettledEvent) -> None:
        # Not told: the app reads the state from history when it (re)starts.
        await self.bus.tell("router", event, timeout=2.0)

    # ------------------------------------------------------------------ the store

    async def _store(self, request: Message, expect: type[M]) -> M:
        return await self.bus.request(
            "store", request, expect=expect, timeout=STORE_TIMEOUT, retry=True
        )
