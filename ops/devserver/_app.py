"""The devserver's HTTP surface (DESIGN §12): its endpoints, served by `_http` (h11 on trio).

Theory of operation: every endpoint is a method of `DevServerState` that returns a JSON-able
dict or raises `WireError`; `_endpoint` turns the latter into `{"error": code}` with its
status, and `build_app` routes each path to its endpoint. The database is read and written
inline, on the event loop's thread (see `_db`: a read or a commit of this small file costs less
than a hop to a worker thread and back); its one slow step, the log's checkpoint, runs on a
worker thread (`checkpoints`), beside the writes. Long polls never poll: a sync registers a
`trio.Event` under each (direction, conversation) it reads, reads the database, and sleeps on
the event only if there was nothing; a post sets the events of its (direction, conversation)
after its transaction committed. Registering before reading closes the race with a post that
commits in between.
"""

from __future__ import annotations

import hmac
import json
import logging
import random
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final, TypeVar

import trio

from lineup.actors.kernel.errors import describe_failure

from ._config import AgentAccount, DevServerConfig, UserAccount
from ._db import DevDatabase, Principal, StoreError
from ._http import BodyTooLarge, HttpAnswer, HttpRequest
from ._protocol import (
    MAX_ENVELOPE_BYTES,
    MAX_SYNC_BATCH,
    Direction,
    WireError,
    WireErrorCode,
    decode_cursor,
    parse_timeout_ms,
    validate_envelope,
    validate_idempotency_key,
)

__all__ = ["DevServerState", "build_app"]

log = logging.getLogger("lineup.devserver")

MAX_LOGIN_BYTES: Final = 16 * 1024

T = TypeVar("T")
_Key = tuple[Direction, str]


class _Waiters:
    """Who is long-polling which (direction, conversation); woken by `publish`, never polled."""

    def __init__(self) -> None:
        self._waiting: dict[_Key, set[trio.Event]] = {}
        self.closed = False
        self.sleeping = 0  # long polls parked on their event right now
        self._sleeping_changed = trio.Event()

    def register(self, keys: Iterable[_Key]) -> trio.Event:
        event = trio.Event()
        if self.closed:
            event.set()
        for key in keys:
            self._waiting.setdefault(key, set()).add(event)
        return event

    def unregister(self, keys: Iterable[_Key], event: trio.Event) -> None:
        for key in keys:
            waiting = self._waiting.get(key)
            if waiting is not None:
                waiting.discard(event)
                if not waiting:
                    del self._waiting[key]

    def publish(self, key: _Key) -> None:
        for event in self._waiting.get(key, ()):
            event.set()

    async def sleep(self, event: trio.Event, deadline: float) -> None:
        """Park until `event` is set or `deadline` passes."""
        self._count_sleeping(+1)
        try:
            with trio.move_on_at(deadline):
                await event.wait()
        finally:
            self._count_sleeping(-1)

    async def wait_sleeping(self, count: int) -> None:
        """Return once at least `count` long polls are parked (lets tests order events)."""
        while self.sleeping < count:
            await self._sleeping_changed.wait()

    def _count_sleeping(self, delta: int) -> None:
        self.sleeping += delta
        self._sleeping_changed.set()
        self._sleeping_changed = trio.Event()

    def close(self) -> None:
        """Shutting down: end every long poll now (with what it has), and every later one."""
        self.closed = True
        for waiting in self._waiting.values():
            for event in waiting:
                event.set()


