"""The gateway actor's whole public protocol. Every tag starts with `gateway.`.

`gateway.sdk.*` (from MiniApps) is declared in `lineup.sdk.protocol`; `gateway.ui.*` comes from
the hostbridge: the user opening or downloading an artifact from its card, answering the
runtime's permission prompt, a host provider's outcome, a Surface's capability request, and
the permissions page. Besides these the actor answers the kernel's `kernel.health.request`.

The gateway only *tells* the hostbridge (`hostbridge.capability.*`, declared in
`lineup.hostbridge.messages`): a prompt to show, a provider to run, that one ended. The answers
come back as requests from the hostbridge, so the two never wait on each other in a cycle.
"""

from typing import Any, Literal

from pydantic import Field

from lineup.actors.kernel import Message
from lineup.actors.kernel.control import HealthReply, HealthRequest
from lineup.hostbridge.messages import CapabilityPromptView, ProviderRunView
from lineup.sdk.capabilities import MAX_PURPOSE_CHARS, Policy, PromptDecision
from lineup.sdk.protocol import (
    MAX_ARTIFACT_BYTES,
    ArtifactContent,
    ArtifactInfo,
    CapabilityResult,
)

__all__ = [
    "ArtifactContent",
    "ArtifactInfo",
    "ArtifactsListReply",
    "ArtifactsListRequest",
    "CapabilityPendingReply",
    "CapabilityPendingRequest",
    "CapabilityResult",
    "GrantSetRequest",
    "GrantView",
    "GrantsListReply",
    "GrantsListRequest",
    "HealthReply",
    "HealthRequest",
    "PickedFile",
    "PromptAnswerRequest",
    "ProviderDoneRequest",
    "SurfaceCapabilityRequest",
    "SurfaceDownloadRequest",
    "UiAccepted",
    "UiArtifactReadRequest",
]


class UiArtifactReadRequest(Message):
    """An artifact's content for the user (any app's: the user owns the device). Refused
    `artifact_not_found`. The reply is `ArtifactContent`."""

    type: Literal["gateway.ui.artifact.read"] = "gateway.ui.artifact.read"
    artifact_id: str = Field(min_length=1, max_length=200)


class ArtifactsListRequest(Message):
    """The newest artifacts of every app, for a Shell's greeting (their cards)."""

    type: Literal["gateway.ui.artifacts.list"] = "gateway.ui.artifacts.list"
    recent: int = Field(default=100, ge=0, le=500)


class ArtifactsListReply(Message):
    type: Literal["gateway.ui.artifacts.list.reply"] = "gateway.ui.artifacts.list.reply"
    artifacts: tuple[ArtifactInfo, ...]


# ---------------------------------------------------------------------------------- capabilities


class CapabilityPendingRequest(Message):
    """The prompts and provider runs waiting on the user now: a hostbridge asks when it starts
    and when a Shell connects, as it learns of later ones by `hostbridge.capability.*`."""

    type: Literal["gateway.ui.capability.pending"] = "gateway.ui.capability.pending"


class CapabilityPendingReply(Message):
    type: Literal["gateway.ui.capability.pending.reply"] = "gateway.ui.capability.pending.reply"
    prompts: tuple[CapabilityPromptView, ...]
    runs: tuple[ProviderRunView, ...]


class PromptAnswerRequest(Message):
    """The user answered the permission prompt `prompt_id` in the Shell: `allow_once`,
    `allow_always` (remembered as a grant; refused `invalid_arguments` where the prompt was not
    `rememberable`), `deny` (→ `permission_denied`), `block` (→ `permission_denied`, and a
    grant of deny as the permissions page's Block: the next request is `policy_denied`) or
    `cancel` (dismissed, Escape → `cancelled_by_user`). A `deny`, `block` or `cancel` stands for
    the app's other prompts of that capability still waiting, and the app's next requests of it
    are `rate_limited` for a while, without a prompt (an allow lifts that). First answer
    wins; a later one, or an unknown id, is refused `prompt_not_found`. The reply is
    `UiAccepted`."""

    type: Literal["gateway.ui.prompt.answer"] = "gateway.ui.prompt.answer"
    prompt_id: str = Field(min_length=1, max_length=200)
    decision: PromptDecision


