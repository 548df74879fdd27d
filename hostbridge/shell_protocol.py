"""The Shell protocol: every frame between the browser Shell and the hostbridge (DESIGN §7).

Theory of operation: one WebSocket per Shell, one JSON object per text frame, tagged by
`type`. The Shell speaks first (`shell.ready`) and is answered with a greeting: `shell.hello`,
`shell.apps`, one `shell.view` per live instance and, for an instance with items (a chat's
messages), its newest page: `shell.items` frames, then a `shell.page` saying whether older ones
remain. From then on the runtime pushes whole snapshots (`shell.runtime`, `shell.apps`,
`shell.view`), new or changed items as `shell.items` (each frame a batch of at most
`MAX_ITEMS_FRAME_BYTES`, or one item: no frame grows with the timeline), and notices
(`shell.notice`); the Shell sends the user's actions: `ui.intent` (switch to or close an
instance), `ui.open` (open an app: the deep link `#open=<app_scope>`) and `ui.event` (an
action on an instance's view, handed to the app that owns it; `timeline.earlier`, the next
older page, the hostbridge answers itself).

Standard interactions (issue 12): the greeting also holds `shell.interactions` and
`shell.app_sessions` (every view the hostbridge knows, upserted by id; later ones on every
change) and `shell.drafts` (what the user typed into a pending input's fields, kept in the
hostbridge's memory only). The Shell answers with `interaction.answer` (the id and the answer,
nothing else: the runtime takes the rest from its record) and saves a draft with
`interaction.draft`. `shell.heartbeat` comes every `HEARTBEAT_S`, whatever else is sent: a
Shell that hears nothing for `SILENCE_S` shows itself disconnected and reconnects.

Capabilities (issue 14): the runtime's own permission prompt and the host providers the Shell
runs come as `shell.capability.prompt` / `shell.capability.run` (upsert by id) until
`shell.capability.ended`; the Shell answers with `capability.answer` and `capability.done` (a
picked file's bytes in it, base64: the one frame allowed past `MAX_SHELL_FRAME`, up to
`MAX_CAPABILITY_DONE_FRAME`). The permissions page asks `grants.list`, changes one with
`grant.set`, and is sent `shell.grants` (to the Shell that asked, and to all on a change).

Each direction is one discriminated union with one module-level `TypeAdapter`. What the Shell
sends is untrusted: every model refuses unknown fields and bounds its sizes, and the hostbridge
parses each frame once, with `SHELL_TO_RUNTIME`, before anything else looks at it. What the
runtime sends is built from the `RUNTIME_TO_SHELL` models and serialised once per broadcast.
The Shell (`web/js/`) speaks exactly these tags (tests/hostbridge/test_shell_protocol.py checks
both ways).

No I/O here: this module imports pydantic only.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

__all__ = [
    "HEARTBEAT_S",
    "MAX_CAPABILITY_DONE_FRAME",
    "MAX_DRAFT_FIELDS",
    "MAX_ID",
    "MAX_ITEMS_FRAME_BYTES",
    "MAX_PICKED_B64",
    "MAX_SHELL_FRAME",
    "MAX_SHELL_FRAME_BYTES",
    "MAX_SOCKET_MESSAGE_BYTES",
    "MAX_SURFACE_REQUEST_ID",
    "RUNTIME_TO_SHELL",
    "SHELL_TO_RUNTIME",
    "SILENCE_S",
    "UI_EVENT_KINDS",
    "AppSessionContinueFrame",
    "CapabilityAnswerFrame",
    "CapabilityDoneFrame",
    "CapabilityFrame",
    "ComposerSubmit",
    "GrantSetFrame",
    "GrantsListFrame",
    "InteractionAnswerFrame",
    "InteractionDraftFrame",
    "MessageRetry",
    "PickedFileFrame",
    "RuntimeStatus",
    "ShellAction",
    "ShellAppSessions",
    "ShellApps",
    "ShellArtifacts",
    "ShellCapabilityEnded",
    "ShellCapabilityPrompt",
    "ShellCapabilityRun",
    "ShellDrafts",
    "ShellFrame",
    "ShellGrants",
    "ShellHeartbeat",
    "ShellHello",
    "ShellInbound",
    "ShellInstance",
    "ShellInteractions",
    "ShellItems",
    "ShellLaunchable",
    "ShellNotice",
    "ShellOutbound",
    "ShellPage",
    "ShellReady",
    "ShellRuntime",
    "ShellSessionData",
    "ShellSurfaceReply",
    "ShellView",
    "SurfaceError",
    "SurfaceRejectedFrame",
    "SurfaceRequestFrame",
    "SurfaceUnavailableFrame",
    "TaskClose",
    "TaskFinish",
    "TimelineEarlier",
    "UiEventBody",
    "UiEventFrame",
    "UiIntentFrame",
    "UiOpenFrame",
    "encode",
    "refused_type",
]

MAX_SHELL_FRAME: Final = 64 * 1024  # characters in one Shell frame: user text, small intents
# The most UTF-8 such a frame can take: the socket refuses a larger message as it reads it.
MAX_SHELL_FRAME_BYTES: Final = 4 * MAX_SHELL_FRAME
MAX_ID: Final = 200  # instance, message and client ids
MAX_SCOPE: Final = 100  # an app_scope
MAX_STATE: Final = 64  # a runtime or instance state, a reason code
MAX_TITLE: Final = 200
MAX_LAUNCHABLE: Final = 500  # apps in the launcher's menu
MAX_NOTICE: Final = 2000  # the Shell shows no more of a notice
# Items in one `shell.items` frame (or a single item, whatever its size: at most a message's tree).
MAX_ITEMS_FRAME_BYTES: Final = 1024 * 1024
MAX_ORDER: Final = 2**53 - 1  # an item's order (what a JavaScript Shell reads back exactly)
HEARTBEAT_S: Final = 1.5  # the hostbridge sends `shell.heartbeat` this often to every Shell
SILENCE_S: Final = 4.0  # the Shell (web/js/core/connection.js) gives the socket up after this
MAX_DRAFT_FIELDS: Final = 12  # an input has at most 12 fields (lineup.sdk.interactions)
MAX_FIELD_ID: Final = 64
MAX_DRAFT_TEXT: Final = 16384  # a textarea's longest value
# A picked file (`capability.done`): at most an artifact's bytes (lineup.sdk.protocol
# MAX_ARTIFACT_BYTES, 256 KiB), base64; its frame may be this much longer than a user's.
MAX_PICKED_B64: Final = (256 * 1024 * 4) // 3 + 4
MAX_CAPABILITY_DONE_FRAME: Final = MAX_PICKED_B64 + 2048
MAX_PICKED_NAME: Final = 1024  # as the browser says it; the hostbridge keeps the base name
# What the socket reads of one message before it refuses it (base64 is ASCII: a char a byte).
MAX_SOCKET_MESSAGE_BYTES: Final = max(MAX_SHELL_FRAME_BYTES, MAX_CAPABILITY_DONE_FRAME)

Id = Annotated[str, Field(min_length=1, max_length=MAX_ID)]
Scope = Annotated[str, Field(min_length=1, max_length=MAX_SCOPE)]
State = Annotated[str, Field(min_length=1, max_length=MAX_STATE)]
# An app_scope the user can name to open (`ui.open`), and the launcher offers.
Openable = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,62}$")]


class ShellFrame(BaseModel):
    """Base of every frame, both ways: immutable, and an unknown field is refused."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


