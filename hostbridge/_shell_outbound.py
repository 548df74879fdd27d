"""Runtime → Shell: every frame the hostbridge sends a Shell, one discriminated union
(`ShellOutbound`) with one `TypeAdapter` (`RUNTIME_TO_SHELL`). Each is built from these models and
serialised once per broadcast (`encode`); a frame the runtime's peers would make outside the
protocol cannot be built, so it is dropped (and logged) before it reaches a Shell.

No I/O here: this module imports pydantic only.
"""

from typing import Annotated, Any, Final, Literal

from pydantic import Field, SerializerFunctionWrapHandler, TypeAdapter, model_serializer

from lineup.facts.modes import Mode

from ._shell_frame import (
    MAX_LAUNCHABLE,
    MAX_NOTICE,
    MAX_SURFACE_REQUEST_ID,
    MAX_TITLE,
    Code,
    Id,
    Openable,
    Scope,
    ShellFrame,
    State,
)

__all__ = [
    "RUNTIME_TO_SHELL",
    "RuntimeStatus",
    "ShellAppSessions",
    "ShellApps",
    "ShellArtifacts",
    "ShellCapabilityEnded",
    "ShellCapabilityPrompt",
    "ShellCapabilityRun",
    "ShellDrafts",
    "ShellGrants",
    "ShellHeartbeat",
    "ShellHello",
    "ShellInstance",
    "ShellInteractions",
    "ShellItems",
    "ShellLaunchable",
    "ShellNotice",
    "ShellOutbound",
    "ShellPage",
    "ShellRuntime",
    "ShellSessionData",
    "ShellSurfaceNotify",
    "ShellSurfaceReply",
    "ShellView",
    "SurfaceError",
    "encode",
]


class RuntimeStatus(ShellFrame):
    state: State  # the runtime's lifecycle state (DESIGN §5)
    reason: State | None = None  # an appserver_* code while reconnecting / offline_degraded


class ShellHello(ShellFrame):
    """The first frame of a greeting: where the runtime is."""

    type: Literal["shell.hello"] = "shell.hello"
    runtime: RuntimeStatus


class ShellRuntime(ShellFrame):
    """The runtime's lifecycle state changed."""

    type: Literal["shell.runtime"] = "shell.runtime"
    state: State
    reason: State | None = None


class ShellInstance(ShellFrame):
    instance_id: Id
    app_scope: Scope
    state: State
    title: str = Field(max_length=MAX_TITLE)
    mode: Mode | None = None  # Interact's (seed 003 §5.1); None for an app without modes


class ShellLaunchable(ShellFrame):
    app_scope: Openable
    title: str = Field(max_length=MAX_TITLE)


class ShellApps(ShellFrame):
    """The live instances, bottom of the focus stack first, and which one is in front; and
    the apps the Shell's launcher offers (enabled and active, the chat aside), by title: the
    user's choice is a `ui.open`."""

    type: Literal["shell.apps"] = "shell.apps"
    foreground: Id
    instances: tuple[ShellInstance, ...]
    launchable: tuple[ShellLaunchable, ...] = Field(default=(), max_length=MAX_LAUNCHABLE)


class ShellView(ShellFrame):
    """An instance's latest view. Its content is the app's (and, for a chat timeline, Markdown
    already turned into token trees by the hostbridge); the Shell re-checks what it renders."""

    type: Literal["shell.view"] = "shell.view"
    app_scope: Scope
    instance_id: Id
    view: dict[str, Any]


class ShellItems(ShellFrame):
    """Items of an instance's list, new or changed, in order: each holds its `id`, `order`
    and fields (for a chat message, Markdown already turned into a token tree, `tree`)."""

    type: Literal["shell.items"] = "shell.items"
    app_scope: Scope
    instance_id: Id
    items: tuple[dict[str, Any], ...] = Field(min_length=1)


class ShellPage(ShellFrame):
    """The end of a page of items (the greeting's, or one asked for): `more` when older ones
    remain (the Shell offers to show them)."""

    type: Literal["shell.page"] = "shell.page"
    instance_id: Id
    more: bool


class ShellNotice(ShellFrame):
    """A notice for the user: `text` says what did not happen; `code`, for a refusal, is its
    stable code, which the Shell says in words (core/words.js) and keeps in a details line."""

    type: Literal["shell.notice"] = "shell.notice"
    level: Literal["info", "error"]
    text: str = Field(min_length=1, max_length=MAX_NOTICE)
    code: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_]{0,63}$")


class ShellInteractions(ShellFrame):
    """Standard interactions, new or changed (upsert by `interaction_id`): each is a
    `hostbridge.messages.InteractionView` as JSON. Its text is the Agent's or the app's: the
    Shell shows it as text only."""

    type: Literal["shell.interactions"] = "shell.interactions"
    interactions: tuple[dict[str, Any], ...]


