"""The AppServer client: whatever a network answers becomes a value or one `LinkFailure`.

Theory of operation
-------------------
A device meets every kind of network: a captive portal answering `200 text/html` to
everything, a proxy that redirects, a server frozen mid-answer, a body that drips one byte a
second, a body of gigabytes. Each exchange here has one deadline for the *whole* answer (the
long poll's own wait plus a slack), reads the body no further than its byte limit, and checks
the status, the content type, the JSON and its shape, in that order. Anything wrong is one
`LinkFailure` whose `reason` is a stable code (`appserver_unreachable`, `appserver_timeout`,
`appserver_unavailable`, `appserver_unauthorized`, `appserver_protocol_error`); no HTTP,
`json` or `pydantic` exception leaves this module. A 4xx on a send (other than 401) is the
AppServer's final word on that one envelope: `Refused`, not a link failure.

The HTTP is `lineup.wire.client`'s (h11 on trio): no redirect followed, nothing decompressed,
every body bounded as it is read. The tests point it at a loopback server that answers
anything at all, byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, TypeVar

import trio
from pydantic import BaseModel, ValidationError

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.wire import (
    MAX_ANSWER_BYTES,
    MAX_PAGE_BYTES,
    ErrorAnswer,
    LoginAnswer,
    PageMalformed,
    SendAnswer,
    SyncPage,
    WireLimitError,
    decode_json,
    decode_sync_page,
)
from lineup.wire.client import AnswerRefused, ConnectTimeout, HttpAnswer, HttpClient, HttpError

__all__ = [
    "LONG_POLL_MS",
    "REQUEST_DEADLINE",
    "AppServerClient",
    "LinkFailure",
    "Refused",
    "Sent",
]

LONG_POLL_MS: Final = 6_000  # short enough that a frozen AppServer is noticed within 10 s
REQUEST_DEADLINE: Final = 3.5  # the whole answer, on top of a long poll's own wait
CONNECT_TIMEOUT: Final = 3.0
_JSON: Final = "application/json"
A = TypeVar("A", bound=BaseModel)


class LinkFailure(LineUpError):
    """The exchange failed as a link: retry later. `code` is one of the `appserver_*` codes."""

    def __init__(self, code: ErrorCode, status: int | None = None) -> None:
        super().__init__(code, f"http {status}" if status is not None else "")
        self.status = status


@dataclass(frozen=True, slots=True)
class Sent:
    message_id: str
    seq: int | None


@dataclass(frozen=True, slots=True)
class Refused:
    """The AppServer refused this envelope for good (its `code`, or `http_<status>`)."""

    code: str


class AppServerClient(trio.abc.AsyncResource):
    """One runtime's HTTP session with an AppServer. Use as `async with AppServerClient(url)`."""

    def __init__(self, base_url: str, *, deadline: float = REQUEST_DEADLINE) -> None:
        self._deadline = deadline
        self._http = HttpClient(base_url, connect_timeout=CONNECT_TIMEOUT)

    async def aclose(self) -> None:
        await self._http.aclose()

    # ------------------------------------------------------------------ the calls

    async def login(self, username: str, password: str) -> LoginAnswer:
        answer = await self._exchange(
            "POST", "/v1/auth/login", json={"username": username, "password": password}
        )
        if answer.status in (400, 401, 403):
            raise LinkFailure(ErrorCode.APPSERVER_UNAUTHORIZED, answer.status)
        return self._parsed(answer, LoginAnswer)

    async def sync(self, token: str, cursor: str, wait_ms: int) -> SyncPage:
        answer = await self._exchange(
            "GET",
            "/v1/sync",
            params={"cursor": cursor, "timeout_ms": str(wait_ms)},
            token=token,
            wait=wait_ms / 1000,
            max_bytes=MAX_PAGE_BYTES,
        )
        self._check(answer)
        try:
            return decode_sync_page(answer.body)
        except PageMalformed as exc:
            raise LinkFailure(ErrorCode.APPSERVER_PROTOCOL_ERROR, answer.status) from exc

    async def send(self, token: str, body: dict[str, Any], key: str) -> Sent | Refused:
        answer = await self._exchange(
            "POST", "/v1/messages", json=body, token=token, headers={"Idempotency-Key": key}
        )
        if 400 <= answer.status < 500 and answer.status != 401:
            return Refused(_refusal_code(answer))
        sent = self._parsed(answer, SendAnswer)
        return Sent(message_id=sent.message_id, seq=sent.seq)

    # ------------------------------------------------------------------ one exchange

    async def _exchange(
        self,
        method: str,
        path: str,
        *,
        json: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        token: str | None = None,
        wait: float = 0.0,
        max_bytes: int = MAX_ANSWER_BYTES,
    ) -> HttpAnswer:
        all_headers = dict(headers or {})
        if token is not None:
            all_headers["Authorization"] = f"Bearer {token}"
        with trio.move_on_after(wait + self._deadline) as scope:
            try:
                return await self._http.request(
                    method, path, params=params, headers=all_headers, json=json, max_bytes=max_bytes
                )
            except AnswerRefused as exc:  # too large, or encoded: read no further
                raise LinkFailure(ErrorCode.APPSERVER_PROTOCOL_ERROR, exc.status) from exc
            except ConnectTimeout as exc:
                raise LinkFailure(ErrorCode.APPSERVER_TIMEOUT) from exc
            except HttpError as exc:  # refused, reset, cut mid-answer, bad framing
                raise LinkFailure(ErrorCode.APPSERVER_UNREACHABLE) from exc
        assert scope.cancelled_caught
        raise LinkFailure(ErrorCode.APPSERVER_TIMEOUT)

    def _check(self, answer: HttpAnswer) -> None:
        """The status and content type of an answer that should carry JSON."""
        if answer.status == 401:
            raise LinkFailure(ErrorCode.APPSERVER_UNAUTHORIZED, answer.status)
        if answer.status >= 500:
            raise LinkFailure(ErrorCode.APPSERVER_UNAVAILABLE, answer.status)
        if answer.status != 200:  # a redirect, or a refusal where none is expected
            raise LinkFailure(ErrorCode.APPSERVER_PROTOCOL_ERROR, answer.status)
        if answer.content_type != _JSON:
            raise LinkFailure(ErrorCode.APPSERVER_PROTOCOL_ERROR, answer.status)

    def _parsed(self, answer: HttpAnswer, model: type[A]) -> A:
        self._check(answer)
        try:
            return model.model_validate(decode_json(answer.body, max_bytes=MAX_ANSWER_BYTES))
        except (WireLimitError, ValidationError) as exc:
            raise LinkFailure(ErrorCode.APPSERVER_PROTOCOL_ERROR, answer.status) from exc


def _refusal_code(answer: HttpAnswer) -> str:
    try:
        return ErrorAnswer.model_validate(decode_json(answer.body)).error
    except (WireLimitError, ValidationError):
        return f"http_{answer.status}"