# ---------------------------------------------------------------------- Shell → runtime


class ShellReady(ShellFrame):
    """The Shell (re)connected and wants the greeting."""

    type: Literal["shell.ready"] = "shell.ready"


# A user action on a view, by `kind`. The app that owns the view decides what it means; these
# models only say what a Shell may ask of one, and how big it may be.


class ComposerSubmit(ShellFrame):
    kind: Literal["composer.submit"] = "composer.submit"
    text: str = Field(max_length=MAX_SHELL_FRAME)
    # The Shell's own id for this message, so a resubmit after a reconnect is the same message.
    client_id: str | None = Field(default=None, max_length=MAX_ID)


class MessageRetry(ShellFrame):
    kind: Literal["message.retry"] = "message.retry"
    message_id: Id


class TaskFinish(ShellFrame):
    kind: Literal["task.finish"] = "task.finish"


class TaskClose(ShellFrame):
    kind: Literal["task.close"] = "task.close"


class TimelineEarlier(ShellFrame):
    """The page of items shown before the given one (the oldest the Shell has)."""

    kind: Literal["timeline.earlier"] = "timeline.earlier"
    before_order: int = Field(ge=0, le=MAX_ORDER)
    before_id: Id


UiEventBody = Annotated[
    ComposerSubmit | MessageRetry | TaskFinish | TaskClose | TimelineEarlier,
    Field(discriminator="kind"),
]
UI_EVENT_KINDS: Final = frozenset(
    model.model_fields["kind"].default for model in get_args(get_args(UiEventBody)[0])
)


