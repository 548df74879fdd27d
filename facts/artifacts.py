"""One app's artifacts: how many it may keep, and how the gateway names one. No I/O.

An artifact's id is derived from its owner and the request id the app chose (sha256), so a
retried create (after a lost reply, a crash of the gateway, a restart of the app) names the same
artifact and makes nothing twice. The gateway enforces these (`actors/gateway/_artifacts.py`);
the SDK's testkit names and counts its fake artifacts with them.
"""

from __future__ import annotations

import hashlib
from typing import Final

__all__ = ["ARTIFACT_ID_PREFIX", "MAX_APP_ARTIFACTS", "MAX_APP_ARTIFACT_BYTES", "artifact_id_of"]

MAX_APP_ARTIFACT_BYTES: Final = 32 * 1024 * 1024  # one app's artifacts, in total
MAX_APP_ARTIFACTS: Final = 1000  # one app's artifacts, in number
ARTIFACT_ID_PREFIX: Final = "art_"


def artifact_id_of(app_scope: str, request_id: str) -> str:
    """`art_` + 32 hex digits of sha256(app_scope, request_id): the same for a retry, never
    the same for two apps."""
    key = f"{app_scope}\x00{request_id}".encode()
    return ARTIFACT_ID_PREFIX + hashlib.sha256(key).hexdigest()[:32]
