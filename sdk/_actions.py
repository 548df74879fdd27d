"""Declarative user actions (seed 004 §6.2 `AppActionAPI`): `dispatch(action)` asks the runtime
to do what the user did, and answers with its `CommandReceipt` (or raises its refusal's code).

An action is one of the closed union `protocol.AppAction` (a model, or its JSON form as a
dict, checked here first: anything else is `invalid_arguments` before anything is sent). There
is no action that carries an Agent envelope: the runtime makes every envelope itself. The
lifecycle and navigation actions go to focus (`focus.sdk.actions.dispatch`), the conversation
ones to the router as the requests they always were (`send_text` is the chat's alone).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from lineup.actors.kernel import ErrorCode, LineUpError

from . import protocol as p
from ._channel import RuntimeChannel

__all__ = ["Actions"]


class Actions:
    """`AppContext.actions` (the module's docstring)."""

    def __init__(self, host: RuntimeChannel, instance_id: str) -> None:
        self._host = host
        self._instance_id = instance_id

    async def dispatch(
        self, action: p.AppAction | Mapping[str, Any], *, from_instance_id: str | None = None
    ) -> p.CommandReceipt:
        """Dispatch `action` from `from_instance_id` (default: the process's own instance).
        The receipt's `id` is the instance (or message) it acted on. Raises `LineUpError`:
        `invalid_arguments` (not an action), or the runtime's refusal of it."""
        try:
            checked = p.APP_ACTION.validate_python(
                dict(action) if isinstance(action, Mapping) else action
            )
        except ValidationError:
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "not an app action") from None
        if isinstance(checked, p.ConversationSendTextAction):
            request: Any = p.ConversationSendTextRequest(
                message_id=checked.message_id, markdown=checked.markdown
            )
            return await self._host.call("router", request, p.CommandReceipt)
        if isinstance(checked, p.ConversationRetryAction):
            request = p.ConversationRetryRequest(message_id=checked.message_id)
            return await self._host.call("router", request, p.CommandReceipt)
        return await self._host.call(
            "focus",
            p.ActionDispatchRequest(
                from_instance_id=from_instance_id or self._instance_id, action=checked
            ),
            p.CommandReceipt,
        )
