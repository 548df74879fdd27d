"""The Remote Agent's half of the AppServer protocol (DESIGN §12), over `lineup.wire.client`.

Theory of operation: every call is one HTTP request, retried with capped exponential backoff
(and jitter) when the connection fails or the server answers 5xx, up to a bounded number of
attempts. A POST keeps one `Idempotency-Key` across its retries, so a retry after a lost answer
stores nothing twice. A 4xx is the caller's fault and is never retried. No HTTP exception
leaves this module: everything becomes `AppServerError` with the server's wire code (or
`unreachable` when no answer came at all).
"""

from __future__ import annotations

import json as jsonlib
import logging
import random
from typing import Any, Final

import trio
from pydantic import BaseModel

from lineup import wire
from lineup.wire.client import HttpAnswer, HttpClient, HttpError

__all__ = [
    "REQUEST_TIMEOUT_S",
    "RETRY_ATTEMPTS",
    "RETRY_BASE_S",
    "RETRY_CAP_S",
    "UNREACHABLE",
    "AgentClient",
    "AppServerError",
    "utc_timestamp",
]

log = logging.getLogger("lineup.agent")

REQUEST_TIMEOUT_S: Final = 10.0  # per attempt, on top of a long poll's own wait
RETRY_ATTEMPTS: Final = 6
RETRY_BASE_S: Final = 0.05
RETRY_CAP_S: Final = 2.0
UNREACHABLE: Final = "unreachable"  # the code when no attempt got an HTTP answer

utc_timestamp = wire.utc_timestamp


class AppServerError(Exception):
    """The AppServer refused a call (`code` is its wire code, `status` the HTTP status) or
    could not be reached (`code == "unreachable"`, `status is None`)."""

    def __init__(self, code: str, status: int | None = None) -> None:
        super().__init__(code if status is None else f"{code} ({status})")
        self.code = code
        self.status = status


_new_id = wire.new_message_id


