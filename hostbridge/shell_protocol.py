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

The frames are defined by direction, in `_shell_inbound` (Shell → runtime, parsed) and
`_shell_outbound` (runtime → Shell, built), over what both share in `_shell_frame` (the limits,
the field types, the base); this module gathers them, and is the one the hostbridge, the tests
and the drill import (`lineup.hostbridge.shell_protocol.X`).

No I/O here: these modules import pydantic only.
"""

from __future__ import annotations

from ._shell_frame import (
    HEARTBEAT_S,
    MAX_CAPABILITY_DONE_FRAME,
    MAX_DRAFT_FIELDS,
    MAX_DRAFT_TEXT,
    MAX_ID,
    MAX_ITEMS_FRAME_BYTES,
    MAX_LAUNCHABLE,
    MAX_PICKED_B64,
    MAX_SHELL_FRAME,
    MAX_SHELL_FRAME_BYTES,
    MAX_SOCKET_MESSAGE_BYTES,
    MAX_SURFACE_REQUEST_ID,
    SHELL_SUBPROTOCOL,
    SILENCE_S,
    TOKEN_SUBPROTOCOL,
    ShellFrame,
)
from ._shell_inbound import (
    SHELL_TO_RUNTIME,
    UI_EVENT_KINDS,
    AppSessionContinueFrame,
    CapabilityAnswerFrame,
    CapabilityDoneFrame,
    CapabilityFrame,
    ComposerSubmit,
    GrantSetFrame,
    GrantsListFrame,
    InteractionAnswerFrame,
    InteractionDraftFrame,
    MessageRetry,
    ModeSwitch,
    PickedFileFrame,
    ShellAction,
    ShellInbound,
    ShellReady,
    SurfaceLogFrame,
    SurfaceRejectedFrame,
    SurfaceRequestFrame,
    SurfaceUnavailableFrame,
    TaskClose,
    TaskFinish,
    TimelineEarlier,
    UiEventBody,
    UiEventFrame,
    UiIntentFrame,
    UiOpenFrame,
    refused_type,
)
from ._shell_outbound import (
    RUNTIME_TO_SHELL,
    RuntimeStatus,
    ShellApps,
    ShellAppSessions,
    ShellArtifacts,
    ShellCapabilityEnded,
    ShellCapabilityPrompt,
    ShellCapabilityRun,
    ShellDrafts,
    ShellGrants,
    ShellHeartbeat,
    ShellHello,
    ShellInstance,
    ShellInteractions,
    ShellItems,
    ShellLaunchable,
    ShellNotice,
    ShellOutbound,
    ShellPage,
    ShellRuntime,
    ShellSessionData,
    ShellSurfaceNotify,
    ShellSurfaceReply,
    ShellView,
    SurfaceError,
    encode,
)

__all__ = [
    "HEARTBEAT_S",
    "MAX_CAPABILITY_DONE_FRAME",
    "MAX_DRAFT_FIELDS",
    "MAX_DRAFT_TEXT",
    "MAX_ID",
    "MAX_ITEMS_FRAME_BYTES",
    "MAX_LAUNCHABLE",
    "MAX_PICKED_B64",
    "MAX_SHELL_FRAME",
    "MAX_SHELL_FRAME_BYTES",
    "MAX_SOCKET_MESSAGE_BYTES",
    "MAX_SURFACE_REQUEST_ID",
    "RUNTIME_TO_SHELL",
    "SHELL_SUBPROTOCOL",
    "SHELL_TO_RUNTIME",
    "SILENCE_S",
    "TOKEN_SUBPROTOCOL",
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
    "ModeSwitch",
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
    "ShellSurfaceNotify",
    "ShellSurfaceReply",
    "ShellView",
    "SurfaceError",
    "SurfaceLogFrame",
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
