"""Standard interactions an app asks the user (seed 003 §3.4): the request (its content is
`lineup.sdk.interactions`'), the record the runtime keeps, and its answer or end (`Ui`)."""

from typing import Any, Literal

from pydantic import Field

from lineup.actors.kernel import Message
from lineup.facts.interactions import WAITING as WAITING_INTERACTION
from lineup.facts.interactions import InteractionState

from .common import Id

__all__ = [
    "InteractionAskRequest",
    "InteractionCancelRequest",
    "InteractionGetRequest",
    "InteractionReceipt",
    "InteractionRecord",
    "InteractionUpdatedEvent",
    "Presentation",
]

Presentation = Literal["default", "inline", "modal"]


class InteractionRecord(Message):
    """One standard interaction the app asked (seed 003 §3.4 `StandardInteractionRecord`), as
    the runtime holds it: `result` is the user's checked answer (from `submitted` on), or
    None; `terminal_code` the code of a cancelled, expired or failed one. `asked_by` says
    whether the app's process asked it or its Surface did (`lineup/ui/request`): an app acts
    on the answers to its own questions only."""

    type: Literal["miniapp.interaction.record"] = "miniapp.interaction.record"
    interaction_id: Id
    kind: Literal["notice", "choice", "confirm", "input"]
    state: InteractionState
    request: dict[str, Any]
    result: dict[str, Any] | None = None
    terminal_code: str | None = None
    instance_id: Id | None = None
    parent_call_id: Id | None = None
    presentation: Presentation = "default"
    created_at: float
    expires_at: float | None = None
    asked_by: Literal["app", "surface"] = "app"

    @property
    def is_open(self) -> bool:
        """Still waiting for the person (`pending` or `presented`): an answer, a cancel or an
        expiry may still end it."""
        return self.state in WAITING_INTERACTION


class InteractionAskRequest(Message):
    """Ask the user (`sdk.ui.request`): `request` is a standard interaction request
    (`lineup.sdk.interactions`). The owner is the app's channel and `instance_id`, one of its
    own live instances: nothing here can name another. `request_id` is the app's idempotency
    key (a retry asks nothing new); `parent_call_id`, if given, must be one of this instance's
    calls not yet decided. Refused with `tool_input_invalid` (a bad request or expiry),
    `app_instance_not_found`, `app_scope_mismatch`, `call_already_final`."""

    type: Literal["router.sdk.interaction.request"] = "router.sdk.interaction.request"
    instance_id: Id
    request_id: Id
    request: dict[str, Any]
    parent_call_id: Id | None = None
    presentation: Presentation = "default"
    expires_in_ms: int | None = Field(default=None, ge=1)


class InteractionGetRequest(Message):
    """One of the app's own interactions; any other is refused `interaction_not_found`."""

    type: Literal["router.sdk.interaction.get"] = "router.sdk.interaction.get"
    interaction_id: Id


class InteractionCancelRequest(Message):
    """Withdraw one of the app's own interactions not yet answered (`changed` False if it is
    final already); another's is refused `interaction_not_found`."""

    type: Literal["router.sdk.interaction.cancel"] = "router.sdk.interaction.cancel"
    interaction_id: Id
    reason: str = Field(default="cancelled_by_app", min_length=1, max_length=100)


class InteractionReceipt(Message):
    type: Literal["router.sdk.interaction.reply"] = "router.sdk.interaction.reply"
    interaction: InteractionRecord
    changed: bool = True


class InteractionUpdatedEvent(Message):
    """Runtime → app: one of its interactions has its answer, or ended (to that app only)."""

    type: Literal["miniapp.interaction.updated"] = "miniapp.interaction.updated"
    interaction: InteractionRecord
