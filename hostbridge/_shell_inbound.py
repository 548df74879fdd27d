"""Shell → runtime: every frame the Shell sends, one discriminated union (`ShellInbound`) with
one `TypeAdapter` (`SHELL_TO_RUNTIME`).

What the Shell sends is untrusted: every model refuses unknown fields and bounds its sizes, and
the hostbridge parses each frame once, with `SHELL_TO_RUNTIME`, before anything else looks at it
(`_server`); what passes is handed on typed (`ShellAction`, `CapabilityFrame`,
`SurfaceRequestFrame`). A frame that fails is named in its audit row by `refused_type`.

No I/O here: this module imports pydantic only.
"""

import re
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import Field, TypeAdapter, ValidationError

from lineup.facts.modes import Mode
from lineup.facts.view_log import MAX_VIEW_LOG_CHARS, ViewLogLevel

from ._shell_frame import (
    MAX_DRAFT_FIELDS,
    MAX_DRAFT_TEXT,
    MAX_FIELD_ID,
    MAX_ID,
    MAX_ORDER,
    MAX_PICKED_B64,
    MAX_PICKED_NAME,
    MAX_SCOPE,
    MAX_SHELL_FRAME,
    MAX_STATE,
    MAX_SURFACE_REQUEST_ID,
    Code,
    Id,
    Openable,
    Scope,
    ShellFrame,
)
from ._shell_outbound import ShellSurfaceReply, SurfaceError

__all__ = [
    "SHELL_TO_RUNTIME",
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
    "ShellAction",
    "ShellInbound",
    "ShellReady",
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
    "refused_type",
]


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


class ModeSwitch(ShellFrame):
    """The user switches the chat's mode (seed 003 §5.1); the chat asks the runtime."""

    kind: Literal["mode.switch"] = "mode.switch"
    mode: Mode


class CardAction(ShellFrame):
    """The user pressed one of a card's buttons (`lineup.sdk.card(actions=…)`): its id."""

    kind: Literal["card.action"] = "card.action"
    action: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_.-]{0,63}$")]


UiEventBody = Annotated[
    ComposerSubmit
    | MessageRetry
    | TaskFinish
    | TaskClose
    | TimelineEarlier
    | ModeSwitch
    | CardAction,
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
    """The user switches to, or closes, an instance (the app switcher). `force`: a close the
    user insists on, after the app that asks before a close was asked once already."""

    type: Literal["ui.intent"] = "ui.intent"
    intent: Literal["focus", "close"]
    instance_id: Id
    force: bool = False


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
# checks again (a live instance whose view is that Surface, a method of `_surface_params.METHODS`,
# its params, its size) before focus checks it a third time. `method` and `params` are plain
# here so that a wrong one is answered (`shell.surface.reply` with its code), not just dropped.


class SurfaceRequestFrame(ShellFrame):
    """A bridge request of a mounted Surface that needs the runtime, answered to this Shell
    only with `shell.surface.reply` of the same `request_id`."""

    type: Literal["surface.request"] = "surface.request"
    request_id: Annotated[str, Field(min_length=1, max_length=MAX_SURFACE_REQUEST_ID)]
    instance_id: Id
    surface_id: Id
    method: Annotated[str, Field(min_length=1, max_length=64)]
    params: dict[str, Any] = Field(default_factory=dict)

    def answer(
        self, *, result: dict[str, Any] | None = None, error: str | None = None
    ) -> ShellSurfaceReply:
        """This request's reply: its `result`, or the `error` code (then no result)."""
        return ShellSurfaceReply(
            request_id=self.request_id,
            instance_id=self.instance_id,
            surface_id=self.surface_id,
            result=result if error is None else None,
            error=None if error is None else SurfaceError(code=error),
        )


class SurfaceRejectedFrame(ShellFrame):
    """The Shell's bridge dropped `count` messages with `code` since it last said (at most once
    a second): the bridge rejection counter. `instance_id` None: a window that is no Surface."""

    type: Literal["surface.rejected"] = "surface.rejected"
    instance_id: Id | None = None
    code: Code
    count: int = Field(ge=1, le=1_000_000)


class SurfaceLogFrame(ShellFrame):
    """One log line a Surface sent (MCP Apps' `notifications/message`), its `data` as text:
    for its app's own log (`lineup logs`), never the runtime's log or the audit
    (`_view_log.ViewLogRelay`)."""

    type: Literal["surface.log"] = "surface.log"
    instance_id: Id
    level: ViewLogLevel
    text: str = Field(max_length=MAX_VIEW_LOG_CHARS)


class SurfaceUnavailableFrame(ShellFrame):
    """The Shell did not mount a Surface (its `surface_version` is not one it runs)."""

    type: Literal["surface.unavailable"] = "surface.unavailable"
    instance_id: Id
    surface_id: Id


# Capabilities (issue 14): the user's answer to the runtime's permission prompt, the end of a
# host provider the Shell ran, and the permissions page. Each answered to the Shell that sent it
# (a refusal as a notice with its code): `_server.CapabilityHost`.

Decision = Literal["allow_once", "allow_always", "deny", "block", "cancel"]  # sdk.capabilities


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
    | SurfaceLogFrame
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
    | SurfaceLogFrame
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