class ShellAppSessions(ShellFrame):
    """App sub-sessions, new or changed (upsert by `app_session_id`): each an
    `AppSessionView` as JSON."""

    type: Literal["shell.app_sessions"] = "shell.app_sessions"
    sessions: tuple[dict[str, Any], ...]


class ShellDrafts(ShellFrame):
    """The drafts the hostbridge holds, by interaction id, then by field id (at a greeting)."""

    type: Literal["shell.drafts"] = "shell.drafts"
    drafts: dict[str, dict[str, str | float]]


class ShellHeartbeat(ShellFrame):
    """The hostbridge is alive: sent every `HEARTBEAT_S`."""

    type: Literal["shell.heartbeat"] = "shell.heartbeat"


class SurfaceError(ShellFrame):
    code: Code


class ShellSurfaceReply(ShellFrame):
    """The answer to one `surface.request`: its `result`, or the `error` code (the hostbridge's
    refusal or the runtime's), to the Shell that asked only."""

    type: Literal["shell.surface.reply"] = "shell.surface.reply"
    request_id: Annotated[str, Field(min_length=1, max_length=MAX_SURFACE_REQUEST_ID)]
    instance_id: Id
    surface_id: Id
    result: dict[str, Any] | None = None
    error: SurfaceError | None = None
    # Not the answer yet: progress of a `tools/call` (MCP's `notifications/progress` params).
    progress: dict[str, Any] | None = None

    @model_serializer(mode="wrap")
    def _progress_only_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)  # an answer is written as it was before progress
        if self.progress is None:
            data.pop("progress", None)
        return data


class ShellSessionData(ShellFrame):
    """A newer revision of a Surface's session data (it subscribed): to every Shell, each
    forwarding it to its iframe if that subscribed."""

    type: Literal["shell.session_data"] = "shell.session_data"
    instance_id: Id
    surface_id: Id
    data: dict[str, Any] | None
    revision: int = Field(ge=0)


class ShellSurfaceNotify(ShellFrame):
    """News for a Surface that subscribed to it (`hostbridge.surface.notify`): its app's view
    model (`app_state`) or its app's new Agent messages (`agent_messages`); to every Shell,
    each telling its iframe if that subscribed."""

    type: Literal["shell.surface.notify"] = "shell.surface.notify"
    instance_id: Id
    surface_id: Id
    kind: Literal["app_state", "agent_messages"]
    params: dict[str, Any]


class ShellArtifacts(ShellFrame):
    """Artifact cards, new or listed (upsert by `artifact_id`): each an `ArtifactInfo` as JSON
    plus the `ticket` that opens it at `/artifacts/{artifact_id}?ticket=` (never the token)."""

    type: Literal["shell.artifacts"] = "shell.artifacts"
    artifacts: tuple[dict[str, Any], ...]


class ShellCapabilityPrompt(ShellFrame):
    """The runtime's own permission prompt (upsert by `prompt_id`): a
    `hostbridge.messages.CapabilityPromptView` as JSON. Its app title and purpose are the
    app's: the Shell shows them as text only, in a dialog of its own DOM."""

    type: Literal["shell.capability.prompt"] = "shell.capability.prompt"
    prompt: dict[str, Any]


class ShellCapabilityRun(ShellFrame):
    """A host provider for the Shell to run (upsert by `run_id`): a `ProviderRunView` as JSON;
    for `artifact.save` its `artifact` carries the `ticket` that downloads it."""

    type: Literal["shell.capability.run"] = "shell.capability.run"
    run: dict[str, Any]


class ShellCapabilityEnded(ShellFrame):
    """A prompt or a run (`id`) is over: every Shell takes it down."""

    type: Literal["shell.capability.ended"] = "shell.capability.ended"
    id: Id
    outcome: State


class ShellGrants(ShellFrame):
    """What each app may do, for the permissions page: each a `GrantView` as JSON."""

    type: Literal["shell.grants"] = "shell.grants"
    grants: tuple[dict[str, Any], ...]


ShellOutbound = Annotated[
    ShellHello
    | ShellRuntime
    | ShellApps
    | ShellView
    | ShellItems
    | ShellPage
    | ShellNotice
    | ShellInteractions
    | ShellAppSessions
    | ShellDrafts
    | ShellHeartbeat
    | ShellSurfaceReply
    | ShellSessionData
    | ShellSurfaceNotify
    | ShellArtifacts
    | ShellCapabilityPrompt
    | ShellCapabilityRun
    | ShellCapabilityEnded
    | ShellGrants,
    Field(discriminator="type"),
]
RUNTIME_TO_SHELL: Final[TypeAdapter[ShellOutbound]] = TypeAdapter(ShellOutbound)


def encode(frame: ShellOutbound) -> str:
    """The frame as the text of one WebSocket message."""
    return frame.model_dump_json()