class DevServerState:
    """The running server's state: its config, database, fault injector and waiters."""

    def __init__(self, config: DevServerConfig, db: DevDatabase) -> None:
        self.config = config
        self.db = db
        self.waiters = _Waiters()
        self._checkpoint_due = trio.Event()
        self._rng = random.Random(config.seed)
        self._users = {user.username: user for user in config.users}
        self._users_by_id: dict[str, UserAccount] = {}
        for user in config.users:
            self._users_by_id.setdefault(user.user_id, user)
        self._agents: dict[str, AgentAccount] = {}
        for agent in config.agents:
            self._agents.setdefault(agent.agent_id, agent)

    def _write(self, fn: Callable[..., T], *args: Any) -> T:
        """A write, inline (a commit costs less than a hop to a thread); the log's
        checkpoint, when due, is `checkpoints`'."""
        try:
            return fn(*args)
        finally:
            if self.db.wants_checkpoint:
                self._checkpoint_due.set()

    async def checkpoints(self) -> None:
        """Checkpoint the database's log on a worker thread whenever writes have grown it past
        `CHECKPOINT_PAGES`, one at a time; runs until cancelled."""
        while True:
            await self._checkpoint_due.wait()
            self._checkpoint_due = trio.Event()
            try:
                await trio.to_thread.run_sync(self.db.checkpoint)
            except StoreError as exc:  # tried again at the next write past the mark
                log.error("devserver.checkpoint_failed error=%s", describe_failure(exc))

    async def inject_faults(self, request: HttpRequest) -> None:
        if self.config.delay_ms:
            await trio.sleep(self.config.delay_ms / 1000)
        if request.method != "POST" or self.config.fail_rate <= 0.0:
            return
        # Only POSTs draw from the PRNG, so a seed gives the same faults however clients poll.
        if self._rng.random() < self.config.fail_rate:
            raise WireError(WireErrorCode.UNAVAILABLE)

    # -------------------------------------------------------------------------------- login

    async def user_login(self, request: HttpRequest) -> dict[str, Any]:
        body = await _login_body(request, "username", "password")
        user = self._users.get(body["username"])
        password = user.password if user is not None else ""
        # Compare even for an unknown name, so timing does not tell which names exist.
        matches = hmac.compare_digest(password.encode(), body["password"].encode())
        if user is None or not matches:
            raise WireError(WireErrorCode.INVALID_CREDENTIALS)
        token = self._write(self.db.issue_token, Principal("user", user.user_id))
        log.info("devserver.login kind=user id=%s", user.user_id)
        return {
            "token": token,
            "user_id": user.user_id,
            "agent_id": user.agent_id,
            "conversation_id": user.conversation_id,
        }

    async def agent_login(self, request: HttpRequest) -> dict[str, Any]:
        body = await _login_body(request, "agent_id", "secret")
        agent = self._agents.get(body["agent_id"])
        secret = agent.secret if agent is not None else ""
        matches = hmac.compare_digest(secret.encode(), body["secret"].encode())
        if agent is None or not matches:
            raise WireError(WireErrorCode.INVALID_CREDENTIALS)
        token = self._write(self.db.issue_token, Principal("agent", agent.agent_id))
        log.info("devserver.login kind=agent id=%s", agent.agent_id)
        return {
            "token": token,
            "conversation_ids": list(self.config.conversations_of(agent.agent_id)),
        }

    # ------------------------------------------------------------------------- user / agent

    async def _principal(
        self, request: HttpRequest, kind: str
    ) -> tuple[Principal, tuple[str, ...]]:
        """The caller and its conversations; `unauthorized` for a missing or wrong-kind token."""
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise WireError(WireErrorCode.UNAUTHORIZED)
        principal = self.db.principal_of(token.strip())  # the read-only side, inline
        if principal is None or principal.kind != kind:
            raise WireError(WireErrorCode.UNAUTHORIZED)
        if principal.kind == "user":
            user = self._users_by_id.get(principal.id)
            if user is None:  # the account left the configuration since the token was issued
                raise WireError(WireErrorCode.UNAUTHORIZED)
            return principal, (user.conversation_id,)
        if principal.id not in self._agents:
            raise WireError(WireErrorCode.UNAUTHORIZED)
        return principal, self.config.conversations_of(principal.id)

    async def user_sync(self, request: HttpRequest) -> dict[str, Any]:
        _, conversations = await self._principal(request, "user")
        return await self._sync(request, "to_client", conversations)

    async def agent_sync(self, request: HttpRequest) -> dict[str, Any]:
        _, conversations = await self._principal(request, "agent")
        return await self._sync(request, "to_agent", conversations)

    async def user_post(self, request: HttpRequest) -> dict[str, Any]:
        principal, conversations = await self._principal(request, "user")
        return await self._post(request, principal, "to_agent", conversations)

    async def agent_post(self, request: HttpRequest) -> dict[str, Any]:
        principal, conversations = await self._principal(request, "agent")
        return await self._post(request, principal, "to_client", conversations)

    async def _sync(
        self, request: HttpRequest, direction: Direction, conversations: tuple[str, ...]
    ) -> dict[str, Any]:
        raw_cursor = request.query.get("cursor") or ""
        position = decode_cursor(raw_cursor)
        timeout_s = parse_timeout_ms(request.query.get("timeout_ms")) / 1000
        deadline = trio.current_time() + timeout_s
        keys = [(direction, conversation) for conversation in conversations]
        while True:
            event = self.waiters.register(keys)
            try:
                messages, after = self.db.messages_after(
                    direction, conversations, position, MAX_SYNC_BATCH
                )
                if messages:
                    return {"messages": messages, "cursor": str(after)}
                if self.waiters.closed or trio.current_time() >= deadline:
                    return {"messages": [], "cursor": raw_cursor}
                await self.waiters.sleep(event, deadline)
            finally:
                self.waiters.unregister(keys, event)

    async def _post(
        self,
        request: HttpRequest,
        principal: Principal,
        direction: Direction,
        conversations: tuple[str, ...],
    ) -> dict[str, Any]:
        key = validate_idempotency_key(request.headers.get("idempotency-key"))
        body = await _read_body(request, MAX_ENVELOPE_BYTES)
        envelope, message_id = validate_envelope(
            body, allowed_conversations=frozenset(conversations)
        )
        outcome = self._write(self.db.post, principal, key, direction, envelope, message_id)
        conversation_id = str(envelope["conversation_id"])
        if outcome.stored:
            self.waiters.publish((direction, conversation_id))
        log.info(
            "devserver.post kind=%s id=%s conversation_id=%s seq=%d stored=%s",
            principal.kind,
            principal.id,
            conversation_id,
            outcome.seq,
            outcome.stored,
        )
        return {"message_id": outcome.message_id, "seq": outcome.seq}


