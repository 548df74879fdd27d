"""The transport: the only process that talks to the AppServer or holds its token.

Theory of operation
-------------------
Two loops share one login. The *sync loop* long-polls `GET /v1/sync` from the cursor the store
keeps, hands each page to the router, and advances the persisted cursor only once the router
has persisted the page: a SIGKILL anywhere replays at most the last page, which the router
dedupes by message id. The *outbox loop* drains the store's outbox in order, one row at a time,
with the outbox id as `Idempotency-Key`: a row the AppServer already took is answered the same
again and stored nothing, so a crash between its POST and the store's acknowledgement costs a
repeat, never a duplicate. Failures back off exponentially with jitter, capped.

The lifecycle (DESIGN §5) follows the link: authenticating → synchronizing → online, and
reconnecting / offline_degraded while the AppServer is unreachable; every change is pushed to
the hostbridge for the Shell.
"""

from __future__ import annotations

import json
import logging
import random
from typing import Any, Final

import httpx
import trio

from lineup.actors.kernel import Actor, ActorKind, Envelope, handles
from lineup.actors.router.messages import (
    InboundEnvelopesReply,
    InboundEnvelopesRequest,
    OutboxSettledEvent,
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
from lineup.hostbridge.messages import RuntimeStateEvent

from .messages import OutboxWakeEvent, RuntimeState, RuntimeStateReply, RuntimeStateRequest

__all__ = ["SESSION_CURSOR", "SYNC_CURSOR", "TransportActor"]

log = logging.getLogger("lineup.transport")

SESSION_CURSOR: Final = "transport.session"
SYNC_CURSOR: Final = "transport.sync.cursor"
LONG_POLL_MS: Final = 20_000
HTTP_TIMEOUT: Final = 10.0  # per call, on top of the long poll
BACKOFF_BASE: Final = 0.1
BACKOFF_CAP: Final = 5.0
DEGRADED_AFTER: Final = 3  # consecutive failures before "reconnecting" becomes "offline_degraded"
OUTBOX_IDLE: Final = 5.0  # seconds between outbox checks when nobody wakes it
STORE_TIMEOUT: Final = 30.0  # store calls retry through restarts for this long
PERMANENT: Final = frozenset({400, 403, 404, 413, 422})  # refusals that no retry will change


class _Unauthorized(Exception):
    pass


def backoff(failures: int) -> float:
    return min(BACKOFF_CAP, BACKOFF_BASE * 2.0 ** max(0, failures - 1)) * random.uniform(0.5, 1.0)


class TransportActor(Actor):
    kind = ActorKind.TRANSPORT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.state: RuntimeState = "created"
        self._wake = trio.Event()
        self._login_lock = trio.Lock()
        self._token: str | None = None
        self._session: dict[str, str] = {}
        self._failures = 0

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        appserver = self.ctx.config.get("appserver")
        if not appserver:  # a tree without an AppServer (tests of the kernel): nothing to do
            task_status.started()
            await trio.sleep_forever()
        self._credentials = {"username": appserver["username"], "password": appserver["password"]}
        timeout = httpx.Timeout(HTTP_TIMEOUT + LONG_POLL_MS / 1000)
        async with httpx.AsyncClient(base_url=appserver["url"], timeout=timeout) as client:
            self._http = client
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self._set_state("restoring")
                task_status.started()
                await self._login()
                nursery.start_soon(self._sync_loop)
                nursery.start_soon(self._outbox_loop)

    # ------------------------------------------------------------------ state

    def _set_state(self, state: RuntimeState) -> None:
        if state == self.state:
            return
        log.info("transport.state %s -> %s", self.state, state)
        self.state = state
        self._nursery.start_soon(self._announce, state)

    async def _announce(self, state: RuntimeState) -> None:
        # Not told: the hostbridge asks for the state when a Shell connects.
        await self.bus.tell("hostbridge", RuntimeStateEvent(state=state), timeout=2.0)

    def _link_failed(self) -> None:
        self._failures += 1
        self._set_state("offline_degraded" if self._failures >= DEGRADED_AFTER else "reconnecting")

    def _link_ok(self) -> None:
        self._failures = 0
        self._set_state("online")

    @handles(RuntimeStateRequest)
    def on_state(self, msg: RuntimeStateRequest, env: Envelope) -> RuntimeStateReply:
        return RuntimeStateReply(state=self.state)

    @handles(OutboxWakeEvent)
    def on_wake(self, msg: OutboxWakeEvent, env: Envelope) -> None:
        self._wake.set()

    # ------------------------------------------------------------------ login

    async def _login(self) -> None:
        async with self._login_lock:
            self._set_state("authenticating")
            failures = 0
            while True:
                try:
                    response = await self._http.post("/v1/auth/login", json=self._credentials)
                    if response.status_code == 200:
                        break
                    if response.status_code >= 500:  # the AppServer's trouble, not ours
                        log.warning("transport.login_failed status=%d", response.status_code)
                    else:
                        log.error("transport.login_refused status=%d", response.status_code)
                except httpx.HTTPError as exc:
                    log.warning("transport.login_failed error=%s", type(exc).__name__)
                failures += 1
                self._link_failed()
                await trio.sleep(backoff(failures))
            answer = response.json()
            self._token = str(answer["token"])
            self._session = {k: str(answer[k]) for k in ("user_id", "agent_id", "conversation_id")}
            await self._store(
                CursorSetRequest(name=SESSION_CURSOR, value=json.dumps(self._session)),
                CursorSetReply,
            )
            self._set_state("synchronizing")
            self._nursery.start_soon(self._tell_router_session)

    async def _tell_router_session(self) -> None:
        # Not told: the router publishes the inventory when it starts, too.
        await self.bus.tell("router", SessionStartedEvent(), timeout=5.0)

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"}

    # ------------------------------------------------------------------ inbound

    async def _sync_loop(self) -> None:
        cursor = (await self._store(CursorGetRequest(name=SYNC_CURSOR), CursorGetReply)).value
        while True:
            try:
                page = await self._sync(cursor or "")
            except _Unauthorized:
                await self._login()
                continue
            except (httpx.HTTPError, ValueError) as exc:
                log.warning("transport.sync_failed error=%s", type(exc).__name__)
                self._link_failed()
                await trio.sleep(backoff(self._failures))
                continue
            self._link_ok()
            messages, next_cursor = page
            if messages:
                await self.bus.request(
                    "router",
                    InboundEnvelopesRequest(
                        conversation_id=self._session["conversation_id"],
                        agent_id=self._session["agent_id"],
                        envelopes=tuple(messages),
                    ),
                    expect=InboundEnvelopesReply,
                    timeout=STORE_TIMEOUT,
                    retry=True,
                )
            if next_cursor != cursor:
                await self._store(
                    CursorSetRequest(name=SYNC_CURSOR, value=next_cursor), CursorSetReply
                )
                cursor = next_cursor

    async def _sync(self, cursor: str) -> tuple[list[dict[str, Any]], str]:
        # Until the link is known good, ask without waiting: "online" should not take a
        # whole long poll to show when nothing is waiting.
        wait_ms = LONG_POLL_MS if self.state == "online" else 0
        response = await self._http.get(
            "/v1/sync", headers=self._auth(), params={"cursor": cursor, "timeout_ms": wait_ms}
        )
        if response.status_code == 401:
            raise _Unauthorized
        response.raise_for_status()
        body = response.json()
        messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
        return messages, str(body.get("cursor", cursor))

    # ------------------------------------------------------------------ outbound

    async def _outbox_loop(self) -> None:
        failures = 0
        while True:
            self._wake = trio.Event()
            pending = await self._store(OutboxPendingRequest(limit=50), OutboxPendingReply)
            stalled = False
            for row in pending.rows:
                if not await self._deliver(row):
                    stalled = True
                    break
            if stalled:
                failures += 1
                await trio.sleep(backoff(failures))
                continue
            failures = 0
            if len(pending.rows) == 50:
                continue  # more waiting
            with trio.move_on_after(OUTBOX_IDLE):
                await self._wake.wait()

    async def _deliver(self, row: OutboxRow) -> bool:
        """POST one row. True if it is settled (sent or refused for good), False to retry."""
        try:
            response = await self._http.post(
                "/v1/messages",
                json=row.body,
                headers={**self._auth(), "Idempotency-Key": row.outbox_id},
            )
        except httpx.HTTPError as exc:
            log.warning("transport.send_failed error=%s", type(exc).__name__)
            self._link_failed()
            return False
        if response.status_code == 401:
            await self._login()
            return False
        if response.status_code in PERMANENT:
            code = _error_code(response)
            await self._store(
                OutboxFailRequest(outbox_id=row.outbox_id, code=code), OutboxFailReply
            )
            await self._settled(
                OutboxSettledEvent(outbox_id=row.outbox_id, state="failed", code=code)
            )
            return True
        if response.status_code >= 300:
            self._link_failed()
            return False
        self._link_ok()
        answer = response.json()
        remote_seq = answer.get("seq")
        await self._store(
            OutboxAckRequest(
                outbox_id=row.outbox_id,
                remote_id=str(answer.get("message_id") or row.outbox_id),
                remote_seq=remote_seq if isinstance(remote_seq, int) else None,
            ),
            OutboxAckReply,
        )
        await self._settled(OutboxSettledEvent(outbox_id=row.outbox_id, state="sent"))
        return True

    async def _settled(self, event: OutboxSettledEvent) -> None:
        # Not told: the app reads the state from history when it (re)starts.
        await self.bus.tell("router", event, timeout=2.0)

    # ------------------------------------------------------------------ the store

    async def _store(self, request: Any, expect: type[Any]) -> Any:
        return await self.bus.request(
            "store", request, expect=expect, timeout=STORE_TIMEOUT, retry=True
        )


def _error_code(response: httpx.Response) -> str:
    try:
        code = response.json().get("error")
    except ValueError:
        code = None
    return str(code)[:100] if code else f"http_{response.status_code}"
