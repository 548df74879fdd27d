"""An MCP App's log lines: what a Surface may log (MCP Apps' `notifications/message`, with MCP's
logging levels) and how long one line may be. The Shell's bridge
(hostbridge/web/js/core/bridge_methods.js, compared by a test), the hostbridge's relay and the
supervisor, which writes each line to the app's own log (`lineup logs`), all read them here.
No I/O."""

from __future__ import annotations

from typing import Final, Literal, get_args

__all__ = ["MAX_VIEW_LOG_CHARS", "VIEW_LOG_LEVELS", "ViewLogLevel"]

ViewLogLevel = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
VIEW_LOG_LEVELS: Final[tuple[str, ...]] = get_args(ViewLogLevel)
MAX_VIEW_LOG_CHARS: Final = 2000  # one line's text; the Shell cuts a longer one to this
