"""The AppServer wire protocol (DESIGN §12) without I/O: codes, limits, and validation.

The envelope models, the size limit and the error codes are the wire's (`lineup.wire`),
shared with the runtime's client. As a relay, the server checks only the header it routes by
(version, type, conversation, id): what an Agent puts in a payload is the client's to judge,
so that a client's defences can be tried through a real AppServer.

Theory of operation: everything a request carries is checked here before the server touches its
database, so these functions are pure and tested synchronously. A failed check raises
`WireError`, whose `code` and HTTP `status` are exactly what the server answers
(`{"error": code}`). The sync cursor is opaque to clients; here it is the decimal global row id
of the last message delivered, so one cursor spans every conversation an agent serves.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any, Final, Literal

from lineup.wire import MAX_ENVELOPE_BYTES, WireErrorCode

__all__ = [
    "ENVELOPE_VERSION",
    "MAX_ENVELOPE_BYTES",
    "MAX_IDEMPOTENCY_KEY_CHARS",
    "MAX_SYNC_BATCH",
    "MAX_TIMEOUT_MS",
    "Direction",
    "PrincipalKind",
    "WireError",
    "WireErrorCode",
    "decode_cursor",
    "encode_cursor",
    "parse_timeout_ms",
    "utc_timestamp",
    "validate_envelope",
    "validate_idempotency_key",
]

ENVELOPE_VERSION: Final = 1
MAX_SYNC_BATCH: Final = 100
MAX_TIMEOUT_MS: Final = 30_000
MAX_IDEMPOTENCY_KEY_CHARS: Final = 256

PrincipalKind = Literal["user", "agent"]
# Which way a message travels: written by the user's client for the agent, or the reverse.
Direction = Literal["to_agent", "to_client"]


_STATUS: Final[dict[WireErrorCode, int]] = {
    WireErrorCode.INVALID_CREDENTIALS: 401,
    WireErrorCode.UNAUTHORIZED: 401,
    WireErrorCode.INVALID_REQUEST: 400,
    WireErrorCode.INVALID_ENVELOPE: 400,
    WireErrorCode.IDEMPOTENCY_KEY_REQUIRED: 400,
    WireErrorCode.FORBIDDEN_CONVERSATION: 403,
    WireErrorCode.TOO_LARGE: 413,
    WireErrorCode.INVALID_CURSOR: 400,
    WireErrorCode.INVALID_TIMEOUT: 400,
    WireErrorCode.UNAVAILABLE: 503,
    WireErrorCode.NOT_FOUND: 404,
    WireErrorCode.METHOD_NOT_ALLOWED: 405,
    WireErrorCode.INTERNAL_ERROR: 500,
}


class WireError(Exception):
    """A refusal the server answers as `status` with body `{"error": code}`."""

    def __init__(self, code: WireErrorCode) -> None:
        super().__init__(code.value)
        self.code = code

    @property
    def status(self) -> int:
        return _STATUS[self.code]


def utc_timestamp() -> str:
    """Now, as ISO 8601 UTC with milliseconds: `2024-05-01T12:00:00.000Z`."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def encode_cursor(position: int) -> str:
    return str(position)


def decode_cursor(raw: str | None) -> int:
    """The position after which to deliver; empty or absent means from the start."""
    if not raw:
        return 0
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
        raise WireError(WireErrorCode.INVALID_CURSOR)
    return int(raw)


def parse_timeout_ms(raw: str | None) -> int:
    """The long-poll wait in milliseconds: absent means 0, capped at `MAX_TIMEOUT_MS`."""
    if raw is None or raw == "":
        return 0
    if not raw.isascii() or not raw.isdigit() or len(raw) > 12:
        raise WireError(WireErrorCode.INVALID_TIMEOUT)
    return min(int(raw), MAX_TIMEOUT_MS)


def validate_idempotency_key(raw: str | None) -> str:
    if not raw or len(raw) > MAX_IDEMPOTENCY_KEY_CHARS:
        raise WireError(WireErrorCode.IDEMPOTENCY_KEY_REQUIRED)
    return raw


def validate_envelope(
    body: bytes, *, allowed_conversations: frozenset[str]
) -> tuple[dict[str, Any], str]:
    """Parse one posted envelope and check it; returns `(envelope, message_id)`.

    The returned envelope has an `id` (generated when absent) and a `timestamp` (the server's
    when absent); the caller stamps `sender` and `seq`. Raises `WireError` with
    `too_large`, `invalid_envelope` or `forbidden_conversation`; never trusts the client's
    `sender`.
    """
    if len(body) > MAX_ENVELOPE_BYTES:
        raise WireError(WireErrorCode.TOO_LARGE)
    try:
        envelope = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise WireError(WireErrorCode.INVALID_ENVELOPE) from exc
    if not isinstance(envelope, dict):
        raise WireError(WireErrorCode.INVALID_ENVELOPE)
    version = envelope.get("v")
    # `True == 1` in Python: a boolean must not pass as the version.
    if isinstance(version, bool) or version != ENVELOPE_VERSION:
        raise WireError(WireErrorCode.INVALID_ENVELOPE)
    kind = envelope.get("type")
    conversation_id = envelope.get("conversation_id")
    if not isinstance(kind, str) or not kind:
        raise WireError(WireErrorCode.INVALID_ENVELOPE)
    if not isinstance(conversation_id, str) or not conversation_id:
        raise WireError(WireErrorCode.INVALID_ENVELOPE)
    if "payload" in envelope and not isinstance(envelope["payload"], dict):
        raise WireError(WireErrorCode.INVALID_ENVELOPE)
    message_id = envelope.get("id")
    if message_id is None:
        message_id = f"msg-{uuid.uuid4().hex}"
        envelope["id"] = message_id
    elif not isinstance(message_id, str) or not message_id:
        raise WireError(WireErrorCode.INVALID_ENVELOPE)
    if not isinstance(envelope.get("timestamp"), str):
        envelope["timestamp"] = utc_timestamp()
    if conversation_id not in allowed_conversations:
        raise WireError(WireErrorCode.FORBIDDEN_CONVERSATION)
    return envelope, message_id
