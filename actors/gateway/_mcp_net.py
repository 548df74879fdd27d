"""An MCP server's connections to its declared hosts: checked, dialled and relayed by the gateway.

Theory of operation
-------------------
Steps 3 and 4 of `lineup.sdk.mcp_network`'s design. A granted server's adapter asks to open a
connection for its CONNECT (`gateway.sdk.mcp_net.open`); the gateway checks, in order:

1. the host:port is one the app's manifest declares (focus's `CapabilityContextReply`, for an
   instance that must be the sender's), else `mcp_network_undeclared`;
2. the app's instance was granted `mcp.network` (a `completed` capability request of it, by
   the user's prompt or the host's policy: `grant`), else `permission_denied`;
3. the address: a declared DNS name must resolve to a public address (never loopback,
   private, link-local, multicast or reserved), so that a name cannot be pointed at the user's
   own network after the grant; a declared IP literal is taken as declared, since the user
   saw that very address in the prompt; else `mcp_network_refused`;
4. at most `MAX_CONNECTIONS` per app, and the dial within `DIAL_TIMEOUT`, else
   `mcp_network_refused`.

An open connection is relayed: the app's `send` requests are written in order (the reply
after the write: its backpressure), and the host's bytes go back as `miniapp.mcp_net.data`
events, the end as `miniapp.mcp_net.closed`. Each refusal and each open is audited (the app,
the code; never the host, never a byte). A grant lasts for the instance (a new adapter
process asks again), until the user takes it back on the permissions page (`revoke`: the
app's open connections end at once). Closing a connection, the app's process going away (its
events are refused), or a host silent for `IDLE_TIMEOUT` ends it.
"""

from __future__ import annotations

import base64
import ipaddress
import itertools
import logging
from dataclasses import dataclass
from typing import Final

import trio

from lineup.actors.kernel import AuditRecord, Bus, ErrorCode, LineUpError
from lineup.sdk import protocol as sdk

__all__ = ["DIAL_TIMEOUT", "MAX_CONNECTIONS", "McpConnections", "NotPublic"]

log = logging.getLogger("lineup.gateway")

MAX_CONNECTIONS: Final = 16  # open at once, per app
DIAL_TIMEOUT: Final = 10.0
SEND_TIMEOUT: Final = 30.0  # a host that takes no bytes for this long is dropped
EVENT_TIMEOUT: Final = 30.0  # likewise an app that takes none
IDLE_TIMEOUT: Final = 300.0  # a host silent this long: the connection ends (and frees its slot)


class NotPublic(ValueError):
    """A declared name that resolves to no public address (the module's docstring, step 3)."""


@dataclass
class _Connection:
    scope: str
    stream: trio.SocketStream
    cancel: trio.CancelScope
    lock: trio.Lock


