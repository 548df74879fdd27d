"""What an app may draw, and the views the runtime draws itself. No I/O.

Focus enforces these (`actors/focus/_views.py`, `_surfaces.py`); the hostbridge reads a Surface's
view by its kind; the SDK's testkit refuses what focus would refuse.

A view of a *trusted kind* is one the Shell draws with the runtime's own component: focus accepts
it only from the app that ships that component (`TRUSTED_KINDS`), and items only for the trusted
components that show them (`ITEM_COMPONENTS`). A kind under `RUNTIME_KINDS_PREFIX` is the
runtime's own, never an app's: focus makes the `SURFACE_VIEW_KIND` view of an instance whose
Surface is open. A Surface is named after its instance (`surface_id_of`), so its id is the same
after a restart of focus.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from .scopes import CHAT

__all__ = [
    "ITEM_COMPONENTS",
    "MAX_VIEW_KEYS",
    "RUNTIME_KINDS_PREFIX",
    "SURFACE_PREFIX",
    "SURFACE_VIEW_KIND",
    "TRUSTED_KINDS",
    "surface_id_of",
]

MAX_VIEW_KEYS: Final = 64  # top-level keys of one view document
# A trusted kind → the app that ships its component.
TRUSTED_KINDS: Final[Mapping[str, str]] = {
    "chat.timeline": CHAT,
    "task.dashboard": "task-dashboard",
}
ITEM_COMPONENTS: Final = frozenset({"chat.timeline"})  # the trusted components that show items
RUNTIME_KINDS_PREFIX: Final = "lineup."  # views focus makes itself, never an app
SURFACE_VIEW_KIND: Final = "lineup.surface"  # the view of an instance whose Surface is open
SURFACE_PREFIX: Final = "lu:surface:"


def surface_id_of(instance_id: str) -> str:
    """The id of the Surface of instance `instance_id`."""
    return SURFACE_PREFIX + instance_id
