"""An MCP App page's declared network and devices, as capabilities the user grants (issue 30).

What a `surface` entrypoint's `mcp_app` declares of its security (`lineup.sdk.mcp_apps`) is a
request, never a grant. Declaring a domain (any of `csp.connect_domains`, `resource_domains`,
`frame_domains`, `base_uri_domains`) declares the capability `surface.network`
(`NETWORK_CAPABILITY`); declaring a permission declares `surface.devices`
(`DEVICES_CAPABILITY`): `implied_capabilities`, which the manifest adds to its
`requested_capabilities` (`Manifest.declared_capabilities`). Each is a capability of the
catalog (`lineup.sdk.capabilities`) like any other: per app, for every origin (or device) the
app's entrypoints declare (`union`), asked in the runtime's own prompt, whose detail line is
the runtime's words from the manifest (`describe`), never the app's.

The grant is applied by the hostbridge (the Surface's CSP, `hostbridge/_mcp_csp.py`) and the
Shell (the frame's `allow`, each permission's `FRAME_FEATURES` name).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, TypeVar

from .mcp_apps import McpAppCsp, McpAppUi

__all__ = [
    "DEVICES_CAPABILITY",
    "FRAME_FEATURES",
    "MAX_DETAIL_CHARS",
    "NETWORK_CAPABILITY",
    "declares_network",
    "describe",
    "implied_capabilities",
    "union",
]

NETWORK_CAPABILITY: Final = "surface.network"  # its declared domains, granted by the user
DEVICES_CAPABILITY: Final = "surface.devices"  # its declared `permissions`, likewise
# A declared permission → the feature its frame's `allow` attribute names once granted.
FRAME_FEATURES: Final = {
    "camera": "camera",
    "microphone": "microphone",
    "geolocation": "geolocation",
    "clipboard_write": "clipboard-write",
}
MAX_DETAIL_CHARS: Final = 2000  # the prompt's line of what is granted: bounded, then "and more"
_LOCAL_HOSTS: Final = ("127.0.0.1", "localhost")

_T = TypeVar("_T")


def _unique(values: Iterable[_T]) -> tuple[_T, ...]:
    return tuple(dict.fromkeys(values))


def declares_network(ui: McpAppUi) -> bool:
    """Does `ui` declare any origin at all?"""
    csp = ui.csp
    return bool(
        csp.connect_domains or csp.resource_domains or csp.frame_domains or csp.base_uri_domains
    )


def union(uis: Iterable[McpAppUi]) -> McpAppUi:
    """Everything `uis` declare (an app's MCP App entrypoints): what its grants are asked for."""
    held = tuple(uis)
    return McpAppUi.model_construct(
        csp=McpAppCsp.model_construct(
            connect_domains=_unique(o for ui in held for o in ui.csp.connect_domains),
            resource_domains=_unique(o for ui in held for o in ui.csp.resource_domains),
            frame_domains=_unique(o for ui in held for o in ui.csp.frame_domains),
            base_uri_domains=_unique(o for ui in held for o in ui.csp.base_uri_domains),
        ),
        permissions=_unique(p for ui in held for p in ui.permissions),
        prefers_border=None,
    )


def implied_capabilities(ui: McpAppUi) -> tuple[str, ...]:
    """The capabilities a declaration asks for: the network for a domain, the devices for a
    permission."""
    return ((NETWORK_CAPABILITY,) if declares_network(ui) else ()) + (
        (DEVICES_CAPABILITY,) if ui.permissions else ()
    )


def _named(origin: str) -> str:
    # A server on this computer is said so: the user may not read `127.0.0.1` as "here".
    host = origin.split("://", 1)[-1].split(":", 1)[0]
    local = host in _LOCAL_HOSTS or host.endswith(".localhost")
    return f"{origin} (this computer)" if local else origin


def describe(capability: str, ui: McpAppUi) -> str:
    """The runtime's own line of what granting `capability` allows, for the prompt: each
    origin by what it is for (one on this computer said so), or each device (never the app's
    words; at most `MAX_DETAIL_CHARS`)."""
    if capability == DEVICES_CAPABILITY:
        text = "Devices: " + ", ".join(p.replace("_", " ") for p in ui.permissions)
    else:
        csp = ui.csp
        parts = [
            f"{what}: {' '.join(_named(o) for o in origins)}"
            for what, origins in (
                ("Connect to", csp.connect_domains),
                ("Load images, fonts, styles and media from", csp.resource_domains),
                ("Embed pages of", csp.frame_domains),
                ("Base URL", csp.base_uri_domains),
            )
            if origins
        ]
        text = "\n".join(parts)
    if len(text) <= MAX_DETAIL_CHARS:
        return text
    return text[: MAX_DETAIL_CHARS - 12].rsplit(" ", 1)[0] + " … and more"
