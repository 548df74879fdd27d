"""The exit statuses of `lineup run` and `lineup logs`: here alone, so that a command that needs
one does not import the tree with it (`lineup.supervisor.cli`)."""

from __future__ import annotations

from typing import Final

__all__ = ["EXIT_ESCALATED", "EXIT_REFUSED", "EXIT_USAGE"]

EXIT_REFUSED: Final = 1  # what the user got wrong, said in one line
EXIT_ESCALATED: Final = 2  # a child restarted past its intensity: the tree stopped
EXIT_USAGE: Final = 64  # a command that cannot run as given (sysexits' EX_USAGE)
