"""An MCP App Surface's CSP: the spec's default policy, and the origins the user granted.

Theory of operation
-------------------
The spec builds an MCP App's CSP from its resource's `_meta.ui.csp` (`connectDomains` in
`connect-src`, `resourceDomains` in the static resources' directives, `frameDomains` in
`frame-src`, `baseUriDomains` in `base-uri`), and without a declaration it is the spec's
restrictive default: inline script and style, and no network. LineUp's default is that, and
tighter (`_mcp_document` says why inline script is moved out): scripts and styles from the
Surface's own path, images, fonts and media from there and `data:`/`blob:`, nothing else.

A declared domain is a capability (`surface.network`, `lineup.sdk.mcp_grants`): the hostbridge
builds the policy with the declaration only for a document load the gateway granted
(`granted=True`); else, whatever is declared, it is the default. Granted, each directive gets
exactly the declared origins of its kind, and never these:

- `*` or a bare scheme: the manifest's `Origin` pattern admits neither (scheme, host, port);
- the Shell's own origin, under any scheme or port spelling of it (`127.0.0.1` or `localhost`
  on the runtime's port, a `*.localhost` wildcard on it included): the Shell's socket and API
  are the runtime's, never an app's to reach, granted or not (`shell_origin`);
- a script origin: `resourceDomains` reach `img-src`, `font-src`, `style-src` and `media-src`
  but not `script-src`, which the spec's default would give them, since the runtime's guard
  (`_surface_guard`) must be the first code of every script a Surface runs, and a script of
  another origin is served by nobody who adds it.

A granted `frameDomains` origin is a realm of its own (its own CSP, WebRTC and all), which the
user allowed the page to embed; a granted `connectDomains` origin hears whatever the page sends
it. Both are what the prompt names, and nothing beyond them is reachable from the page.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from lineup.sdk.mcp_apps import McpAppCsp

__all__ = ["mcp_app_csp", "shell_origin"]

_ORIGIN: Final = re.compile(r"^[a-z]+://(?P<host>[^:/]+)(?::(?P<port>[0-9]+))?$")
_DEFAULT_PORTS: Final = {"http": 80, "ws": 80, "https": 443, "wss": 443}
_LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost")
_NONE: Final = "'none'"


def shell_origin(origin: str, port: int) -> bool:
    """Does `origin` name the Shell itself (its host on the runtime's `port`, any scheme)?"""
    found = _ORIGIN.match(origin)
    if found is None:
        return True  # not an origin as the manifest admits them: never granted
    scheme = origin.split(":", 1)[0]
    host = found["host"]
    at = int(found["port"]) if found["port"] else _DEFAULT_PORTS.get(scheme)
    wild = host.startswith("*.")
    loopback = (
        host in _LOOPBACK_NAMES
        or host.endswith(".localhost")  # `*.localhost` and its names: loopback in Chromium
        or (wild and any(name.endswith(host[1:]) for name in _LOOPBACK_NAMES))
    )
    return loopback and at == port


def _allowed(origins: Iterable[str], port: int) -> str:
    return " ".join(o for o in dict.fromkeys(origins) if not shell_origin(o, port))


def mcp_app_csp(
    own: str, ancestors: str, port: int, declared: McpAppCsp | None, *, granted: bool
) -> str:
    """The policy of an MCP App's document. `own`: the Surface's path on each of the Shell's
    hosts; `ancestors`: who may frame it (the Shell); `declared`: its entrypoint's `csp`;
    `granted`: the user granted this load `surface.network`. Without a grant, the default."""
    csp = declared if declared is not None and granted else McpAppCsp()
    connect = _allowed(csp.connect_domains, port) or _NONE
    resources = _allowed(csp.resource_domains, port)
    frames = _allowed(csp.frame_domains, port) or _NONE
    base = _allowed(csp.base_uri_domains, port) or _NONE
    extra = f" {resources}" if resources else ""
    return (
        f"default-src 'none'; script-src {own}; style-src {own} 'unsafe-inline'{extra}; "
        f"img-src {own} data: blob:{extra}; connect-src {connect}; "
        f"font-src {own} data:{extra}; media-src {own} data: blob:{extra}; object-src 'none'; "
        f"frame-src {frames}; child-src 'none'; worker-src 'none'; "
        f"manifest-src 'none'; base-uri {base}; form-action 'none'; "
        f"frame-ancestors {ancestors}"
    )
