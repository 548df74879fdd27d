"""An app's instances in the runtime: the focus changes it asks for (seed 003 §3.3), another
app it asks to open, and the runtime's facts about one of them (`Lifecycle`, `Apps`,
`AppContext`). The runtime decides every change."""

from typing import Literal

from pydantic import Field

from lineup.actors.kernel import Message
from lineup.facts.modes import Mode

from .common import Id

__all__ = [
    "AppContextScope",
    "AppOpenReply",
    "AppOpenRequest",
    "ContextReply",
    "ContextRequest",
    "LifecycleRequest",
    "ModeChangedEvent",
    "ModeSwitchRequest",
]

# ---------------------------------------------------------------------------------- lifecycle


class LifecycleRequest(Message):
    """An app asks for focus changes; the runtime decides (seed 003 §3.3)."""

    type: Literal["focus.sdk.lifecycle"] = "focus.sdk.lifecycle"
    instance_id: Id
    action: Literal["foreground", "background", "close"]


# ---------------------------------------------------------------------------------- modes


class ModeSwitchRequest(Message):
    """An app with modes (Interact: seed 003 §5.1) asks the runtime to switch one of its live
    instances to `mode`; answered with a `CommandReceipt` once the runtime has recorded it,
    and the app is told (`ModeChangedEvent`). Refused `app_instance_not_found` for an
    instance not the app's or not live, `invalid_arguments` for an app without modes."""

    type: Literal["focus.sdk.mode.switch"] = "focus.sdk.mode.switch"
    instance_id: Id
    mode: Mode


class ModeChangedEvent(Message):
    """Runtime → app: an instance's mode, as the runtime records it: switched (`restored`
    False), or the instance came back in front in the mode it was in (`restored` True: the
    app resumes that mode). Told at least once; the same mode again changes nothing."""

    type: Literal["miniapp.mode.changed"] = "miniapp.mode.changed"
    instance_id: Id
    mode: Mode
    restored: bool = False


# ---------------------------------------------------------------------------------- navigation


class AppOpenRequest(Message):
    """An app asks the runtime to open another app (a new instance, brought forward). The
    runtime decides: a disabled or unknown app is refused with its code."""

    type: Literal["focus.sdk.apps.open"] = "focus.sdk.apps.open"
    app_scope: Id
    request_id: Id  # the asking app's idempotency key: a retry opens nothing new


class AppOpenReply(Message):
    type: Literal["focus.sdk.apps.open.reply"] = "focus.sdk.apps.open.reply"
    instance_id: Id
    app_scope: Id


# ---------------------------------------------------------------------------------- context


class ContextRequest(Message):
    """The runtime's facts about one of the app's own instances (seed 003 §3 `MiniAppContext`).
    Another app's instance, or one that is not live, is refused `app_instance_not_found`."""

    type: Literal["router.sdk.context"] = "router.sdk.context"
    instance_id: Id


class AppContextScope(Message):
    """Where an instance belongs (seed 004 §6.1 `scope`): the conversation (None before the
    runtime's first login), the runtime operation it serves, and the instance that launched it
    (`apps.launch`), each None when it has none."""

    type: Literal["router.sdk.context.scope"] = "router.sdk.context.scope"
    conversation_id: Id | None = None
    operation_id: Id | None = None
    parent_instance_id: Id | None = None


class ContextReply(Message):
    """Injected by the runtime, never passed by the app: its scope, the instance, the
    conversation it belongs to (None before the runtime's first login), the instance's state,
    and `mode` (the chat's recorded mode, `im` / `audio` / `video`; `app` for any other app);
    and the instance's record (seed 000 §6): the instance whose app opened it, if one did."""

    type: Literal["router.sdk.context.reply"] = "router.sdk.context.reply"
    app_scope: Id
    # The rest of seed 004 §6.1: `core` for the runtime's own code, else `installed`; the
    # entrypoint the instance was opened at (None: none named); where it belongs; the
    # capabilities the app may use now (declared, provided here, not denied).
    kind: Literal["core", "installed"] = "installed"
    entrypoint: Id | None = None
    scope: AppContextScope = AppContextScope()
    granted_permissions: tuple[Id, ...] = ()
    instance_id: Id
    conversation_id: Id | None
    state: str = Field(max_length=40)
    mode: Literal["im", "audio", "video", "app"]
    parent_instance_id: Id | None = None
