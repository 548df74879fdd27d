"""An MCP App's UI as a LineUp Surface: what a `surface` entrypoint declares of it (SEP-1865).

An MCP App's UI is one HTML document (`text/html;profile=mcp-app`), usually a single file
whose code is inline, built against the ext-apps `App` class. An entrypoint that declares
`mcp_app` says its document is one: the hostbridge then serves it as such a document needs
(`hostbridge/_mcp_document.py`), under the same sandbox and guard as every Surface, and the
Shell's bridge speaks the MCP Apps protocol to it. What the resource's `_meta.ui` says of its
security (`csp`, `permissions`) is declared here in the manifest's own spelling:
`csp.connect_domains` is the spec's `connectDomains`, and so on.

A declared domain or permission is a request, never a grant (issue 30). Declaring a domain
declares the capability `surface.network` (`NETWORK_CAPABILITY`), declaring a permission
`surface.devices` (`DEVICES_CAPABILITY`): `implied_capabilities`. Each is the user's to grant
in the runtime's own prompt, per app, for every origin (or device) the app's entrypoints
declare (`union`, `describe`), like any capability of the catalog; until then the Surface's
policy is the spec's restrictive default whatever is declared ("Host MAY further restrict").
The spec's `domain` (a dedicated origin, host-dependent) has no place here: every Surface's
origin is opaque (`docs/surfaces-and-capabilities.md` says why).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Final, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool

__all__ = [
    "DEVICES_CAPABILITY",
    "FRAME_FEATURES",
    "MAX_DETAIL_CHARS",
    "MCP_APP_MIME_TYPE",
    "NETWORK_CAPABILITY",
    "McpAppCsp",
    "McpAppUi",
    "describe",
    "implied_capabilities",
    "union",
]

MCP_APP_MIME_TYPE: Final = "text/html;profile=mcp-app"  # the spec's UI resource type
NETWORK_CAPABILITY: Final = "surface.network"  # its declared domains, granted by the user
DEVICES_CAPABILITY: Final = "surface.devices"  # its declared `permissions`, likewise
# A declared permission → the feature its frame's `allow` attribute names once granted.
FRAME_FEATURES: Final = {
    "camera": "camera",
    "microphone": "microphone",
    "geolocation": "geolocation",
    "clipboard_write": "clipboard-write",
}
MAX_DETAIL_CHARS: Final = 2000  # the prompt's line of what is granted: bounded, the rest counted

# An origin as the spec's examples write them (`https://api.example.com`, `https://*.cdn.net`,
# `wss://live.example.com:8443`): scheme, host (a leading `*.` allowed), port; no path.
Origin = Annotated[
    str,
    Field(
        pattern=r"^(https?|wss?)://(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?$",
        max_length=253,
    ),
]
Domains = Annotated[tuple[Origin, ...], Field(max_length=32)]
Permission = Literal["camera", "microphone", "geolocation", "clipboard_write"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class McpAppCsp(_Model):
    """The spec's `McpUiResourceCsp`: the origins the UI asks to reach."""

    connect_domains: Domains = ()
    resource_domains: Domains = ()
    frame_domains: Domains = ()
    base_uri_domains: Domains = ()


class McpAppUi(_Model):
    """The spec's `UIResourceMeta`, as a manifest declares it."""

    csp: McpAppCsp = McpAppCsp()
    permissions: tuple[Permission, ...] = ()
    prefers_border: StrictBool | None = None

    @property
    def network(self) -> bool:
        """Does it declare any origin at all?"""
        csp = self.csp
        return bool(
            csp.connect_domains or csp.resource_domains or csp.frame_domains or csp.base_uri_domains
        )


_T = TypeVar("_T")


def _unique(values: Iterable[_T]) -> tuple[_T, ...]:
    return tuple(dict.fromkeys(values))


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
    return ((NETWORK_CAPABILITY,) if ui.network else ()) + (
        (DEVICES_CAPABILITY,) if ui.permissions else ()
    )


def _named(origin: str) -> str:
    # A server on this computer is said so: the user may not read `127.0.0.1` as "here".
    host = origin.split("://", 1)[-1].split(":", 1)[0]
    local = host in ("127.0.0.1", "localhost") or host.endswith(".localhost")
    return f"{origin} (this computer)" if local else origin


def describe(capability: str, ui: McpAppUi) -> str:
    """The runtime's own line of what granting `capability` allows, for the prompt: each
    origin by what it is for (one on this computer said so), or each device (never the app's
    words; bounded)."""
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