class AgentClient(trio.abc.AsyncResource):
    """One agent's session with an AppServer. Use as `async with AgentClient(url) as client`.

    Every method raises `AppServerError`; none logs message text or tokens.
    """

    def __init__(
        self,
        base_url: str,
        *,
        attempts: int = RETRY_ATTEMPTS,
        backoff_s: float = RETRY_BASE_S,
        backoff_cap_s: float = RETRY_CAP_S,
    ) -> None:
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        self._http = HttpClient(base_url)
        self._attempts = attempts
        self._backoff_s = backoff_s
        self._backoff_cap_s = backoff_cap_s
        self._token: str | None = None
        self.agent_id: str | None = None
        self.conversation_ids: tuple[str, ...] = ()

    async def aclose(self) -> None:
        await self._http.aclose()

    # ------------------------------------------------------------------------------- calls

    async def login(self, agent_id: str, secret: str) -> list[str]:
        """Log in; returns (and remembers) the conversations this agent serves."""
        answer = await self._request(
            "POST", "/v1/agent/login", json={"agent_id": agent_id, "secret": secret}, auth=False
        )
        token, conversations = answer.get("token"), answer.get("conversation_ids")
        if not isinstance(token, str) or not isinstance(conversations, list):
            raise AppServerError("invalid_answer", 200)
        self._token = token
        self.agent_id = agent_id
        self.conversation_ids = tuple(str(c) for c in conversations)
        log.info("agent.logged_in agent_id=%s conversations=%d", agent_id, len(conversations))
        return list(self.conversation_ids)

    async def sync(self, cursor: str = "", timeout_ms: int = 0) -> tuple[list[dict[str, Any]], str]:
        """The client→agent messages after `cursor` (long-polling up to `timeout_ms`), and the
        cursor to pass next time. An empty cursor means from the start."""
        params = {"cursor": cursor, "timeout_ms": str(timeout_ms)}
        answer = await self._request(
            "GET",
            "/v1/agent/sync",
            params=params,
            timeout=REQUEST_TIMEOUT_S + timeout_ms / 1000,
        )
        messages, next_cursor = answer.get("messages"), answer.get("cursor")
        if not isinstance(messages, list) or not isinstance(next_cursor, str):
            raise AppServerError("invalid_answer", 200)
        return [m for m in messages if isinstance(m, dict)], next_cursor

    async def send(self, envelope: dict[str, Any], idempotency_key: str) -> dict[str, Any]:
        """Post one envelope; returns the server's `{"message_id", "seq"}`. The same key again
        returns the same answer and stores nothing new."""
        return await self._request(
            "POST",
            "/v1/agent/messages",
            json=envelope,
            headers={"Idempotency-Key": idempotency_key},
        )

    async def say(
        self,
        conversation_id: str,
        markdown: str,
        idempotency_key: str | None = None,
        *,
        app_session_context: str | None = None,
    ) -> dict[str, Any]:
        """Send a `lineup.v1.text`. `app_session_context` names the open app sub-session the
        text is a short result of (shown in its group; the runtime refuses any other). The key
        defaults to the new envelope's id."""
        context = None if app_session_context is None else {"app_session_id": app_session_context}
        payload = wire.TextPayload(markdown=markdown, app_session_context=context)
        envelope = self._envelope(conversation_id, wire.TEXT, payload)
        return await self.send(envelope, idempotency_key or envelope["id"])

    async def call_tool(
        self,
        conversation_id: str,
        tool: str,
        input: dict[str, Any],
        inventory_revision: str | int,
        call_id: str | None = None,
        *,
        app_session_context: str | None = None,
        instance_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Send a `lineup.v1.tool.call`; returns `{"message_id", "seq", "call_id"}` (the
        call_id is generated when not given). `app_session_context` names the app sub-session
        a standard interaction belongs to; `instance_id` the instance an operation is for. The
        key defaults to the new envelope's id."""
        call_id = call_id or _new_id("call")
        extra: dict[str, Any] = {}
        if app_session_context is not None:
            extra["app_session_context"] = {"app_session_id": app_session_context}
        payload = wire.ToolCallPayload(
            call_id=call_id,
            tool=tool,
            inventory_revision=str(inventory_revision),
            input=input,
            **extra,
        )
        envelope = self._envelope(conversation_id, wire.TOOL_CALL, payload)
        if instance_id is not None:
            envelope["instance_id"] = instance_id
        answer = await self.send(envelope, idempotency_key or envelope["id"])
        return {**answer, "call_id": call_id}

    async def dismiss(
        self,
        conversation_id: str,
        control_id: str,
        call_id: str,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Send a `lineup.v1.interaction.dismiss` for an open interaction (the key defaults
        to the new envelope's id)."""
        payload = wire.DismissPayload(control_id=control_id, call_id=call_id)
        envelope = self._envelope(conversation_id, wire.DISMISS, payload)
        return await self.send(envelope, idempotency_key or envelope["id"])

    # ----------------------------------------------------------------------------- helpers

    def _envelope(self, conversation_id: str, kind: str, payload: BaseModel) -> dict[str, Any]:
        # The server stamps the real sender; ours is only what a well-behaved agent would say.
        return wire.dump(
            wire.envelope(
                kind,
                payload,
                conversation_id=conversation_id,
                sender_kind="agent",
                sender_id=self.agent_id or "",
            )
        )

    def _backoff(self, attempt: int) -> float:
        delay = min(self._backoff_cap_s, self._backoff_s * 2.0**attempt)
        return delay * random.uniform(0.5, 1.0)

    async def _request(
        self,
        method: str,
        path: str,
        *,
        json: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = REQUEST_TIMEOUT_S,
        auth: bool = True,
    ) -> dict[str, Any]:
        all_headers = dict(headers or {})
        if auth:
            if self._token is None:
                raise AppServerError("unauthorized", None)
            all_headers["Authorization"] = f"Bearer {self._token}"
        failure = AppServerError(UNREACHABLE)
        for attempt in range(self._attempts):
            if attempt:
                await trio.sleep(self._backoff(attempt - 1))
            response: HttpAnswer | None = None
            with trio.move_on_after(timeout):
                try:
                    response = await self._http.request(
                        method,
                        path,
                        params=params,
                        headers=all_headers,
                        json=json,
                        max_bytes=wire.MAX_PAGE_BYTES,
                    )
                except HttpError as exc:
                    log.info("agent.retry path=%s error=%s", path, type(exc).__name__)
                    failure = AppServerError(UNREACHABLE)
                    continue
            if response is None:  # no answer within the attempt's bound
                log.info("agent.retry path=%s error=timeout", path)
                failure = AppServerError(UNREACHABLE)
                continue
            if response.status >= 500:
                log.info("agent.retry path=%s status=%d", path, response.status)
                failure = AppServerError(_code_of(response), response.status)
                continue
            if response.status >= 400:
                raise AppServerError(_code_of(response), response.status)
            try:
                answer = _json_of(response)
            except ValueError as exc:
                raise AppServerError("invalid_answer", response.status) from exc
            if not isinstance(answer, dict):
                raise AppServerError("invalid_answer", response.status)
            return answer
        raise failure


def _json_of(response: HttpAnswer) -> Any:
    return jsonlib.loads(response.body)


def _code_of(response: HttpAnswer) -> str:
    try:
        body = _json_of(response)
    except ValueError:
        return f"http_{response.status}"
    code = body.get("error") if isinstance(body, dict) else None
    return code if isinstance(code, str) else f"http_{response.status}"
