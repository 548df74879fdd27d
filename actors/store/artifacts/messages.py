"""Artifacts (`store.artifact.*`): the metadata of runtime-owned files an app made (seed 004
§6.3). Re-exported by `lineup.actors.store.messages`. Written by the gateway only, which keeps
the content under the data dir and writes it BEFORE the row: a row always names a complete file.

A create is idempotent by `artifact_id` (the gateway derives it from the app and its request
id), and checks the app's quota in the same transaction as the insert, so two creates at once
cannot both pass it. The audit row of a create holds ids only: never the name or the content.
"""

from typing import Annotated, Literal

from pydantic import Field

from lineup.actors.kernel.messages import Message

from .._fields import Id, Name

__all__ = [
    "ArtifactCreateReply",
    "ArtifactCreateRequest",
    "ArtifactGetReply",
    "ArtifactGetRequest",
    "ArtifactListReply",
    "ArtifactListRequest",
    "ArtifactRow",
    "ArtifactUsageReply",
    "ArtifactUsageRequest",
]

ArtifactName = Annotated[str, Field(min_length=1, max_length=128)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class ArtifactRow(Message):
    """One artifact as recorded: whose it is (`app_scope`, `instance_id`), what (`media_type`,
    `size` in bytes, `sha256` of the content), and when."""

    type: Literal["store.artifact.row"] = "store.artifact.row"
    artifact_id: Id
    app_scope: Name
    instance_id: Id | None
    name: ArtifactName
    media_type: Name
    size: int = Field(ge=0)
    sha256: Sha256
    created_at: float


class ArtifactCreateRequest(Message):
    """Record an artifact whose content is already on disk. A repeat of the id writes nothing
    (`created` False, the first row). Refused with `quota_exceeded` when the app would then
    hold more than `max_app_bytes` bytes or `max_app_count` artifacts (None: no bound), and
    `invalid_arguments` when the id is another app's."""

    type: Literal["store.artifact.create"] = "store.artifact.create"
    artifact_id: Id
    app_scope: Name
    instance_id: Id | None = None
    name: ArtifactName
    media_type: Name
    size: int = Field(ge=0)
    sha256: Sha256
    max_app_bytes: int | None = Field(default=None, ge=0)
    max_app_count: int | None = Field(default=None, ge=0)


class ArtifactCreateReply(Message):
    type: Literal["store.artifact.create.reply"] = "store.artifact.create.reply"
    artifact: ArtifactRow
    created: bool


class ArtifactGetRequest(Message):
    """One artifact by its id (any app's: the gateway checks the owner)."""

    type: Literal["store.artifact.get"] = "store.artifact.get"
    artifact_id: Id


class ArtifactGetReply(Message):
    type: Literal["store.artifact.get.reply"] = "store.artifact.get.reply"
    artifact: ArtifactRow | None


class ArtifactListRequest(Message):
    """The newest `limit` artifacts, newest first: of one app (`app_scope`), optionally of one
    of its instances; `app_scope` None: every app's (the Shell's cards)."""

    type: Literal["store.artifact.list"] = "store.artifact.list"
    app_scope: Name | None = None
    instance_id: Id | None = None
    limit: int = Field(default=100, ge=1, le=500)


class ArtifactListReply(Message):
    type: Literal["store.artifact.list.reply"] = "store.artifact.list.reply"
    artifacts: tuple[ArtifactRow, ...]


class ArtifactUsageRequest(Message):
    """What one app holds: its artifacts' total bytes and count."""

    type: Literal["store.artifact.usage"] = "store.artifact.usage"
    app_scope: Name


class ArtifactUsageReply(Message):
    type: Literal["store.artifact.usage.reply"] = "store.artifact.usage.reply"
    app_scope: Name
    bytes: int = Field(ge=0)
    count: int = Field(ge=0)