class McpConnections:
    """The gateway's MCP server connections (the module's docstring)."""

    def __init__(self, bus: Bus, actor: str) -> None:
        self._bus = bus
        self._actor = actor
        self._granted: set[tuple[str, str]] = set()  # (app scope, instance id)
        self._open: dict[str, _Connection] = {}
        self._ids = itertools.count(1)

    def grant(self, scope: str, instance_id: str) -> None:
        """The app's instance was granted `mcp.network`."""
        self._granted.add((scope, instance_id))

    def revoke(self, scope: str) -> None:
        """The user took `mcp.network` back from the app (the permissions page): its open
        connections end now, and the next needs a grant again."""
        self._granted = {(s, i) for s, i in self._granted if s != scope}
        for connection in list(self._open.values()):
            if connection.scope == scope:
                connection.cancel.cancel()

    def _refuse(self, scope: str, code: ErrorCode) -> LineUpError:
        self._bus.audit(
            AuditRecord(
                event="gateway.mcp_net_refused",
                actor=self._actor,
                peer=f"miniapp:{scope}",
                code=code.value,
                message_type="gateway.sdk.mcp_net.open",
            )
        )
        return LineUpError(code, "mcp.network")

    async def open(
        self,
        scope: str,
        msg: sdk.McpNetOpenRequest,
        declared: tuple[str, ...],
        nursery: trio.Nursery,
    ) -> sdk.McpNetOpenReply:
        """Check, dial, start relaying (the module's docstring). Raises LineUpError."""
        if f"{msg.host.lower()}:{msg.port}" not in declared:
            raise self._refuse(scope, ErrorCode.MCP_NETWORK_UNDECLARED)
        if (scope, msg.instance_id) not in self._granted:
            raise self._refuse(scope, ErrorCode.PERMISSION_DENIED)
        if sum(1 for c in self._open.values() if c.scope == scope) >= MAX_CONNECTIONS:
            raise self._refuse(scope, ErrorCode.MCP_NETWORK_REFUSED)
        try:
            with trio.fail_after(DIAL_TIMEOUT):
                address = await _address_of(msg.host, msg.port)
                stream = await trio.open_tcp_stream(address, msg.port)
        except (OSError, trio.TooSlowError, ValueError):
            raise self._refuse(scope, ErrorCode.MCP_NETWORK_REFUSED) from None
        connection_id = f"net-{next(self._ids)}"
        connection = _Connection(scope, stream, trio.CancelScope(), trio.Lock())
        self._open[connection_id] = connection
        nursery.start_soon(self._relay, connection_id, connection)
        self._bus.audit(
            AuditRecord(
                event="gateway.mcp_net_opened",
                actor=self._actor,
                peer=f"miniapp:{scope}",
                subject_id=connection_id,
            )
        )
        return sdk.McpNetOpenReply(connection_id=connection_id)

    def _owned(self, scope: str, connection_id: str) -> _Connection:
        connection = self._open.get(connection_id)
        if connection is None or connection.scope != scope:
            raise LineUpError(ErrorCode.MCP_NETWORK_REFUSED, "no such connection")
        return connection

    async def send(self, scope: str, msg: sdk.McpNetSendRequest) -> sdk.McpNetSent:
        connection = self._owned(scope, msg.connection_id)
        data = base64.b64decode(msg.data)
        try:
            async with connection.lock:
                with trio.fail_after(SEND_TIMEOUT):
                    await connection.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError):
            connection.cancel.cancel()
            raise LineUpError(ErrorCode.MCP_NETWORK_REFUSED, "connection ended") from None
        return sdk.McpNetSent(connection_id=msg.connection_id)

    async def close(self, scope: str, msg: sdk.McpNetCloseRequest) -> sdk.McpNetSent:
        self._owned(scope, msg.connection_id).cancel.cancel()
        return sdk.McpNetSent(connection_id=msg.connection_id)

    async def _relay(self, connection_id: str, connection: _Connection) -> None:
        """The host's bytes to the app, until either side ends."""
        app = f"miniapp:{connection.scope}"
        code: str | None = None
        try:
            with connection.cancel:
                while True:
                    data = b""
                    with trio.move_on_after(IDLE_TIMEOUT):
                        data = await connection.stream.receive_some(sdk.MAX_NET_CHUNK)
                    if not data:
                        break
                    chunk = base64.b64encode(data).decode()
                    event = sdk.McpNetDataEvent(connection_id=connection_id, data=chunk)
                    await self._bus.notify(app, event, timeout=EVENT_TIMEOUT)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            code = ErrorCode.MCP_NETWORK_REFUSED.value
        except LineUpError:
            log.info("gateway.mcp_net_app_gone connection=%s", connection_id)
            return  # the app is gone: nobody to tell
        finally:
            self._open.pop(connection_id, None)
            with trio.CancelScope(shield=True):
                await connection.stream.aclose()
        closed = sdk.McpNetClosedEvent(connection_id=connection_id, code=code)
        await self._bus.tell(app, closed, timeout=EVENT_TIMEOUT)


async def _address_of(host: str, port: int) -> str:
    """The address to dial for a declared host (the module's docstring, step 3)."""
    literal = host.strip("[]")
    try:
        return str(ipaddress.ip_address(literal))  # as declared, as the user saw it
    except ValueError:
        pass
    found = await trio.socket.getaddrinfo(host, port, type=trio.socket.SOCK_STREAM)
    for *_, sockaddr in found:
        address = ipaddress.ip_address(sockaddr[0])
        if address.is_global and not address.is_multicast:
            return str(address)
    raise NotPublic(host)
