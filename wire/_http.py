"""The AppServer's HTTP answers (DESIGN §12) as models, and the codes it refuses with.

Answers are validated with `extra="ignore"`: an AppServer may add fields, but every field we
read has its type checked, so an answer of the wrong shape is refused as a whole
(`pydantic.ValidationError`), never half-read.
"""

from enum import StrEnum
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "MAX_ANSWER_BYTES",
    "AgentLoginAnswer",
    "ErrorAnswer",
    "LoginAnswer",
    "SendAnswer",
    "WireErrorCode",
]

MAX_ANSWER_BYTES: Final = 64 * 1024  # any answer but a sync page

_Text = Annotated[str, Field(min_length=1, max_length=200)]


class WireErrorCode(StrEnum):
    """The `error` values the AppServer answers with; clients branch on these."""

    INVALID_CREDENTIALS = "invalid_credentials"  # 401, login only
    UNAUTHORIZED = "unauthorized"  # 401: no, unknown, or wrong-kind bearer token
    INVALID_REQUEST = "invalid_request"  # 400: a login body that is not the expected JSON
    INVALID_ENVELOPE = "invalid_envelope"  # 400
    IDEMPOTENCY_KEY_REQUIRED = "idempotency_key_required"  # 400: absent, empty, or too long
    FORBIDDEN_CONVERSATION = "forbidden_conversation"  # 403
    TOO_LARGE = "too_large"  # 413
    INVALID_CURSOR = "invalid_cursor"  # 400
    INVALID_TIMEOUT = "invalid_timeout"  # 400
    UNAVAILABLE = "unavailable"  # 503: injected fault (`--fail-rate`), nothing was stored
    NOT_FOUND = "not_found"  # 404
    METHOD_NOT_ALLOWED = "method_not_allowed"  # 405
    INTERNAL_ERROR = "internal_error"  # 500


class _Answer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)


class LoginAnswer(_Answer):
    """`POST /v1/auth/login`."""

    token: Annotated[str, Field(min_length=1, max_length=4096)]
    user_id: _Text
    agent_id: _Text
    conversation_id: _Text


class AgentLoginAnswer(_Answer):
    """`POST /v1/agent/login`."""

    token: Annotated[str, Field(min_length=1, max_length=4096)]
    conversation_ids: tuple[_Text, ...]


class SendAnswer(_Answer):
    """`POST /v1/messages` and `/v1/agent/messages`."""

    message_id: _Text
    seq: int | None = None


class ErrorAnswer(_Answer):
    """Any refusal: `{"error": code}`."""

    error: Annotated[str, Field(min_length=1, max_length=100)]