async def _read_body(request: HttpRequest, limit: int) -> bytes:
    """The request body, refusing (`too_large`) as soon as it exceeds `limit` bytes."""
    try:
        return await request.read(limit)
    except BodyTooLarge as exc:
        raise WireError(WireErrorCode.TOO_LARGE) from exc


async def _login_body(request: HttpRequest, *fields: str) -> dict[str, str]:
    raw = await _read_body(request, MAX_LOGIN_BYTES)
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise WireError(WireErrorCode.INVALID_REQUEST) from exc
    if not isinstance(body, dict) or not all(isinstance(body.get(f), str) for f in fields):
        raise WireError(WireErrorCode.INVALID_REQUEST)
    return {f: str(body[f]) for f in fields}


def _json(status: int, body: object) -> HttpAnswer:
    # As Starlette's JSONResponse wrote it: compact, UTF-8, no NaN.
    text = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return HttpAnswer(status, text.encode())


def _error(code: WireErrorCode) -> HttpAnswer:
    return _json(WireError(code).status, {"error": code.value})


Endpoint = Callable[[HttpRequest], Awaitable[dict[str, Any]]]
Handler = Callable[[HttpRequest], Awaitable[HttpAnswer]]


def _endpoint(state: DevServerState, handler: Endpoint) -> Handler:
    async def endpoint(request: HttpRequest) -> HttpAnswer:
        try:
            await state.inject_faults(request)
            return _json(200, await handler(request))
        except WireError as exc:
            return _error(exc.code)
        except StoreError as exc:
            log.error("devserver.store_error path=%s error=%s", request.path, describe_failure(exc))
            return _error(WireErrorCode.INTERNAL_ERROR)

    return endpoint


async def _healthz(request: HttpRequest) -> HttpAnswer:
    return _json(200, {"ok": True})


INTERNAL_ERROR: Final = _error(WireErrorCode.INTERNAL_ERROR)  # a request an endpoint failed on


def build_app(state: DevServerState) -> Handler:
    """The app serving DESIGN §12 over `state` (`_http.serve_http` runs it): each path's
    endpoint for its method; `not_found` for another path, `method_not_allowed` for another
    method."""
    routes: dict[str, tuple[str, Handler]] = {
        "/healthz": ("GET", _healthz),
        "/v1/auth/login": ("POST", _endpoint(state, state.user_login)),
        "/v1/sync": ("GET", _endpoint(state, state.user_sync)),
        "/v1/messages": ("POST", _endpoint(state, state.user_post)),
        "/v1/agent/login": ("POST", _endpoint(state, state.agent_login)),
        "/v1/agent/sync": ("GET", _endpoint(state, state.agent_sync)),
        "/v1/agent/messages": ("POST", _endpoint(state, state.agent_post)),
    }

    async def app(request: HttpRequest) -> HttpAnswer:
        route = routes.get(request.path)
        if route is None:
            return _error(WireErrorCode.NOT_FOUND)
        method, endpoint = route
        if request.method != method:
            return _error(WireErrorCode.METHOD_NOT_ALLOWED)
        return await endpoint(request)

    return app
