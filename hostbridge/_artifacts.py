"""Artifacts at the hostbridge (issue 13): their cards for the Shells, and their content served
to the user who opens or downloads one.

The gateway owns artifacts (their bytes under the data dir, their rows in the store); the
hostbridge lists the newest for a Shell's greeting (`gateway.ui.artifacts.list`) and pushes
each new one (`hostbridge.artifact.created`) as `shell.artifacts`. Each card carries a
`ticket`: the first 32 hex digits of HMAC-SHA256(token, artifact_id). The artifact's URL is
`/artifacts/{artifact_id}?ticket=T[&download=1]`, the token itself never in it: a link leaked
from a Shell opens that one artifact of this run only, and nothing else. A wrong or missing
ticket is a 404 exactly as a missing artifact (audited `hostbridge.artifact_refused`), compared
in constant time. The content is served with its media type (one of `ARTIFACT_MEDIA_TYPES`),
`nosniff`, a CSP that runs nothing (`sandbox`), and as an attachment unless it is a PNG opened
(never as a page of this origin: an HTML artifact does not exist, and a text one is plain text).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import re
from collections.abc import Iterable
from typing import Any, Final

from pydantic import ValidationError
from starlette.responses import PlainTextResponse, Response

from lineup.actors.gateway.messages import (
    ArtifactContent,
    ArtifactInfo,
    ArtifactsListReply,
    ArtifactsListRequest,
    UiArtifactReadRequest,
)
from lineup.actors.kernel import Bus, ErrorCode, LineUpError
from lineup.sdk.protocol import ARTIFACT_MEDIA_TYPES

from ._audit import user_record
from .shell_protocol import MAX_ITEMS_FRAME_BYTES, ShellArtifacts, ShellOutbound

__all__ = [
    "ARTIFACT_REFUSED",
    "ArtifactServer",
    "artifact_card",
    "artifact_frames",
    "content_disposition",
    "ticket",
]

log = logging.getLogger("lineup.hostbridge")

ARTIFACT_REFUSED: Final = "hostbridge.artifact_refused"  # its audit event
TICKET_HEX: Final = 32
RECENT: Final = 100  # artifacts a greeting lists
ASK_TIMEOUT: Final = 5.0
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._ -]")
_HEADERS: Final = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; img-src 'self'; sandbox",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}


def ticket(token: str, artifact_id: str) -> str:
    digest = hmac.new(token.encode(), artifact_id.encode(), hashlib.sha256).hexdigest()
    return digest[:TICKET_HEX]


def artifact_card(info: ArtifactInfo, token: str) -> dict[str, Any]:
    """An artifact as its card in a Shell: its info, and the ticket that opens it."""
    return {**info.model_dump(mode="json"), "ticket": ticket(token, info.artifact_id)}


def artifact_frames(infos: Iterable[ArtifactInfo], token: str) -> list[ShellOutbound]:
    """Cards as `shell.artifacts` frames, each within `MAX_ITEMS_FRAME_BYTES`."""
    frames: list[ShellOutbound] = []
    batch: list[dict[str, Any]] = []
    used = 0
    for info in infos:
        card = artifact_card(info, token)
        size = len(info.model_dump_json()) + 64
        if batch and used + size > MAX_ITEMS_FRAME_BYTES:
            frames.append(ShellArtifacts(artifacts=tuple(batch)))
            batch, used = [], 0
        batch.append(card)
        used += size
    if batch:
        frames.append(ShellArtifacts(artifacts=tuple(batch)))
    return frames


def content_disposition(name: str, attachment: bool) -> str:
    """`attachment` or `inline`, with the name cut to ASCII letters, digits and `._ -`."""
    safe = _UNSAFE.sub("_", name).strip(" .") or "artifact"
    return f'{"attachment" if attachment else "inline"}; filename="{safe[:128]}"'


class ArtifactServer:
    """The server's `ArtifactHost`: one artifact's content, for a request with its ticket."""

    def __init__(self, bus: Bus, token: str) -> None:
        self._bus = bus
        self._token = token

    async def listed(self) -> list[ShellOutbound]:
        """The newest artifacts' cards, for a greeting; none if the gateway could not say."""
        try:
            reply = await self._bus.request(
                "gateway",
                ArtifactsListRequest(recent=RECENT),
                expect=ArtifactsListReply,
                timeout=ASK_TIMEOUT,
                retry=True,
            )
        except LineUpError:
            return []
        return artifact_frames(reversed(reply.artifacts), self._token)  # oldest first

    def _refused(self, code: str, artifact_id: str) -> None:
        """An artifact request refused: audited by its code, with the artifact it named."""
        record = user_record(ARTIFACT_REFUSED, "artifact.get", code=code, subject_id=artifact_id)
        self._bus.audit_refusal(record)

    def created(self, info: ArtifactInfo) -> list[ShellOutbound]:
        return artifact_frames([info], self._token)

    async def respond(self, artifact_id: str, given: str, download: bool) -> Response:
        expected = ticket(self._token, artifact_id)
        if not hmac.compare_digest(given.encode(), expected.encode()):
            self._refused(ErrorCode.PERMISSION_DENIED.value, artifact_id)
            return _not_found()
        try:
            content = await self._bus.request(
                "gateway",
                UiArtifactReadRequest(artifact_id=artifact_id),
                expect=ArtifactContent,
                timeout=ASK_TIMEOUT,
                retry=True,
            )
        except (LineUpError, ValidationError) as exc:
            code = exc.code.value if isinstance(exc, LineUpError) else "invalid_arguments"
            self._refused(code, artifact_id)
            return _not_found()
        info = content.info
        try:
            data = base64.b64decode(content.content_b64, validate=True)
        except (binascii.Error, ValueError):
            data = None
        if data is None or info.media_type not in ARTIFACT_MEDIA_TYPES or len(data) != info.size:
            self._refused(ErrorCode.INTERNAL_ERROR.value, artifact_id)
            return _not_found()
        attachment = download or info.media_type != "image/png"
        headers = {**_HEADERS, "Content-Disposition": content_disposition(info.name, attachment)}
        media_type = info.media_type
        if media_type.startswith("text/") or media_type == "application/json":
            media_type += "; charset=utf-8"
        return Response(data, media_type=media_type, headers=headers)


def _not_found() -> Response:
    return PlainTextResponse("not found", status_code=404, headers=_HEADERS)
