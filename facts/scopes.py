"""The app scopes the runtime itself gives meaning to.

`CHAT` is the main IM: the resident chat's app scope and its one instance's id, the app focus
falls back to (the recovery app), the scope an Agent's text without one is for (the legacy
rule), and the one app without a sub-session. `INTERACTION` is the scope of the runtime's own
tools, the standard interactions (`interaction.confirm`, …): no app runs them.
"""

from __future__ import annotations

from typing import Final

__all__ = ["CHAT", "INTERACTION"]

CHAT: Final = "chat"
INTERACTION: Final = "interaction"
