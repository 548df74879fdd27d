"""The gateway's artifacts, in memory (`Artifacts`)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import unicodedata

from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.facts.artifacts import MAX_APP_ARTIFACT_BYTES, MAX_APP_ARTIFACTS, artifact_id_of

from .. import protocol as p

__all__ = ["FakeArtifacts"]


class FakeArtifacts:
    """The gateway's artifacts, in memory, checked as the gateway checks them: the media type,
    the name, strict base64, the size, the instance, the app's quota; idempotent by request id;
    an app reads only its own (`put_foreign` plants another app's, for a test of that)."""

    def __init__(self) -> None:
        self.infos: dict[str, p.ArtifactInfo] = {}
        self.contents: dict[str, bytes] = {}
        self.max_app_bytes = MAX_APP_ARTIFACT_BYTES
        self.max_app_count = MAX_APP_ARTIFACTS
        self._clock = itertools.count(1)

    @staticmethod
    def artifact_id(app_scope: str, request_id: str) -> str:
        return artifact_id_of(app_scope, request_id)

    def put_foreign(self, app_scope: str, data: bytes, name: str = "theirs.txt") -> str:
        info = self._record(app_scope, None, f"foreign-{len(self.infos)}", name, "text/plain", data)
        return info.artifact_id

    def _record(
        self,
        app_scope: str,
        instance_id: str | None,
        request_id: str,
        name: str,
        media_type: str,
        data: bytes,
    ) -> p.ArtifactInfo:
        info = p.ArtifactInfo(
            artifact_id=self.artifact_id(app_scope, request_id),
            app_scope=app_scope,
            instance_id=instance_id,
            name=name,
            media_type=media_type,
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            created_at=float(next(self._clock)),
        )
        self.infos[info.artifact_id] = info
        self.contents[info.artifact_id] = data
        return info

    def _create(
        self, msg: p.ArtifactCreateRequest, app_scope: str, instances: set[str]
    ) -> p.ArtifactInfo:
        if msg.media_type not in p.ARTIFACT_MEDIA_TYPES:
            raise LineUpError(ErrorCode.ARTIFACT_INVALID, "media type not allowed")
        name = msg.name
        if name in {".", ".."} or "/" in name or "\\" in name:
            raise LineUpError(ErrorCode.ARTIFACT_INVALID, "the name is a path")
        if any(unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp"} for ch in name):
            raise LineUpError(ErrorCode.ARTIFACT_INVALID, "the name holds a control character")
        try:
            data = base64.b64decode(msg.content_b64.encode("ascii"), validate=True)
        except (UnicodeEncodeError, binascii.Error) as exc:
            raise LineUpError(ErrorCode.ARTIFACT_INVALID, "content is not base64") from exc
        if len(data) > p.MAX_ARTIFACT_BYTES:
            raise LineUpError(ErrorCode.ARTIFACT_TOO_LARGE, "content too large")
        found = self.infos.get(self.artifact_id(app_scope, msg.request_id))
        if found is not None:
            return found
        if msg.instance_id not in instances:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, msg.instance_id)
        mine = [i for i in self.infos.values() if i.app_scope == app_scope]
        if (
            sum(i.size for i in mine) + len(data) > self.max_app_bytes
            or len(mine) + 1 > self.max_app_count
        ):
            raise LineUpError(ErrorCode.QUOTA_EXCEEDED, "the app's artifacts are at quota")
        return self._record(app_scope, msg.instance_id, msg.request_id, name, msg.media_type, data)

    def _read(self, msg: p.ArtifactReadRequest, app_scope: str) -> p.ArtifactContent:
        info = self.infos.get(msg.artifact_id)
        if info is None or info.app_scope != app_scope:
            raise LineUpError(ErrorCode.ARTIFACT_NOT_FOUND, msg.artifact_id)
        content = base64.b64encode(self.contents[msg.artifact_id]).decode("ascii")
        return p.ArtifactContent(info=info, content_b64=content)

    def _list(self, msg: p.ArtifactListRequest, app_scope: str) -> p.ArtifactListReply:
        mine = [
            i
            for i in self.infos.values()
            if i.app_scope == app_scope and msg.instance_id in (None, i.instance_id)
        ]
        mine.sort(key=lambda i: (i.created_at, i.artifact_id), reverse=True)
        return p.ArtifactListReply(artifacts=tuple(mine[: msg.limit]))

    def answer(self, request: Message, app_scope: str, instances: set[str]) -> Message | None:
        """The gateway's answer to `request`, or None if it is not an artifact request."""
        if isinstance(request, p.ArtifactCreateRequest):
            return self._create(request, app_scope, instances)
        if isinstance(request, p.ArtifactReadRequest):
            return self._read(request, app_scope)
        if isinstance(request, p.ArtifactListRequest):
            return self._list(request, app_scope)
        return None