class UiEventFrame(ShellFrame):
    """An action on an instance's view, for the app that owns the instance."""

    type: Literal["ui.event"] = "ui.event"
    instance_id: Id
    # Which app the Shell believes owns the view. Informational only: focus knows the owner.
    app_scope: Scope | None = None
    event: UiEventBody


class UiIntentFrame(ShellFrame):
    """The user switches to, or closes, an instance (the app switcher)."""

    type: Literal["ui.intent"] = "ui.intent"
    intent: Literal["focus", "close"]
    instance_id: Id


class UiOpenFrame(ShellFrame):
    """The user names an app to open: the Shell's deep link `#open=<app_scope>` (also with
    the token, `#token=<token>&open=<app_scope>`: the fragment is URL-encoded parameters). Its
    topmost live instance comes to the front, else a new one opens (focus's `focus.ui.open`);
    a refusal is a `shell.notice` with its code, and the front stays as it was."""

    type: Literal["ui.open"] = "ui.open"
    app_scope: Openable


class InteractionAnswerFrame(ShellFrame):
    """The user answered a standard interaction's card. Only the id and the answer: the
    runtime checks the answer against the stored request (`lineup.sdk.interactions`)."""

    type: Literal["interaction.answer"] = "interaction.answer"
    interaction_id: Id
    answer: dict[Annotated[str, Field(max_length=MAX_FIELD_ID)], Any] = Field(max_length=4)


FieldId = Annotated[str, Field(min_length=1, max_length=MAX_FIELD_ID)]
DraftValue = (
    Annotated[str, Field(max_length=MAX_DRAFT_TEXT)] | Annotated[float, Field(allow_inf_nan=False)]
)


class InteractionDraftFrame(ShellFrame):
    """What the user has typed so far into a pending input's fields (kept in memory only)."""

    type: Literal["interaction.draft"] = "interaction.draft"
    interaction_id: Id
    values: dict[FieldId, DraftValue] = Field(max_length=MAX_DRAFT_FIELDS)


class AppSessionContinueFrame(ShellFrame):
    """The user chose "Continue" on an ended sub-session: a new instance of its app, with a new
    sub-session that references the old one (seed 000 §7.3)."""

    type: Literal["app_session.continue"] = "app_session.continue"
    app_session_id: Id


# Surfaces (issue 13). The Shell's bridge (web/js/core/bridge.js) answers most of a Surface's
# messages itself; what needs the runtime comes as `surface.request`, which the hostbridge
# checks again (a live instance whose view is that Surface, a method of `_surfaces.METHODS`,
# its params, its size) before focus checks it a third time. `method` and `params` are plain
# here so that a wrong one is answered (`shell.surface.reply` with its code), not just dropped.

MAX_SURFACE_REQUEST_ID: Final = 64
Code = Annotated[str, Field(min_length=1, max_length=MAX_STATE, pattern=r"^[a-z0-9_]+$")]


class SurfaceRequestFrame(ShellFrame):
    """A bridge request of a mounted Surface that needs the runtime, answered to this Shell
    only with `shell.surface.reply` of the same `request_id`."""

    type: Literal["surface.request"] = "surface.request"
    request_id: Annotated[str, Field(min_length=1, max_length=MAX_SURFACE_REQUEST_ID)]
    instance_id: Id
    surface_id: Id
    method: Annotated[str, Field(min_length=1, max_length=64)]
    params: dict[str, Any] = Field(default_factory=dict)


class SurfaceRejectedFrame(ShellFrame):
    """The Shell's bridge dropped `count` messages with `code` since it last said (at most once
    a second): the bridge rejection counter. `instance_id` None: a window that is no Surface."""

    type: Literal["surface.rejected"] = "surface.rejected"
    instance_id: Id | None = None
    code: Code
    count: int = Field(ge=1, le=1_000_000)


class SurfaceUnavailableFrame(ShellFrame):
    """The Shell did not mount a Surface (its `surface_version` is not one it runs)."""

    type: Literal["surface.unavailable"] = "surface.unavailable"
    instance_id: Id
    surface_id: Id


