"""An MCP server's connections to its declared hosts, through the runtime (`lineup.sdk.mcp_network`,
steps 3 and 4): the adapter asks the gateway to open one, sends its bytes, closes it; the
gateway sends the host's bytes back as events. Bytes travel base64 in chunks of at most
`MAX_CHUNK` bytes; the runtime never looks at them (TLS is the server's and the host's)."""

from typing import Annotated, Final, Literal

from pydantic import Field

from lineup.actors.kernel import Message

from .common import Id

__all__ = [
    "MAX_CHUNK",
    "McpNetCloseRequest",
    "McpNetClosedEvent",
    "McpNetDataEvent",
    "McpNetOpenReply",
    "McpNetOpenRequest",
    "McpNetSendRequest",
    "McpNetSent",
]

MAX_CHUNK: Final = 32 * 1024  # bytes of one data message, before base64
_B64: Final = 4 * ((MAX_CHUNK + 2) // 3)
Chunk = Annotated[str, Field(max_length=_B64, pattern=r"^[A-Za-z0-9+/]*={0,2}$")]


class McpNetOpenRequest(Message):
    """Open a TCP connection to `host`:`port`, one its app's manifest declares (`mcp.network`),
    for `instance_id` (one of the sender's). Refused `mcp_network_undeclared`, or
    `permission_denied` without the user's grant, or `mcp_network_refused` (not a public
    address, not reachable in time, too many open)."""

    type: Literal["gateway.sdk.mcp_net.open"] = "gateway.sdk.mcp_net.open"
    instance_id: Id
    host: Annotated[str, Field(min_length=1, max_length=253)]
    port: Annotated[int, Field(ge=1, le=65535)]


class McpNetOpenReply(Message):
    type: Literal["gateway.sdk.mcp_net.open.reply"] = "gateway.sdk.mcp_net.open.reply"
    connection_id: Id


class McpNetSendRequest(Message):
    """Bytes for the host, in order; the reply comes once they are written (backpressure)."""

    type: Literal["gateway.sdk.mcp_net.send"] = "gateway.sdk.mcp_net.send"
    connection_id: Id
    data: Chunk


class McpNetSent(Message):
    type: Literal["gateway.sdk.mcp_net.sent"] = "gateway.sdk.mcp_net.sent"
    connection_id: Id


class McpNetCloseRequest(Message):
    """The server closed its side: the connection ends (the reply is `McpNetSent`)."""

    type: Literal["gateway.sdk.mcp_net.close"] = "gateway.sdk.mcp_net.close"
    connection_id: Id


class McpNetDataEvent(Message):
    """Runtime → app: bytes from the host, in order."""

    type: Literal["miniapp.mcp_net.data"] = "miniapp.mcp_net.data"
    connection_id: Id
    data: Chunk


class McpNetClosedEvent(Message):
    """Runtime → app: the host closed, or the runtime ended the connection (`code`)."""

    type: Literal["miniapp.mcp_net.closed"] = "miniapp.mcp_net.closed"
    connection_id: Id
    code: str | None = None
