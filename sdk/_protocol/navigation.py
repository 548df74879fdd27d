"""Navigation between apps (seed 004 §6.2 `AppNavigationAPI`): what an app may open, and its
requests to launch, focus and close instances and to open the user's default app.

Every request names the asking instance (`from_instance_id`, one of the sender's live
instances; the SDK fills in the process's own) and is decided by the runtime, which checks the
target app (installed, enabled, compatible), its entrypoint, the display mode and the
conversation scope. The refusals are stable codes:

    app_not_installed, app_disabled, app_version_mismatch, app_unavailable   the target app
    entrypoint_not_found        the target's manifest declares no such entrypoint
    surface_unavailable         that entrypoint is a Surface this host does not run
    foreground_required         a foreground launch, a focus of another app's instance or the
                                default app, asked while the asking instance is not in front
    conversation_mismatch       a conversation that is not the runtime's current one
    app_instance_not_found      an instance that is not live
    app_scope_mismatch          an instance neither the asker's nor one it launched (audited)
    lifecycle_denied            closing the recovery app (`chat`)
    quota_exceeded              too many live instances launched by this app
"""

from typing import Literal

from lineup.actors.kernel import Message

from .common import Id

__all__ = [
    "AppCloseRequest",
    "AppFocusRequest",
    "AppInstanceHandle",
    "AppLaunchRequest",
    "AppOpenDefaultRequest",
    "AppSummary",
    "AppsListAvailableReply",
    "AppsListAvailableRequest",
    "DisplayMode",
    "EntrypointSummary",
]

# Where a launched instance goes: in front (the asker goes behind), or behind (no focus change).
DisplayMode = Literal["foreground", "background"]
# The seed's two kinds (seed 004 §4.2): the runtime's own code, or an app that is not.
AppKindName = Literal["core", "installed"]


class EntrypointSummary(Message):
    type: Literal["focus.sdk.apps.entrypoint"] = "focus.sdk.apps.entrypoint"
    id: Id
    kind: Id
    default_eligible: bool


class AppSummary(Message):
    """One app an open would start now (usable, enabled), as the runtime sees it."""

    type: Literal["focus.sdk.apps.summary"] = "focus.sdk.apps.summary"
    app_scope: Id
    title: str
    kind: AppKindName
    entrypoints: tuple[EntrypointSummary, ...] = ()
    is_default: bool = False  # the user's default app (or `chat` when none is set)


class AppsListAvailableRequest(Message):
    type: Literal["focus.sdk.apps.list_available"] = "focus.sdk.apps.list_available"


class AppsListAvailableReply(Message):
    type: Literal["focus.sdk.apps.list_available.reply"] = "focus.sdk.apps.list_available.reply"
    apps: tuple[AppSummary, ...]


class AppLaunchRequest(Message):
    """Launch `app_scope` (its `entrypoint`; None: its first default-eligible one, else its
    first), `display_mode` in front or behind, in `conversation_id` (None: the current one).
    Idempotent by `request_id` (the asker's key, shared with `apps.open`)."""

    type: Literal["focus.sdk.apps.launch"] = "focus.sdk.apps.launch"
    app_scope: Id
    request_id: Id
    from_instance_id: Id
    entrypoint: Id | None = None
    display_mode: DisplayMode = "foreground"
    conversation_id: Id | None = None


class AppInstanceHandle(Message):
    """A launched (or found) instance: what the asker may focus and close later."""

    type: Literal["focus.sdk.apps.instance"] = "focus.sdk.apps.instance"
    instance_id: Id
    app_scope: Id
    state: str
    entrypoint: Id | None = None
    parent_instance_id: Id | None = None


class AppFocusRequest(Message):
    """Bring `instance_id` to the front: one of the asker's, one it launched, or the chat."""

    type: Literal["focus.sdk.apps.focus"] = "focus.sdk.apps.focus"
    instance_id: Id
    from_instance_id: Id


class AppCloseRequest(Message):
    """Close `instance_id`: one of the asker's, or one it launched (never the chat)."""

    type: Literal["focus.sdk.apps.close"] = "focus.sdk.apps.close"
    instance_id: Id
    from_instance_id: Id


class AppOpenDefaultRequest(Message):
    """Bring the user's default app (the chat when none is set) to the front."""

    type: Literal["focus.sdk.apps.open_default"] = "focus.sdk.apps.open_default"
    from_instance_id: Id
