"""hostbridge's whole public protocol. Every tag starts with `hostbridge.`.

Besides these the actor answers the kernel's `kernel.health.request`.
"""

from typing import Any, Literal

from pydantic import Field

from lineup.actors.kernel import Message
from lineup.actors.kernel.control import (
    SUPERVISOR_PHASES,
    HealthReply,
    HealthRequest,
    RuntimeStateEvent,
)
from lineup.actors.store.messages import AppSessionState
from lineup.facts.instances import InstanceState
from lineup.facts.interactions import InteractionState
from lineup.facts.modes import Mode
from lineup.sdk.protocol import ArtifactInfo, ViewItem

__all__ = [
    "SUPERVISOR_PHASES",
    "AppSessionView",
    "AppSessionsUpdatedEvent",
    "AppsUpdatedEvent",
    "ArtifactCreatedEvent",
    "CapabilityEndedEvent",
    "CapabilityGatewayStartedEvent",
    "CapabilityPromptEvent",
    "CapabilityPromptView",
    "GrantsChangedEvent",
    "HealthReply",
    "HealthRequest",
    "InteractionView",
    "InteractionsUpdatedEvent",
    "NoticeEvent",
    "ProviderRunEvent",
    "ProviderRunView",
    "RuntimeStateEvent",
    "SessionDataUpdatedEvent",
    "SurfaceNotifyEvent",
    "SurfaceToolProgressEvent",
    "ViewItemsUpdatedEvent",
    "ViewUpdatedEvent",
]


class ViewUpdatedEvent(Message):
    """focus → hostbridge: an instance's new view; pushed to every connected Shell.

    `version` is focus's monotonic clock when it took the view: a tell and a greeting's reply
    (`focus.ui.views.get`) travel apart and may cross, and the hostbridge keeps the newer."""

    type: Literal["hostbridge.view.updated"] = "hostbridge.view.updated"
    app_scope: str
    instance_id: str
    view: dict[str, Any]
    version: int = 0


class ViewItemsUpdatedEvent(Message):
    """focus → hostbridge: items of an instance that are new or changed (a bounded batch);
    each goes to every connected Shell as its own frame."""

    type: Literal["hostbridge.view.items.updated"] = "hostbridge.view.items.updated"
    app_scope: str
    instance_id: str
    items: tuple[ViewItem, ...]


# The supervisor's own part of the lifecycle. A RuntimeStateEvent from the supervisor naming one
# of these is shown over the link's states until the supervisor tells any other state, which
# only ends its part (the link's own state comes from the transport).
class NoticeEvent(Message):
    """focus → hostbridge: a notice for every Shell (`shell.notice`), e.g. a development app
    reloaded (`info`) or its new version refused (`error`). Shown as text only."""

    type: Literal["hostbridge.notice"] = "hostbridge.notice"
    level: Literal["info", "error"]
    text: str = Field(min_length=1, max_length=2000)


class LiveInstance(Message):
    """One live instance as focus lists it for the Shell: its app and that app's title, and
    its mode (Interact's; None for an app without modes)."""

    type: Literal["hostbridge.apps.instance"] = "hostbridge.apps.instance"
    instance_id: str
    app_scope: str
    state: InstanceState
    title: str
    mode: Mode | None = None


class LaunchableApp(Message):
    """An app the Shell's launcher may open (`ui.open`), by its title."""

    type: Literal["hostbridge.apps.launchable"] = "hostbridge.apps.launchable"
    app_scope: str
    title: str


class AppsUpdatedEvent(Message):
    """focus → hostbridge: the live instances, in stack order, and which one is in front;
    and the apps the user may open from the Shell's launcher (`launchable`: each enabled,
    active app but the chat, by title), told again whenever the registry changes. A title is
    the app's manifest's, bounded there; the hostbridge checks each against the Shell's
    protocol again (`_views`).

    `version` is focus's monotonic clock when it made the list: a tell and a greeting's reply
    (`focus.ui.views.get`) travel apart and may cross, and the hostbridge keeps the newer."""

    type: Literal["hostbridge.apps.updated"] = "hostbridge.apps.updated"
    foreground: str
    instances: tuple[LiveInstance, ...]
    launchable: tuple[LaunchableApp, ...] = ()
    version: int = 0


# ---------------------------------------------------------------- standard interactions (issue 12)

InteractionKind = Literal["notice", "choice", "confirm", "input"]


class InteractionView(Message):
    """One standard interaction as the Shell shows it: its card, and where the card goes.

    `request` is the request as the runtime checked it (`lineup.sdk.interactions`), all of its
    text from the Agent or the app, shown as text only. `result` is the answer that won (set
    from `submitted` on); `terminal_code` the code of a cancelled, expired or failed one.
    Placement: `source` `agent_tool` is the main IM's, or with `app_session_id` that sub-session's
    (its group in the IM, and the overlay above its instance while that is in front);
    `miniapp` is the card of the app `owner_scope` / `instance_id` asked, shown in that app's
    own container. The Shell sends back only `interaction_id` and the answer."""

    type: Literal["hostbridge.interaction"] = "hostbridge.interaction"
    interaction_id: str = Field(min_length=1, max_length=200)
    kind: InteractionKind
    state: InteractionState
    request: dict[str, Any]
    result: dict[str, Any] | None = None
    terminal_code: str | None = None
    source: Literal["agent_tool", "miniapp"]
    owner_scope: str = Field(min_length=1, max_length=100)
    instance_id: str | None = None
    app_session_id: str | None = None
    call_id: str | None = None  # the Agent's tool call, for `agent_tool`
    created_at: float
    expires_at: float | None = None  # None: never (a notice)