# Capabilities (issue 14): the user's answer to the runtime's permission prompt, the end of a
# host provider the Shell ran, and the permissions page. Each answered to the Shell that sent it
# (a refusal as a notice with its code): `_server.CapabilityHost`.

Decision = Literal["allow_once", "allow_always", "deny", "cancel"]  # sdk.capabilities


class CapabilityAnswerFrame(ShellFrame):
    """The user's answer to the permission prompt `prompt_id` (Escape: `cancel`)."""

    type: Literal["capability.answer"] = "capability.answer"
    prompt_id: Id
    decision: Decision


class PickedFileFrame(ShellFrame):
    """The file picked for `file.open`, as the browser gave it: its name (the hostbridge keeps
    only the base name), its media type (possibly empty) and its bytes, base64."""

    name: str = Field(min_length=1, max_length=MAX_PICKED_NAME)
    media_type: str = Field(max_length=MAX_STATE * 2)
    content_b64: str = Field(max_length=MAX_PICKED_B64)


class CapabilityDoneFrame(ShellFrame):
    """A host provider the Shell ran ended: `completed` (for `file.open`, with `file`), the
    user closed it (`cancelled_by_user`), or the Shell could not do it (`failed`)."""

    type: Literal["capability.done"] = "capability.done"
    run_id: Id
    status: Literal["completed", "cancelled_by_user", "failed"]
    file: PickedFileFrame | None = None


class GrantsListFrame(ShellFrame):
    """The permissions page wants the grants (`shell.grants`, to this Shell)."""

    type: Literal["grants.list"] = "grants.list"


class GrantSetFrame(ShellFrame):
    """The user on the permissions page: `ask` revokes, `deny` blocks, `allow` grants."""

    type: Literal["grant.set"] = "grant.set"
    app_scope: Scope
    capability: Annotated[str, Field(min_length=1, max_length=MAX_SCOPE)]
    policy: Literal["allow", "deny", "ask"]


CapabilityFrame = CapabilityAnswerFrame | CapabilityDoneFrame | GrantsListFrame | GrantSetFrame

ShellInbound = Annotated[
    ShellReady
    | UiEventFrame
    | UiIntentFrame
    | UiOpenFrame
    | InteractionAnswerFrame
    | InteractionDraftFrame
    | AppSessionContinueFrame
    | SurfaceRequestFrame
    | SurfaceRejectedFrame
    | SurfaceUnavailableFrame
    | CapabilityAnswerFrame
    | CapabilityDoneFrame
    | GrantsListFrame
    | GrantSetFrame,
    Field(discriminator="type"),
]
# What the hostbridge hands on after the greeting: every Shell frame but `shell.ready` (and
# `surface.request` and the capability frames, answered to the one Shell that sent each:
# `_server.SurfaceHost`, `_server.CapabilityHost`).
ShellAction = (
    UiEventFrame
    | UiIntentFrame
    | UiOpenFrame
    | InteractionAnswerFrame
    | InteractionDraftFrame
    | AppSessionContinueFrame
    | SurfaceRejectedFrame
    | SurfaceUnavailableFrame
)
SHELL_TO_RUNTIME: Final[TypeAdapter[ShellInbound]] = TypeAdapter(ShellInbound)

_TAG: Final = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def refused_type(exc: ValidationError) -> str | None:
    """The `type` of a refused frame, for its audit row, if it was a short tag-like string;
    otherwise None. Read from the validation errors, so a frame is never parsed twice."""
    for error in exc.errors(include_url=False, include_context=True, include_input=False):
        tag: object
        if error["loc"]:
            tag = error["loc"][0]  # a known tag whose fields are wrong
        elif error["type"] == "union_tag_invalid":
            tag = (error.get("ctx") or {}).get("tag")  # an unknown tag
        else:
            tag = None  # not JSON, not an object, or no tag at all
        if isinstance(tag, str) and _TAG.fullmatch(tag):
            return tag
        return None
    return None


# ---------------------------------------------------------------------- runtime → Shell


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
    type: Literal["shell.notice"] = "shell.notice"
    level: Literal["info", "error"]
    text: str = Field(min_length=1, max_length=MAX_NOTICE)


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


class ShellSessionData(ShellFrame):
    """A newer revision of a Surface's session data (it subscribed): to every Shell, each
    forwarding it to its iframe if that subscribed."""

    type: Literal["shell.session_data"] = "shell.session_data"
    instance_id: Id
    surface_id: Id
    data: dict[str, Any] | None
    revision: int = Field(ge=0)


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
