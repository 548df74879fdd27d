"""Capabilities: a system power asked for by purpose and input (seed 004 §6.3), through
`Capabilities`. The catalog, the input shapes and the order of the gateway's checks are in
`lineup.sdk.capabilities`.
"""

from typing import Annotated, Any, Literal

from pydantic import Field

from lineup.actors.kernel import Message

from .common import Id

__all__ = ["CapabilityRequest", "CapabilityResult", "CapabilityStatusValue"]

CapabilityStatusValue = Literal[
    "completed",
    "cancelled_by_user",
    "permission_denied",
    "unsupported_on_host",
    "policy_denied",
    "expired",
    "failed",
]


class CapabilityRequest(Message):
    """Ask for `capability` for `instance_id` (one of the sender's live instances), saying why
    (`purpose`: shown to the user as text, never audited) with `input` (the capability's input
    model; at most `MAX_CAPABILITY_INPUT_BYTES` as JSON). `request_id` (the app's) names the
    request in the audit and makes a repeat of a decided request answer the same result. The
    reply is always a `CapabilityResult`; only a malformed message is refused
    (`invalid_arguments`, `frame_malformed`)."""

    type: Literal["gateway.sdk.capability.request"] = "gateway.sdk.capability.request"
    request_id: Id
    instance_id: Id
    capability: Annotated[
        str, Field(pattern=r"^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)+$", max_length=100)
    ]
    purpose: Annotated[str, Field(min_length=1, max_length=300)]
    input: dict[str, Any] = Field(default_factory=dict)


class CapabilityResult(Message):
    """The one outcome of a capability request. `code` says why for every status but
    `completed` (an `ErrorCode` value: `capability_denied`, `app_disabled`,
    `foreground_required`, `rate_limited`, `provider_failed`, `invalid_arguments`, …);
    `output` is the provider's, for `completed` only, and holds no path."""

    type: Literal["gateway.sdk.capability.result"] = "gateway.sdk.capability.result"
    request_id: Id
    capability: str
    status: CapabilityStatusValue
    code: str | None = None
    output: dict[str, Any] | None = None
