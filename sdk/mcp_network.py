"""An MCP server's network: none, unless its manifest declares the hosts and the user grants them.

What is built
-------------
- The declaration: a kind-`mcp` manifest may name the hosts its server must reach,
  `"mcp": {"command": [...], "network": ["api.example.com:443"]}` (`HostPort`: a DNS name or
  an IP literal, and a port; at most `MAX_HOSTS`). Declaring is asking, never having: it
  declares the capability `mcp.network` (`NETWORK_CAPABILITY`, `Manifest.declared_capabilities`),
  a capability of the catalog (`lineup.sdk.capabilities`) like any other: default policy
  `ask`, rememberable, decided by the gateway, asked in the runtime's own prompt, whose detail
  line is the runtime's words from the manifest (`describe`: "Connect to: api.example.com:443"),
  never the app's.
- Step 1 below, the sandbox's half: `SandboxPolicy.proxy` (`lineup.supervisor._sandbox`,
  `_seccomp`'s `net`, `_landlock`'s `connect_ports`), proven by
  tests/supervisor/test_sandbox_mcp.py. The supervisor does not set it yet: with no proxy
  behind the listener (steps 2-4), a connection would hang rather than be refused. So today
  every server runs with no network at all, whether it declares hosts or not.

Design: how a granted server reaches its hosts (to build)
---------------------------------------------------------
The server stays in its own network namespace, whose only interface is a loopback. Nothing in
the namespace can route anywhere; every byte that leaves goes through a connection the runtime
opened, for a host it checked against the grant.

1. **The sandbox, fixed at start** (built). For a server whose manifest declares `network`
   (`SandboxPolicy.proxy`, to be set by the supervisor from the manifest, never by focus's
   request), `_sandbox.prepare_child` additionally, while it still holds CAP_NET_ADMIN in the
   new namespace: brings `lo` up (SIOCSIFFLAGS), and opens the proxy's listening socket on
   127.0.0.1:P (kept past `closerange`, like the channel). Landlock then grants TCP connect to
   port P alone (ABI 4: by port; in this namespace P on loopback is the proxy and nothing
   else) and no bind; seccomp's `spawn` program gains a variant that lets `socket` through for
   AF_INET/AF_INET6 SOCK_STREAM only (an argument check, as `socketpair` has). A server that
   declares nothing gets today's sandbox, unchanged. The sandbox is the same whether or not the
   user has granted (a grant may come, or be revoked, while the process runs): the grant is
   checked at each connection, by the runtime, never inside the sandbox. (Its test: the
   server connects to P; another port fails EACCES, an address off the loopback ENETUNREACH,
   a bind or a UDP socket EPERM. The descriptor and port reach the adapter in
   `$LINEUP_MCP_PROXY_FD`.)
2. **The proxy, in the adapter.** `_mcp_host` accepts on that socket and speaks HTTP CONNECT
   (RFC 9110 §9.3.6) only: one request line `CONNECT host:port HTTP/1.1`, headers, at most
   8 KiB, within 10 s. The server is started with `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY` =
   `http://127.0.0.1:P` in its env (Node's `undici` with `EnvHttpProxyAgent`, Python's
   `httpx`/`requests`, `curl` all honour it; a server that ignores it simply has no network).
   The proxy itself decides nothing: it asks the runtime.
3. **The dial, in the runtime.** The adapter sends `gateway.mcp.network.open {host, port}` on
   its channel (sender bound to the channel: the app is who it is). The gateway checks, in
   order: the host:port is one the app's manifest declares (else `mcp_network_undeclared`), the
   app holds a grant of `mcp.network` (else, by the policy: the prompt, or
   `permission_denied`/`policy_denied`), the name resolves to a public address (a declared
   name that resolves to loopback, link-local or the private ranges is refused
   `mcp_network_refused`, so a DNS answer cannot turn a grant for a public API into one for
   the user's LAN), then dials with a deadline. Every refusal is a stable code, answered as
   `HTTP/1.1 403` with the code in a header to the server, and audited (app, code, host:port
   as declared; never a byte of the stream).
4. **The bytes.** The opened connection is relayed as `gateway.mcp.network.data` frames (the
   bus's limits: bounded frames, a bounded window per connection, at most `MAX_CONNECTIONS`
   per app), until either side closes (`...close`). This costs a copy through the bus; it
   keeps the ACL the one place that says who talks to whom. (A later step may hand the
   adapter the connected socket itself, over SCM_RIGHTS, once the bus can carry a descriptor:
   a socket opened outside the namespace works inside it.) TLS stays end to end between the
   server and the host: the runtime sees host:port and byte counts, never content.
5. **Revocation.** Revoking the grant (the permissions page) closes the app's open
   connections and refuses the next; closing or disabling the app does too.

Tests (to write with it): a real local TCP server on the host as "the network"; a server
declaring `127.0.0.1:<port>` (the tests' one exception to step 3's public-address rule, through
a policy flag of the embedded development runtime only) reaches it after the grant; another
port is refused with its code, audited; without the grant, or without the declaration, nothing
connects.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Final

from pydantic import AfterValidator

__all__ = ["MAX_HOSTS", "NETWORK_CAPABILITY", "HostPort", "describe"]

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
