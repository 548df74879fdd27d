"""What MiniApp authors import (DESIGN §6): the app base class, its context, the protocol.

A MiniApp imports `lineup.sdk` and nothing else of LineUp (import-linter enforces it).
"""

from lineup.actors.kernel import ErrorCode, LineUpError

from . import protocol
from ._app import AppContext, Conversation, Inbox, MiniApp, MiniAppHost, Ui

__all__ = [
    "AppContext",
    "Conversation",
    "ErrorCode",
    "Inbox",
    "LineUpError",
    "MiniApp",
    "MiniAppHost",
    "Ui",
    "protocol",
]
