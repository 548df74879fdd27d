"""What MiniApp authors import (DESIGN §6): the app base class, its context, the protocol.

A MiniApp imports `lineup.sdk` and nothing else of LineUp (import-linter enforces it).
"""

from lineup.actors.kernel import ErrorCode, LineUpError

from . import protocol
from ._app import AppContext, MiniApp
from ._card import CARD_ACTION, card
from ._host import MiniAppHost
from ._services import Conversation, Inbox, Lifecycle, RuntimeChannel, SessionData, Surfaces, Ui
from .manifest import Entrypoint, Manifest, ManifestInvalid, ToolDescriptor, load_manifest
from .schema import SchemaUnsupported
from .tools import (
    AppInfo,
    ToolCall,
    ToolOutputInvalid,
    ToolSink,
    ToolSpec,
    dispatch_tool,
    manifest_of,
    tool,
    tools_of,
)

__all__ = [
    "CARD_ACTION",
    "AppContext",
    "AppInfo",
    "Conversation",
    "Entrypoint",
    "ErrorCode",
    "Inbox",
    "Lifecycle",
    "LineUpError",
    "Manifest",
    "ManifestInvalid",
    "MiniApp",
    "MiniAppHost",
    "RuntimeChannel",
    "SchemaUnsupported",
    "SessionData",
    "Surfaces",
    "ToolCall",
    "ToolDescriptor",
    "ToolOutputInvalid",
    "ToolSink",
    "ToolSpec",
    "Ui",
    "card",
    "dispatch_tool",
    "load_manifest",
    "manifest_of",
    "protocol",
    "tool",
    "tools_of",
]
