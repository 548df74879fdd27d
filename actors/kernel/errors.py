"""The exception hierarchy of the stable error codes.

Every refusal anywhere in LineUp carries one `ErrorCode`: the router, the SDK, the bus and the
tests all share this one enum (DESIGN §5). Callers branch on the code, never on message text.
The codes, and who is at fault for each, are defined once in `lineup.facts.errors`; they are
re-exported here, where most modules import them from.

Two axes, as in h11/httpx: `LocalProtocolError` is "you misused the API" (this process built a
bad request); `RemoteProtocolError` is "the peer misbehaved" (it sent us something invalid).
`ActorRestarted`/`ChannelClosed` are "broken underneath", not anybody's misuse.
"""

from __future__ import annotations

from lineup.facts.errors import ErrorCode, Fault

__all__ = [
    "ActorRestarted",
    "ChannelClosed",
    "DeadlineExceeded",
    "ErrorCode",
    "Fault",
    "LineUpError",
    "LocalProtocolError",
    "RemoteProtocolError",
    "describe_failure",
]


class LineUpError(Exception):
    """A refusal with a stable `code`; `message` is for humans and may change."""

    default_code: ErrorCode = ErrorCode.INTERNAL_ERROR

    def __init__(self, code: ErrorCode | None = None, message: str = "") -> None:
        self.code: ErrorCode = code if code is not None else self.default_code
        self.message = message
        super().__init__(f"{self.code.value}: {message}" if message else self.code.value)

    @property
    def fault(self) -> Fault:
        """Who is at fault for this refusal: its code's (`lineup.facts.errors.FAULT`)."""
        return self.code.fault


class LocalProtocolError(LineUpError):
    """This process misused an API (bad request, forbidden destination)."""


class RemoteProtocolError(LineUpError):
    """The peer sent something invalid (malformed frame, forbidden type, oversize)."""


class ChannelClosed(LineUpError):
    """The channel was closed, by us or underneath us."""

    default_code = ErrorCode.ACTOR_RESTARTED


class ActorRestarted(ChannelClosed):
    """The peer went away while our request was in flight: it is safe to retry at once."""

    default_code = ErrorCode.ACTOR_RESTARTED


class DeadlineExceeded(LineUpError):
    default_code = ErrorCode.DEADLINE_EXCEEDED


def describe_failure(exc: BaseException) -> str:
    """The exception's type and where it was raised, for a log line: never its message, which
    may quote what failed (pydantic's errors quote the input, i.e. message content)."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}{where}"