class AppSessionView(Message):
    """One app sub-session: the folded group of an instance in the main IM."""

    type: Literal["hostbridge.app_session"] = "hostbridge.app_session"
    app_session_id: str = Field(min_length=1, max_length=200)
    app_scope: str = Field(min_length=1, max_length=100)
    instance_id: str = Field(min_length=1, max_length=200)
    state: AppSessionState
    opened_at: float
    closed_at: float | None = None
    previous_app_session_id: str | None = None  # "Continue" of an ended one references it


class InteractionsUpdatedEvent(Message):
    """router → hostbridge: interactions that are new or whose state changed (upsert by id),
    pushed to every connected Shell as `shell.interactions`."""

    type: Literal["hostbridge.interactions.updated"] = "hostbridge.interactions.updated"
    interactions: tuple[InteractionView, ...]


class AppSessionsUpdatedEvent(Message):
    """router → hostbridge: app sub-sessions opened or closed (upsert by id), pushed to every
    connected Shell as `shell.app_sessions`."""

    type: Literal["hostbridge.app_sessions.updated"] = "hostbridge.app_sessions.updated"
    sessions: tuple[AppSessionView, ...]


# ---------------------------------------------------------------- surfaces and artifacts (issue 13)


class SurfaceToolProgressEvent(Message):
    """focus → hostbridge: progress of a Surface's own `tools/call` (`request_id`, the Shell's),
    as MCP's `notifications/progress` params without the token, for the Shell that asked."""

    type: Literal["hostbridge.surface.tool_progress"] = "hostbridge.surface.tool_progress"
    instance_id: str
    surface_id: str
    request_id: str
    progress: dict[str, Any]


class SessionDataUpdatedEvent(Message):
    """focus → hostbridge: a newer revision of an instance's session data that a Surface
    subscribed to (`focus.ui.surface.session_data`, op `subscribe`). Revisions only go up."""

    type: Literal["hostbridge.session_data.updated"] = "hostbridge.session_data.updated"
    instance_id: str
    surface_id: str
    data: dict[str, Any] | None
    revision: int


class SurfaceNotifyEvent(Message):
    """focus or router → hostbridge: news for the Surface `surface_id` of `instance_id` that
    subscribed to it (seed 004 §6's share of the SDK): its app's new view model (`app_state`,
    `params` `{"view", "seq"}`, from focus) or new Agent messages of its app's inbox
    (`agent_messages`, `params` `{"messages": [AgentMessage...]}`, from the router). Dropped
    unless that Surface is still the instance's; the Shell's bridge tells its iframe."""

    type: Literal["hostbridge.surface.notify"] = "hostbridge.surface.notify"
    instance_id: str
    surface_id: str
    kind: Literal["app_state", "agent_messages"]
    params: dict[str, Any]


class ArtifactCreatedEvent(Message):
    """gateway → hostbridge: an app made an artifact; its card goes to every Shell."""

    type: Literal["hostbridge.artifact.created"] = "hostbridge.artifact.created"
    artifact: ArtifactInfo


# ---------------------------------------------------------------------------------- capabilities
#
# The gateway tells; the hostbridge shows the Shells and sends the user's answers back as
# `gateway.ui.*` requests. A hostbridge that (re)starts, or a Shell that connects, gets what
# is pending from `gateway.ui.capability.pending`.


class CapabilityPromptView(Message):
    """The runtime's own permission prompt (not a standard interaction): the app, the
    capability and the app's stated purpose, each shown as text and never as markup, with
    Allow once / Always allow (only where `rememberable`) / Deny, until `expires_at`.
    `detail` is the runtime's own line about what will happen (e.g. the bundle an
    `app.install` would install), never the app's."""

    type: Literal["hostbridge.capability.prompt.view"] = "hostbridge.capability.prompt.view"
    prompt_id: str
    app_scope: str
    app_title: str
    instance_id: str
    capability: str
    purpose: str
    detail: str = ""
    rememberable: bool
    expires_at: float  # wall clock seconds


class ProviderRunView(Message):
    """A host provider the Shell runs, after the gateway's decision: `notification.show`
    (`input` is its `NotificationShow`), `artifact.save` (`artifact` is the app's artifact to
    download), `file.open` (`input` is its `FileOpen`: the Shell shows its picker). The Shell
    answers with `gateway.ui.provider.done` before `expires_at`, or the run fails."""

    type: Literal["hostbridge.capability.run.view"] = "hostbridge.capability.run.view"
    run_id: str
    app_scope: str
    app_title: str
    instance_id: str
    capability: str
    input: dict[str, Any]
    artifact: ArtifactInfo | None = None
    expires_at: float


class CapabilityPromptEvent(Message):
    type: Literal["hostbridge.capability.prompt"] = "hostbridge.capability.prompt"
    prompt: CapabilityPromptView


class ProviderRunEvent(Message):
    type: Literal["hostbridge.capability.run"] = "hostbridge.capability.run"
    run: ProviderRunView


class CapabilityEndedEvent(Message):
    """A prompt or a run (`id`: its prompt_id or run_id) is over, answered here or elsewhere,
    or expired: every Shell takes it down."""

    type: Literal["hostbridge.capability.ended"] = "hostbridge.capability.ended"
    id: str
    outcome: str  # the decision or the status, for the Shell's own display


class CapabilityGatewayStartedEvent(Message):
    """The gateway (re)started: the prompts and runs an earlier one told of may be gone with it,
    so the hostbridge lists what is pending again, and takes down what is not."""

    type: Literal["hostbridge.capability.gateway_started"] = "hostbridge.capability.gateway_started"


class GrantsChangedEvent(Message):
    """A grant was made or revoked: Shells showing the permissions page read it again."""

    type: Literal["hostbridge.capability.grants.changed"] = "hostbridge.capability.grants.changed"
