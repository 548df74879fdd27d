"""Artifacts: runtime-owned files an app makes (seed 004 §6.3), through `Artifacts`. The gateway
writes the bytes under the data dir and the store keeps the metadata; an app reads only its
own. Content travels base64.
"""

from typing import Annotated, Literal

from pydantic import Field

from lineup.actors.kernel import Message

from .common import Id

__all__ = [
    "ARTIFACT_MEDIA_TYPES",
    "BUNDLE_MEDIA_TYPE",
    "MAX_ARTIFACT_BYTES",
    "ArtifactContent",
    "ArtifactCreateRequest",
    "ArtifactInfo",
    "ArtifactListReply",
    "ArtifactListRequest",
    "ArtifactReadRequest",
]

MAX_ARTIFACT_BYTES = 256 * 1024  # one artifact's content: its base64 fits a MiniApp's frame
BUNDLE_MEDIA_TYPE = "application/vnd.lineup.bundle"  # a signed `.lineup` app bundle (binary)
ARTIFACT_MEDIA_TYPES = frozenset(
    {"image/png", "application/json", "text/plain", "text/markdown", "text/csv", BUNDLE_MEDIA_TYPE}
)


class ArtifactInfo(Message):
    type: Literal["gateway.sdk.artifact.info"] = "gateway.sdk.artifact.info"
    artifact_id: Id
    app_scope: str
    instance_id: Id | None = None
    name: Annotated[str, Field(min_length=1, max_length=128)]
    media_type: str
    size: int = Field(ge=0)
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    created_at: float


class ArtifactCreateRequest(Message):
    """Make an artifact of `content_b64` (at most `MAX_ARTIFACT_BYTES` decoded), owned by the
    sender's app and `instance_id`. Idempotent by `request_id` (the app chooses it). Refused
    with `artifact_invalid` (media type not in `ARTIFACT_MEDIA_TYPES`, name with a path
    separator or a control character, not base64), `artifact_too_large`, `quota_exceeded` (the
    app's total), `app_instance_not_found`."""

    type: Literal["gateway.sdk.artifact.create"] = "gateway.sdk.artifact.create"
    request_id: Id
    instance_id: Id
    name: Annotated[str, Field(min_length=1, max_length=128)]
    media_type: Annotated[str, Field(min_length=1, max_length=100)]
    content_b64: str = Field(max_length=(MAX_ARTIFACT_BYTES * 4) // 3 + 4)


class ArtifactReadRequest(Message):
    """One of the sender's own artifacts, with its content. Another app's is
    `artifact_not_found`, exactly as a missing one."""

    type: Literal["gateway.sdk.artifact.read"] = "gateway.sdk.artifact.read"
    artifact_id: Id


class ArtifactContent(Message):
    type: Literal["gateway.sdk.artifact.content"] = "gateway.sdk.artifact.content"
    info: ArtifactInfo
    content_b64: str


class ArtifactListRequest(Message):
    """The sender's artifacts, newest first (of one instance, or all of the app's)."""

    type: Literal["gateway.sdk.artifact.list"] = "gateway.sdk.artifact.list"
    instance_id: Id | None = None
    limit: int = Field(default=100, ge=1, le=500)


class ArtifactListReply(Message):
    type: Literal["gateway.sdk.artifact.list.reply"] = "gateway.sdk.artifact.list.reply"
    artifacts: tuple[ArtifactInfo, ...]
