"""The interaction modes of an instance (seed 003 §5.1, seed 004 §4.5). No I/O.

Interact (the chat, `CHAT`) is in one mode at a time: `im` (text, the default), `audio` or
`video`. The runtime keeps the mode on the instance's record (the focus stack's, and the
store's), so the chat comes back in the mode it was in when another app in front of it closes,
and after a restart of the runtime. Only the apps in `MODAL_SCOPES` have a mode; any other
app's instance has none (its SDK context says `app`). Real-time media is not here: a mode is
what the chat offers and the Shell shows, not a device.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

from .scopes import CHAT

__all__ = ["DEFAULT_MODE", "MODAL_SCOPES", "MODES", "NO_MODE", "Mode", "mode_at_birth"]

Mode = Literal["im", "audio", "video"]
MODES: Final[tuple[Mode, ...]] = get_args(Mode)
DEFAULT_MODE: Final[Mode] = "im"
NO_MODE: Final[Literal["app"]] = "app"  # what the SDK's context says of an app that has no mode
MODAL_SCOPES: Final = frozenset({CHAT})  # the apps whose instances have a mode


def mode_at_birth(app_scope: str) -> Mode | None:
    """The mode a new instance of `app_scope` is born in: the default for a modal app, else
    none."""
    return DEFAULT_MODE if app_scope in MODAL_SCOPES else None
