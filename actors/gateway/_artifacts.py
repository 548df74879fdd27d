"""What the gateway checks of an artifact before it keeps one, and how it names it. No I/O.

An artifact's id is derived from its owner and the request id the app chose (sha256), so a
retried create (after a lost reply, a crash of the gateway, a restart of the app) names the same
artifact and makes nothing twice. Names are display text only: the content is stored under the
id, never under the name, and the name is checked so it can be offered as a download file name.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import unicodedata

from lineup.actors.kernel.errors import ErrorCode, LineUpError
from lineup.facts.artifacts import MAX_APP_ARTIFACT_BYTES, MAX_APP_ARTIFACTS, artifact_id_of
from lineup.sdk.protocol import ARTIFACT_MEDIA_TYPES, MAX_ARTIFACT_BYTES

__all__ = [
    "MAX_APP_ARTIFACTS",
    "MAX_APP_ARTIFACT_BYTES",
    "artifact_id_of",
    "check_media_type",
    "check_name",
    "decode_content",
    "digest",
]


def check_media_type(media_type: str) -> None:
    if media_type not in ARTIFACT_MEDIA_TYPES:
        raise LineUpError(ErrorCode.ARTIFACT_INVALID, "media type not allowed")


def check_name(name: str) -> None:
    """Refuse (`artifact_invalid`) a name with a path separator or a control character, or
    that is `.` or `..`."""
    if name in {".", ".."} or "/" in name or "\\" in name:
        raise LineUpError(ErrorCode.ARTIFACT_INVALID, "the name is a path")
    if any(unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp"} for ch in name):
        raise LineUpError(ErrorCode.ARTIFACT_INVALID, "the name holds a control character")


def decode_content(content_b64: str) -> bytes:
    """The content, strictly decoded (`artifact_invalid` for anything that is not base64), at
    most `MAX_ARTIFACT_BYTES` (`artifact_too_large`)."""
    if len(content_b64) > (MAX_ARTIFACT_BYTES * 4) // 3 + 4:
        raise LineUpError(ErrorCode.ARTIFACT_TOO_LARGE, "content too large")
    try:
        data = base64.b64decode(content_b64.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error) as exc:
        raise LineUpError(ErrorCode.ARTIFACT_INVALID, "content is not base64") from exc
    if len(data) > MAX_ARTIFACT_BYTES:
        raise LineUpError(ErrorCode.ARTIFACT_TOO_LARGE, "content too large")
    return data


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
