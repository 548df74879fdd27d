"""Declarative user actions (seed 004 §6.2 `AppActionAPI`): what an app may ask the runtime to do
on the user's behalf, each answered with a `CommandReceipt` or refused with a stable code.

An action names what the user did, never how it reaches anyone: there is no action that holds
an Agent envelope, a tool call or a result, and the runtime builds every envelope itself. The
kinds are the runtime's existing entries, as one closed union (`AppAction`, discriminated by
`kind`):

    lifecycle.foreground | lifecycle.background | lifecycle.close   one of the app's instances
    apps.open | apps.launch | apps.focus | apps.close | apps.open_default   navigation (§6.2)
    conversation.send_text | conversation.retry                     the user's text (chat only)

`SURFACE_ACTION_KINDS` are those a Surface may dispatch through its bridge (for its own app and
instance); the conversation ones are the chat's alone (the ACL reserves `send_text` to it).
Focus decides the lifecycle and navigation ones (`focus.sdk.actions.dispatch`), the router the
conversation ones (their own requests).
"""

from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from lineup.actors.kernel import Message

from .common import Id
from .conversation import MAX_TEXT
from .navigation import DisplayMode

__all__ = [
    "APP_ACTION",
    "CONVERSATION_ACTION_KINDS",
    "SURFACE_ACTION_KINDS",
    "ActionDispatchRequest",
    "AppAction",
    "AppsCloseAction",
    "AppsFocusAction",
    "AppsLaunchAction",
    "AppsOpenAction",
    "AppsOpenDefaultAction",
    "ConversationRetryAction",
    "ConversationSendTextAction",
    "LifecycleAction",
    "RuntimeAction",
]


class _Action(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LifecycleAction(_Action):
    kind: Literal["lifecycle.foreground", "lifecycle.background", "lifecycle.close"]
    instance_id: Id


class AppsOpenAction(_Action):
    kind: Literal["apps.open"] = "apps.open"
    app_scope: Id
    request_id: Id


class AppsLaunchAction(_Action):
    kind: Literal["apps.launch"] = "apps.launch"
    app_scope: Id
    request_id: Id
    entrypoint: Id | None = None
    display_mode: DisplayMode = "foreground"


class AppsFocusAction(_Action):
    kind: Literal["apps.focus"] = "apps.focus"
    instance_id: Id


class AppsCloseAction(_Action):
    kind: Literal["apps.close"] = "apps.close"
    instance_id: Id


class AppsOpenDefaultAction(_Action):
    kind: Literal["apps.open_default"] = "apps.open_default"


class ConversationSendTextAction(_Action):
    kind: Literal["conversation.send_text"] = "conversation.send_text"
    message_id: Id
    markdown: str = Field(min_length=1, max_length=MAX_TEXT)


class ConversationRetryAction(_Action):
    kind: Literal["conversation.retry"] = "conversation.retry"
    message_id: Id


# What focus decides: every action but the conversation's.
RuntimeAction = Annotated[
    LifecycleAction
    | AppsOpenAction
    | AppsLaunchAction
    | AppsFocusAction
    | AppsCloseAction
    | AppsOpenDefaultAction,
    Field(discriminator="kind"),
]
AppAction = Annotated[
    LifecycleAction
    | AppsOpenAction
    | AppsLaunchAction
    | AppsFocusAction
    | AppsCloseAction
    | AppsOpenDefaultAction
    | ConversationSendTextAction
    | ConversationRetryAction,
    Field(discriminator="kind"),
]
APP_ACTION: Final[TypeAdapter[AppAction]] = TypeAdapter(AppAction)
CONVERSATION_ACTION_KINDS: Final = frozenset({"conversation.send_text", "conversation.retry"})
SURFACE_ACTION_KINDS: Final = frozenset(
    {
        "lifecycle.foreground",
        "lifecycle.background",
        "lifecycle.close",
        "apps.open",
        "apps.launch",
        "apps.focus",
        "apps.close",
        "apps.open_default",
    }
)


class ActionDispatchRequest(Message):
    """A lifecycle or navigation action of the asking instance, decided by focus; answered
    with a `CommandReceipt` whose `id` is the instance it acted on."""

    type: Literal["focus.sdk.actions.dispatch"] = "focus.sdk.actions.dispatch"
    from_instance_id: Id
    action: RuntimeAction
