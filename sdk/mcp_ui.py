"""An MCP server's own UI (MCP Apps, SEP-1865) as its LineUp app's Surfaces. No I/O.

Theory of operation
-------------------
A server links a tool to its UI by the tool's `_meta.ui.resourceUri` (or the deprecated flat
`_meta["ui/resourceUri"]`): a `ui://` resource, read with `resources/read`, whose content is
one HTML document of type `text/html;profile=mcp-app`. The probe (`supervisor/_mcp_probe.py`)
reads each linked resource once, inside the sandbox, offline, and this module maps what it
read into the app's manifest (`ui_of`, `link`), the documents written beside it, in its
`web/` folder: the UI that runs is the one the manifest (and, once packed, the bundle's
signature) covers, never one the server serves later.

    resource `ui://a/b.html`   a `surface` entrypoint `a-b-html` (`entrypoint_id_of`) declaring
                               `mcp_app`, its document `mcp-ui/a-b-html.html` (the HTML, as
                               read); its Surface's `resources/list|read` name it
                               `ui://<scope>/a-b-html` (`lineup.sdk.mcp_apps.resource_uri`)
    `_meta.ui` of the resource `csp` (the four domain lists), `permissions` (the four the spec
                               names; another is not asked for), `prefersBorder`: the
                               entrypoint's `mcp_app`, a request the user grants
                               (`lineup.sdk.mcp_grants`), never a grant. The content's
                               `_meta.ui` over the listing's, key by key; `domain` has no place
    tool `_meta.ui`            its `ui` (`ToolDescriptor.ui`): the entrypoint of its resource,
                               and its `visibility` (default both; `["app"]`: never in the
                               Agent's inventory, callable by the page). One the Agent may
                               call is handled `launch`, not `direct`: the Agent's call starts
                               the app in front, so its UI shows the call where the user is

A resource that is not the spec's type, unreadable, over `MAX_UI_DOCUMENT` bytes, with a
`_meta.ui` LineUp cannot read, or beyond `MAX_UI_RESOURCES`, gives no entrypoint: each tool
linked to it stays, without a UI, and the reason is returned (`McpUi.refused`), to be printed.
An app-only tool whose own UI is not there is linked to the app's first UI (any page of the
server may call it, as the spec has it), and left out, `tool_app_only_without_ui`, when the
app has none: it could never be called, and must never reach the Agent. A page may call the
tools linked to a UI whose visibility includes `app` (`ToolDescriptor.app_callable`); a tool
with no `_meta.ui` is the Agent's only.

`link` needs only the tools and the entrypoints, so a development app's new `tools/list`
(`notifications/tools/list_changed`) keeps its links to the UIs its manifest has.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import ValidationError

from ._tool_model import ToolDescriptor, ToolUi
from .manifest import SURFACE_KIND, Entrypoint
from .mcp_apps import MCP_APP_MIME_TYPE, McpAppUi
from .mcp_server import McpTools

__all__ = [
    "DOCUMENT_FOLDER",
    "MAX_UI_DOCUMENT",
    "MAX_UI_RESOURCES",
    "McpUi",
    "entrypoint_id_of",
    "link",
    "linked_uris",
    "resource_uri_of",
    "ui_of",
    "visibility_of",
]

MAX_UI_DOCUMENT: Final = 2 * 1024 * 1024  # bytes of one UI resource's HTML (UTF-8)
MAX_UI_RESOURCES: Final = 8  # UI resources read per server
DOCUMENT_FOLDER: Final = "mcp-ui"  # under the app's `web/`
_DEPRECATED_KEY: Final = "ui/resourceUri"
_SCHEME: Final = "ui://"
_ID_OTHER: Final = re.compile(r"[^a-z0-9]+")
_VISIBILITY: Final = ("model", "app")
_PERMISSIONS: Final = {
    "camera": "camera",
    "microphone": "microphone",
    "geolocation": "geolocation",
    "clipboardWrite": "clipboard_write",
}
_CSP: Final = {
    "connectDomains": "connect_domains",
    "resourceDomains": "resource_domains",
    "frameDomains": "frame_domains",
    "baseUriDomains": "base_uri_domains",
}


@dataclass(frozen=True)
class McpUi:
    """The UIs of a server, as its app declares them: the entrypoints, each one's document
    (its path under `web/` → the HTML), and each resource left out with its reason."""

    entrypoints: tuple[Entrypoint, ...] = ()
    documents: Mapping[str, str] = field(default_factory=dict)
    refused: tuple[tuple[str, str], ...] = ()  # (the resource's URI, reason)


def resource_uri_of(tool: Mapping[str, Any]) -> str | None:
    """The URI of the UI resource a listed tool names (`_meta.ui.resourceUri`, else the
    deprecated `_meta["ui/resourceUri"]`), None when it names none."""
    meta = tool.get("_meta")
    if not isinstance(meta, Mapping):
        return None
    ui = meta.get("ui")
    uri = ui.get("resourceUri") if isinstance(ui, Mapping) else None
    if not isinstance(uri, str):
        uri = meta.get(_DEPRECATED_KEY)
    return uri if isinstance(uri, str) and uri else None


def visibility_of(tool: Mapping[str, Any]) -> tuple[str, ...]:
    """Who may call a listed tool (`_meta.ui.visibility`, by default `model` and `app`): the
    values the spec names, in its order; empty when the server named only others."""
    meta = tool.get("_meta")
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    said = ui.get("visibility") if isinstance(ui, Mapping) else None
    if not isinstance(said, list | tuple):
        return _VISIBILITY
    return tuple(v for v in _VISIBILITY if v in said)


def entrypoint_id_of(uri: str) -> str:
    """The entrypoint of a `ui://` resource: its URI after the scheme, lower case, every run
    of other characters one "-" (`ui://get-time/mcp-app.html` → `get-time-mcp-app-html`)."""
    slug = _ID_OTHER.sub("-", uri.removeprefix(_SCHEME).lower()).strip("-")[:100].rstrip("-")
    return slug or "ui"


def linked_uris(tools: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """The distinct `ui://` resources the listed tools name, in their order: what the probe
    reads (at most MAX_UI_RESOURCES; `ui_of` says why the rest have no UI)."""
    found: list[str] = []
    for tool in tools:
        uri = resource_uri_of(tool)
        if uri is not None and uri.startswith(_SCHEME) and uri not in found:
            found.append(uri)
    return tuple(found[:MAX_UI_RESOURCES])


def ui_of(
    tools: Sequence[Mapping[str, Any]],
    listed: Sequence[Mapping[str, Any]],
    read: Mapping[str, Mapping[str, Any]],
) -> McpUi:
    """The UIs of the listed `tools`, from the server's `resources/list` (`listed`, possibly
    empty) and what the probe read of each linked resource (`read`: URI → the one content, as
    on the wire, or `{"error": …}`, or `{"size": n}` for one it did not keep)."""
    entrypoints: list[Entrypoint] = []
    documents: dict[str, str] = {}
    refused: list[tuple[str, str]] = []
    reading = linked_uris(tools)
    for tool in tools:
        uri = resource_uri_of(tool)
        if uri is None or any(uri == u for u, _ in refused) or uri in reading:
            continue
        reason = "ui_resource_not_ui" if not uri.startswith(_SCHEME) else "ui_resource_over_bound"
        refused.append((uri, reason))
    listings = {str(r.get("uri")): r for r in listed if isinstance(r, Mapping)}
    for uri in reading:
        entry_id = entrypoint_id_of(uri)
        if any(e.id == entry_id for e in entrypoints):
            refused.append((uri, "ui_resource_duplicate"))
            continue
        try:
            html, ui = _document(read.get(uri) or {}, listings.get(uri) or {})
        except _Refused as exc:
            refused.append((uri, exc.reason))
            continue
        document = f"{DOCUMENT_FOLDER}/{entry_id}.html"
        entrypoints.append(
            Entrypoint(id=entry_id, kind=SURFACE_KIND, document=document, mcp_app=ui)
        )
        documents[document] = html
    return McpUi(tuple(entrypoints), documents, tuple(refused))


def link(
    tools: McpTools, listed: Sequence[Mapping[str, Any]], entrypoints: Sequence[Entrypoint]
) -> McpTools:
    """`tools` (`mcp_server.tools_of` of the `listed` tools), each linked to its UI among the
    app's `entrypoints` with its visibility (the module's docstring)."""
    uis = [e.id for e in entrypoints if e.kind == SURFACE_KIND and e.mcp_app is not None]
    by_name = {str(t.get("name", "")): t for t in listed}
    descriptors: list[ToolDescriptor] = []
    names: dict[str, str] = {}
    refused = list(tools.refused)
    for descriptor in tools.descriptors:
        name = tools.names[descriptor.method]
        listing = by_name.get(name, {})
        uri = resource_uri_of(listing)
        visibility = visibility_of(listing)
        own = entrypoint_id_of(uri) if uri is not None else None
        if not visibility:
            refused.append((name, "tool_visibility_invalid"))
            continue
        if own is not None and own in uis:
            entrypoint: str | None = own
        elif "model" not in visibility:
            if not uis:
                refused.append((name, "tool_app_only_without_ui"))
                continue
            entrypoint = uis[0]
        else:
            entrypoint = None
        if entrypoint is not None:
            ui = ToolUi(entrypoint=entrypoint, visibility=visibility)
            handling = "launch" if "model" in visibility else descriptor.handling
            descriptors.append(descriptor.model_copy(update={"ui": ui, "handling": handling}))
        else:
            descriptors.append(descriptor)
        names[descriptor.method] = name
    return McpTools(tuple(descriptors), names, refused)


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _document(content: Mapping[str, Any], listing: Mapping[str, Any]) -> tuple[str, McpAppUi]:
    """The HTML of one read resource and its `mcp_app`. Raises `_Refused` with the reason."""
    if "error" in content:
        raise _Refused("ui_resource_unreadable")
    mime = str(content.get("mimeType") or listing.get("mimeType") or "")
    if mime.replace(" ", "").lower() != MCP_APP_MIME_TYPE:
        raise _Refused("ui_resource_not_mcp_app")
    if "size" in content:
        raise _Refused("ui_resource_too_big")
    text = content.get("text")
    if not isinstance(text, str):
        try:
            text = base64.b64decode(str(content.get("blob")), validate=True).decode()
        except (binascii.Error, ValueError):
            raise _Refused("ui_resource_unreadable") from None
    if len(text.encode()) > MAX_UI_DOCUMENT:
        raise _Refused("ui_resource_too_big")
    meta = {**_ui_meta(listing), **_ui_meta(content)}
    try:
        return text, McpAppUi.model_validate(_declared(meta))
    except (ValidationError, TypeError, AttributeError):
        raise _Refused("ui_meta_invalid") from None


def _ui_meta(where: Mapping[str, Any]) -> dict[str, Any]:
    meta = where.get("_meta")
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    return dict(ui) if isinstance(ui, Mapping) else {}


def _declared(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The spec's `McpUiResourceMeta` in the manifest's spelling (`McpAppUi`)."""
    declared: dict[str, Any] = {}
    csp = meta.get("csp")
    if csp is not None:
        declared["csp"] = {ours: csp[spec] for spec, ours in _CSP.items() if spec in csp}
    permissions = meta.get("permissions")
    if permissions is not None:
        asked = [ours for spec, ours in _PERMISSIONS.items() if spec in permissions]
        declared["permissions"] = asked
    if "prefersBorder" in meta:
        declared["prefers_border"] = meta["prefersBorder"]
    return declared
