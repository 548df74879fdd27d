"""What both directions of the Shell protocol share: the wire's limits (the socket, the Shell
and the hostbridge's builders read them too), the bounded field types, and `ShellFrame`, the
base of every frame.

No I/O here: this module imports pydantic only.
"""

from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "HEARTBEAT_S",
    "MAX_CAPABILITY_DONE_FRAME",
    "MAX_DRAFT_FIELDS",
    "MAX_DRAFT_TEXT",
    "MAX_FIELD_ID",
    "MAX_ID",
    "MAX_ITEMS_FRAME_BYTES",
    "MAX_LAUNCHABLE",
    "MAX_NOTICE",
    "MAX_ORDER",
    "MAX_PICKED_B64",
    "MAX_PICKED_NAME",
    "MAX_SCOPE",
    "MAX_SHELL_FRAME",
    "MAX_SHELL_FRAME_BYTES",
    "MAX_SOCKET_MESSAGE_BYTES",
    "MAX_STATE",
    "MAX_SURFACE_REQUEST_ID",
    "MAX_TITLE",
    "SHELL_SUBPROTOCOL",
    "SILENCE_S",
    "TOKEN_SUBPROTOCOL",
    "Code",
    "Id",
    "Openable",
    "Scope",
    "ShellFrame",
    "State",
]

MAX_SHELL_FRAME: Final = 64 * 1024  # characters in one Shell frame: user text, small intents
# The most UTF-8 such a frame can take: the socket refuses a larger message as it reads it.
MAX_SHELL_FRAME_BYTES: Final = 4 * MAX_SHELL_FRAME
MAX_ID: Final = 200  # instance, message and client ids
MAX_SCOPE: Final = 100  # an app_scope
MAX_STATE: Final = 64  # a runtime or instance state, a reason code
MAX_TITLE: Final = 200
MAX_LAUNCHABLE: Final = 500  # apps in the launcher's menu
MAX_NOTICE: Final = 2000  # the Shell shows no more of a notice
# Items in one `shell.items` frame (or a single item, whatever its size: at most a message's tree).
MAX_ITEMS_FRAME_BYTES: Final = 1024 * 1024
MAX_ORDER: Final = 2**53 - 1  # an item's order (what a JavaScript Shell reads back exactly)
HEARTBEAT_S: Final = 1.5  # the hostbridge sends `shell.heartbeat` this often to every Shell
SILENCE_S: Final = 4.0  # the Shell (web/js/core/connection.js) gives the socket up after this
# The Shell's WebSocket names its token in `Sec-WebSocket-Protocol`, never in its URL (a browser
# prints a failed socket's URL in its console): it offers SHELL_SUBPROTOCOL and
# TOKEN_SUBPROTOCOL + the token, and the hostbridge answers SHELL_SUBPROTOCOL alone.
SHELL_SUBPROTOCOL: Final = "lineup.shell.v1"
TOKEN_SUBPROTOCOL: Final = "lineup.token."
MAX_DRAFT_FIELDS: Final = 12  # an input has at most 12 fields (lineup.sdk.interactions)
MAX_FIELD_ID: Final = 64
MAX_DRAFT_TEXT: Final = 16384  # a textarea's longest value
# A picked file (`capability.done`): at most an artifact's bytes (lineup.sdk.protocol
# MAX_ARTIFACT_BYTES, 256 KiB), base64; its frame may be this much longer than a user's.
MAX_PICKED_B64: Final = (256 * 1024 * 4) // 3 + 4
MAX_CAPABILITY_DONE_FRAME: Final = MAX_PICKED_B64 + 2048
MAX_PICKED_NAME: Final = 1024  # as the browser says it; the hostbridge keeps the base name
# What the socket reads of one message before it refuses it (base64 is ASCII: a char a byte).
MAX_SOCKET_MESSAGE_BYTES: Final = max(MAX_SHELL_FRAME_BYTES, MAX_CAPABILITY_DONE_FRAME)

Id = Annotated[str, Field(min_length=1, max_length=MAX_ID)]
Scope = Annotated[str, Field(min_length=1, max_length=MAX_SCOPE)]
State = Annotated[str, Field(min_length=1, max_length=MAX_STATE)]
# An app_scope the user can name to open (`ui.open`), and the launcher offers.
Openable = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,62}$")]
Code = Annotated[str, Field(min_length=1, max_length=MAX_STATE, pattern=r"^[a-z0-9_]+$")]
MAX_SURFACE_REQUEST_ID: Final = 64  # a Surface bridge request's id


class ShellFrame(BaseModel):
    """Base of every frame, both ways: immutable, and an unknown field is refused."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
