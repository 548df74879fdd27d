"""An MCP server's network: none, unless its manifest declares the hosts and the user grants them.

Theory of operation
-------------------
**The declaration.** A kind-`mcp` manifest may name the hosts its server must reach,
`"mcp": {"command": [...], "network": ["api.example.com:443"]}` (`HostPort`: a DNS name or an
IP literal, and a port; at most `MAX_HOSTS`; `lineup app import-mcp --network` writes it).
Declaring is asking, never having: it declares the capability `mcp.network`
(`NETWORK_CAPABILITY`, `Manifest.declared_capabilities`), a capability of the catalog
(`lineup.sdk.capabilities`) like any other: default policy `ask`, rememberable, decided by the
gateway, asked in the runtime's own prompt, whose detail line is the runtime's words from the
manifest (`describe`: "Connect to: api.example.com:443"), never the app's.

**How a granted server reaches exactly those hosts.** The server stays in its own network
namespace, whose only interface is a loopback: nothing there routes anywhere, and every byte
that leaves goes through a connection the runtime opened, for a host it checked.

1. *The sandbox, fixed at start* (`lineup.supervisor._sandbox`). For a server that declares
   hosts, the supervisor sets the policy's `proxy` (from focus's config, which is the
   manifest's; `_miniapps.mcp_server`). The sandbox brings `lo` up while it still holds the
   namespace's capabilities, and listens on 127.0.0.1:P before confining; Landlock then lets
   TCP connect to port P alone, and seccomp lets TCP sockets (only) be opened, connected and
   accepted, never bound. The sandbox is the same whether or not the user has granted: the
   grant is checked at each connection, by the runtime. A server that declares nothing gets
   no socket at all, as before.
2. *The proxy, in the adapter* (`lineup.sdk._mcp_proxy`). The server is started with
   `HTTPS_PROXY` and its kin set to `http://127.0.0.1:P` (Python's `httpx` and `requests`,
   `curl`, and Node's fetch with `NODE_USE_ENV_PROXY` honour it; a server that ignores it has
   no network). The proxy speaks HTTP CONNECT only and decides nothing: its first connection
   asks the runtime for `mcp.network` (the prompt, or the host's policy), each asks the
   gateway to open it; a refusal is `HTTP/1.1 403` with the code in `LineUp-Error`.
3. *The dial, in the runtime* (`actors/gateway/_mcp_net`): declared (else
   `mcp_network_undeclared`), granted (else `permission_denied`), a public address for a
   declared name (a name that resolves to loopback or a private range is refused
   `mcp_network_refused`, so DNS cannot turn a grant for a public API into one for the user's
   network; an IP literal is dialled as declared, as the user saw it), a bounded number per
   app, a deadline. Each refusal and each opening is audited (app and code; never the host,
   never a byte).
4. *The bytes* travel over the bus, base64 in bounded chunks, each send answered once written
   (backpressure), the host's as events the proxy queues a bounded number of (past that the
   connection is cut). TLS stays end to end between the server and the host.

Taking the grant back on the permissions page ends the app's open connections at once, and
its next connection asks again. Not yet: the bus copies every byte (a descriptor passed over
SCM_RIGHTS would not: a socket opened outside the namespace works inside it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Final

from pydantic import AfterValidator

from lineup.facts.mcp import PROXY_FD_ENV

__all__ = ["MAX_HOSTS", "NETWORK_CAPABILITY", "PROXY_FD_ENV", "HostPort", "describe"]

NETWORK_CAPABILITY: Final = "mcp.network"  # the server's declared hosts, granted by the user

MAX_HOSTS: Final = 32
_LABEL: Final = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_PORT: Final = re.compile(
    rf"^(?:(?:{_LABEL}\.)*{_LABEL}|\d{{1,3}}(?:\.\d{{1,3}}){{3}}|\[[0-9A-Fa-f:.]+\]):(\d{{1,5}})$"
)


def _host_port(value: str) -> str:
    found = _HOST_PORT.match(value)
    if found is None or not 0 < int(found.group(1)) < 65536:
        raise ValueError("a host and a port, as host:port")
    return value.lower()


HostPort = Annotated[str, AfterValidator(_host_port)]


def describe(hosts: Sequence[str]) -> str:
    """The runtime's own line of what granting `mcp.network` allows, for the prompt."""
    return "Connect to: " + " ".join(hosts)
