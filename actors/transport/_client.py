"""The AppServer client: whatever a network answers becomes a value or one `LinkFailure`.

Theory of operation
-------------------
A device meets every kind of network: a captive portal answering `200 text/html` to
everything, a proxy that redirects, a server frozen mid-answer, a body that drips one byte a
second, a body of gigabytes. Each exchange here has one deadline for the *whole* answer (the
long poll's own wait plus a slack), reads the body no further than its byte limit, and checks
the status, the content type, the JSON and its shape, in that order. Anything wrong is one
`LinkFailure` whose `reason` is a stable code (`appserver_unreachable`, `appserver_timeout`,
`appserver_unavailable`, `appserver_unauthorized`, `appserver_protocol_error`); no `httpx`,
`json` or `pydantic` exception leaves this module. A 4xx on a send (other than 401) is the
AppServer's final word on that one envelope: `Refused`, not a link failure.

`transport=` is the seam: tests hand an `httpx.MockTransport` that answers anything at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, Self, TypeVar

import httpx
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
    tls_verify,
)
from lineup.wire.body import with_one_shot_body

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
CLOSE_TIMEOUT: Final = 2.0
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


@dataclass(frozen=True, slots=True)
class _Answer:
    status: int
    content_type: str
    body: bytes


class AppServerClient:
    """One runtime's HTTP session with an AppServer. Use as `async with AppServerClient(url)`."""

    def __init__(
        self,
        base_url: str,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        deadline: float = REQUEST_DEADLINE,
    ) -> None:
        self._deadline = deadline
        self._http = httpx.AsyncClient(
            base_url=base_url,
            transport=transport,
            follow_redirects=False,  # a redirect is a protocol error, never followed
            timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT),  # the deadline bounds reads
            verify=tls_verify(base_url),
        )

    async def __aenter__(self) -> Self:
        await self._http.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Shielded and bounded: a close cancelled by the scope it runs in would leave the
        # pool's sockets to the garbage collector, still open.
        with trio.CancelScope(shield=True), trio.move_on_after(CLOSE_TIMEOUT):
            await self._http.__aexit__(exc_type, exc, tb)

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
    ) -> _Answer:
        # Raw bytes only: a compressed body could be a bomb that no byte limit sees coming.
        all_headers = {"Accept-Encoding": "identity", **(headers or {})}
        if token is not None:
            all_headers["Authorization"] = f"Bearer {token}"
        with trio.move_on_after(wait + self._deadline) as scope:
            try:
                request = self._http.build_request(
                    method, path, json=json, params=params, headers=all_headers
                )
                response = await self._http.send(with_one_shot_body(request), stream=True)
                try:
                    if response.headers.get("content-encoding", "identity") != "identity":
                        raise LinkFailure(ErrorCode.APPSERVER_PROTOCOL_ERROR, response.status_code)
                    body = await _read_bounded(response, max_bytes)
                    content_type = response.headers.get("content-type", "")
                    return _Answer(response.status_code, content_type, body)
                finally:
                    with trio.CancelScope(shield=True):
                        await response.aclose()
            except httpx.TimeoutException as exc:
                raise LinkFailure(ErrorCode.APPSERVER_TIMEOUT) from exc
            except httpx.HTTPError as exc:  # refused, reset, cut mid-answer, bad framing
                raise LinkFailure(ErrorCode.APPSERVER_UNREACHABLE) from exc
        assert scope.cancelled_caught
        raise LinkFailure(ErrorCode.APPSERVER_TIMEOUT)

    def _check(self, answer: _Answer) -> None:
        """The status and content type of an answer that should carry JSON."""
        if answer.status == 401:
            raise LinkFailure(ErrorCode.APPSERVER_UNAUTHORIZED, answer.status)
        if answer.status >= 500:
            raise LinkFailure(ErrorCode.APPSERVER_UNAVAILABLE, answer.status)
        if answer.status != 200:  # a redirect, or a refusal where none is expected
            raise LinkFailure(ErrorCode.APPSERVER_PROTOCOL_ERROR, answer.status)
        if answer.content_type.split(";", 1)[0].strip().lower() != _JSON:
            raise LinkFailure(ErrorCode.APPSERVER_PROTOCOL_ERROR, answer.status)

    def _parsed(self, answer: _Answer, model: type[A]) -> A:
        self._check(answer)
        try:
            return model.model_validate(decode_json(answer.body, max_bytes=MAX_ANSWER_BYTES))
        except (WireLimitError, ValidationError) as exc:
            raise LinkFailure(ErrorCode.APPSERVER_PROTOCOL_ERROR, answer.status) from exc


async def _read_bounded(response: httpx.Response, max_bytes: int) -> bytes:
    """The body, refused as a protocol error past `max_bytes` (read no further than that).

    Past the limit the stream is closed underneath the loop, so the loop ends by the stream's
    own end or error, inside httpx's generators: none is left suspended for the garbage
    collector (which trio reports as a ResourceWarning).
    """
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():  # identity-encoded: the bytes as sent
        size += len(chunk)
        if size > max_bytes:
            if response.is_closed:
                break  # a stream that goes on after its close: leave it to the collector
            await response.aclose()
            continue
        chunks.append(chunk)
    if size > max_bytes:
        raise LinkFailure(ErrorCode.APPSERVER_PROTOCOL_ERROR, response.status_code)
    return b"".join(chunks)


def _refusal_code(answer: _Answer) -> str:
    try:
        return ErrorAnswer.model_validate(decode_json(answer.body)).error
    except (WireLimitError, ValidationError):
        return f"http_{answer.status}"