class PickedFile(Message):
    """The file the user picked for `file.open`: its base name only (the Shell never has a
    path), a media type and its bytes (base64)."""

    type: Literal["gateway.ui.picked_file"] = "gateway.ui.picked_file"
    name: str = Field(min_length=1, max_length=128)
    media_type: str = Field(min_length=1, max_length=100)
    content_b64: str = Field(max_length=(MAX_ARTIFACT_BYTES * 4) // 3 + 4)


class ProviderDoneRequest(Message):
    """A host provider run in the Shell ended: `completed` (for `file.open`, with `file`),
    `cancelled_by_user` (the user closed the picker or the save), or `failed` (the Shell could
    not do it). First outcome wins; a later one, or an unknown id, is refused
    `prompt_not_found`. The reply is `UiAccepted`."""

    type: Literal["gateway.ui.provider.done"] = "gateway.ui.provider.done"
    run_id: str = Field(min_length=1, max_length=200)
    status: Literal["completed", "cancelled_by_user", "failed"]
    file: PickedFile | None = None


class UiAccepted(Message):
    type: Literal["gateway.ui.accepted"] = "gateway.ui.accepted"
    id: str


class SurfaceCapabilityRequest(Message):
    """A Surface's `lineup/capabilities/request`, from the hostbridge: decided exactly as its
    app's own request for `instance_id` would be (the app is the instance's owner, which the
    gateway asks focus). `request_id` is the hostbridge's (unique per Surface message). The
    reply is a `CapabilityResult`."""

    type: Literal["gateway.ui.surface.capability"] = "gateway.ui.surface.capability"
    request_id: str = Field(min_length=1, max_length=200)
    instance_id: str = Field(min_length=1, max_length=200)
    capability: str = Field(min_length=1, max_length=100)
    purpose: str = Field(min_length=1, max_length=MAX_PURPOSE_CHARS)
    input: dict[str, Any] = Field(default_factory=dict)


class SurfaceDownloadRequest(Message):
    """An MCP App's `ui/download-file` (one file of it), from the hostbridge: the file becomes
    an artifact of `app_scope`'s (the app whose Surface `instance_id` shows; refused
    `app_instance_not_found` if it is not that app's live instance), which the user saves
    through `artifact.save`, decided exactly as the app's own request would be (the user's
    prompt). Idempotent by `request_id`. Refused as `gateway.sdk.artifact.create` is
    (`artifact_invalid`, `artifact_too_large`, `quota_exceeded`). The reply is the
    `CapabilityResult` of `artifact.save`."""

    type: Literal["gateway.ui.surface.download"] = "gateway.ui.surface.download"
    request_id: str = Field(min_length=1, max_length=200)
    instance_id: str = Field(min_length=1, max_length=200)
    app_scope: str = Field(min_length=1, max_length=100)
    name: str = Field(min_length=1, max_length=128)
    media_type: str = Field(min_length=1, max_length=100)
    content_b64: str = Field(max_length=(MAX_ARTIFACT_BYTES * 4) // 3 + 4)


class GrantView(Message):
    """One app's standing on one capability it declares, for the permissions page: `policy`
    is what applies now (`ask` when nothing was granted); `granted` says whether it comes from
    the user's grant (then `granted_at`, `expires_at`) rather than the host's policy or the
    catalog's default; `supported` is False for one this host does not provide."""

    type: Literal["gateway.ui.grant"] = "gateway.ui.grant"
    app_scope: str
    app_title: str
    capability: str
    policy: Policy
    granted: bool
    granted_at: float | None = None
    expires_at: float | None = None
    supported: bool = True


class GrantsListRequest(Message):
    type: Literal["gateway.ui.grants.list"] = "gateway.ui.grants.list"


class GrantsListReply(Message):
    type: Literal["gateway.ui.grants.list.reply"] = "gateway.ui.grants.list.reply"
    grants: tuple[GrantView, ...]


class GrantSetRequest(Message):
    """The user on the permissions page: `ask` revokes the grant (the next request prompts
    again), `deny` blocks the capability for the app (`policy_denied`; its tools that declare
    it leave the inventory), `allow` grants it. Takes effect on the next request. The reply is
    the new `GrantsListReply`."""

    type: Literal["gateway.ui.grant.set"] = "gateway.ui.grant.set"
    app_scope: str = Field(min_length=1, max_length=100)
    capability: str = Field(min_length=1, max_length=100)
    policy: Policy
