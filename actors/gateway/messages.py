"""The gateway actor's whole public protocol. Every tag starts with `gateway.`.

`gateway.sdk.*` (from MiniApps) is declared in `lineup.sdk.protocol`; `gateway.ui.*` comes from
the hostbridge (the user opening or downloading an artifact from its card). Besides these the
actor answers the kernel's `kernel.health.request`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from lineup.actors.kernel import Message
from lineup.actors.kernel.control import HealthReply, HealthRequest
from lineup.sdk.protocol import ArtifactContent, ArtifactInfo

__all__ = [
    "ArtifactContent",
    "ArtifactInfo",
    "ArtifactsListReply",
    "ArtifactsListRequest",
    "HealthReply",
    "HealthRequest",
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
