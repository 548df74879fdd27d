"""The app scopes the runtime itself gives meaning to.

`CHAT` is the main IM: the resident chat's app scope and its one instance's id, the app focus
falls back to (the recovery app), the scope an Agent's text without one is for (the legacy
rule), and the one app without a sub-session. `INTERACTION` is the scope of the runtime's own
tools, the standard interactions (`interaction.confirm`, …): no app runs them. `APP_REGISTRY` is
the resident App Registry, the one app that may install and manage apps (`app.install`,
`app.manage`).

`reserved(scope)` is whether a scope is the runtime's own namespace, which no app's manifest
may take (so no app's tool is named like the runtime's): the standard interactions', the
conversation's, and `lineup` with anything after it. The resident apps' scopes are taken by
the resident apps themselves: an install is refused them as any bundled app's (`app_protected`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = ["APP_REGISTRY", "CAPABILITY_OWNERS", "CHAT", "INTERACTION", "reserved"]

CHAT: Final = "chat"
INTERACTION: Final = "interaction"
APP_REGISTRY: Final = "app-registry"
_RESERVED: Final = frozenset({INTERACTION, "conversation", "lineup"})
# The capabilities one resident app alone may declare: installing and managing apps are the
# App Registry's powers, and a manifest of any other app that asks for one is refused.
CAPABILITY_OWNERS: Final[Mapping[str, str]] = {
    "app.install": APP_REGISTRY,
    "app.manage": APP_REGISTRY,
}


def reserved(scope: str) -> bool:
    """Whether `scope` is the runtime's own (see the module's docstring)."""
    return scope in _RESERVED or scope.startswith("lineup-")
