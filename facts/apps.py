"""An app's source and state in the registry (seed 004 §3, issue 15). No I/O.

Theory of operation: an app is shipped with LineUp (`bundled`, the configured ones too), a
development app of this run (`dev`), or installed from a signed bundle (`installed`). A shipped
or development app is `active` while this run offers it. An installed app's state is never kept
apart from the facts it stands for: at every start, enable and launch its active version goes
through `CHECKS` in order (the cheap ones first: the cache is hashed only when the others pass),
and the first one it fails decides its state and the code its launches and calls are refused
with. One that passes them all is `active`. A revocation of the active version with no
predecessor to go back to makes it `unavailable` too (its launches get `app_unavailable`).
"""

from __future__ import annotations

from typing import Final, Literal

from lineup.actors.kernel.errors import ErrorCode

__all__ = ["CHECKS", "AppCheck", "AppSource", "AppState", "InstallState", "state_of"]

AppSource = Literal["bundled", "dev", "installed"]
AppState = Literal["active", "unavailable", "incompatible"]
# Seed 004 §4.3: an install, update or rollback of the app is open, or the latest one failed.
InstallState = Literal["installed", "updating", "failed"]
AppCheck = Literal["not_revoked", "runs_here", "signer_trusted", "cache_verified"]

# (check, the state an app failing it is in, the code its launches and calls get), in order.
CHECKS: Final[tuple[tuple[AppCheck, AppState, ErrorCode], ...]] = (
    ("not_revoked", "unavailable", ErrorCode.APP_UNAVAILABLE),
    ("runs_here", "incompatible", ErrorCode.APP_VERSION_MISMATCH),  # its manifest loads and
    # this host's version and SDK are ones it declares it runs on
    ("signer_trusted", "unavailable", ErrorCode.UNKNOWN_KEY),
    ("cache_verified", "unavailable", ErrorCode.APP_UNAVAILABLE),
)


def state_of(refusal: ErrorCode | None) -> AppState:
    """The state of an app whose launches are refused with `refusal` (None: it runs)."""
    if refusal is None:
        return "active"
    return "incompatible" if refusal is ErrorCode.APP_VERSION_MISMATCH else "unavailable"
