"""What a frame's body holds, both ways: a message as the JSON a frame carries, and the error
reply (`x`) that refuses a request.

An error reply's body is `{"code", "fault", "message"}`: the stable code, who is at fault for
it (`lineup.facts.errors.FAULT`, derived from the code: a reader that knows the code learns
nothing new, one that does not still learns whose doing it is), and a message for humans, at
most `MAX_ERROR_MESSAGE` characters. `fault` was added after `code` and `message`: a reader
takes the code, and never needs the fault to be there (`refusal_of`).
"""

from __future__ import annotations

from typing import Final

import pydantic_core

from .errors import ActorRestarted, ErrorCode, LineUpError, LocalProtocolError
from .messages import Message

__all__ = ["MAX_ERROR_MESSAGE", "error_body", "refusal_of", "to_json"]

MAX_ERROR_MESSAGE: Final = 500  # characters of an error reply's message


def to_json(message: Message) -> bytes:
    """`message.model_dump_json()`, as the UTF-8 bytes a frame carries, without the str trip.
    Raises LocalProtocolError(frame_malformed) for a body JSON cannot hold (a NaN or an
    infinity, nested too deep for the serialiser): the sender's mistake, refused like any
    other, never sent changed."""
    try:
        data = message.__pydantic_serializer__.to_json(message)
    except pydantic_core.PydanticSerializationError as exc:
        raise LocalProtocolError(ErrorCode.FRAME_MALFORMED, "body cannot be serialised") from exc
    if (b"NaN" in data or b"Infinity" in data) and not _strict_json(data):
        # A NaN or an infinity (the words alone may be in any string: then it is JSON).
        raise LocalProtocolError(ErrorCode.FRAME_MALFORMED, "body holds a non-finite number")
    return data


def _strict_json(data: bytes) -> bool:
    try:
        pydantic_core.from_json(data, allow_inf_nan=False)
    except ValueError:
        return False
    return True


def error_body(code: ErrorCode, message: str = "") -> dict[str, str]:
    """The body of an error reply refusing a request with `code`."""
    return {"code": code.value, "fault": code.fault, "message": message[:MAX_ERROR_MESSAGE]}


def refusal_of(body: dict[str, object]) -> LineUpError:
    """The error an error reply's body stands for (an unknown code: `internal_error`)."""
    raw = body.get("code")
    try:
        code = ErrorCode(raw if isinstance(raw, str) else "")
    except ValueError:
        code = ErrorCode.INTERNAL_ERROR
    message = body.get("message")
    text = message if isinstance(message, str) else ""
    if code is ErrorCode.ACTOR_RESTARTED:
        return ActorRestarted(code, text)
    return LineUpError(code, text)
