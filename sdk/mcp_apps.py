"""An MCP App's UI as a LineUp Surface: what a `surface` entrypoint declares of it (SEP-1865),
and the spec's shapes of a tool call the runtime shows it (`tool_info`, `call_tool_result`).

An MCP App's UI is one HTML document (`text/html;profile=mcp-app`), usually a single file
whose code is inline, built against the ext-apps `App` class. An entrypoint that declares
`mcp_app` says its document is one: the hostbridge then serves it as such a document needs
(`hostbridge/_mcp_document.py`), under the same sandbox and guard as every Surface, and the
Shell's bridge speaks the MCP Apps protocol to it. What the resource's `_meta.ui` says of its
security (`csp`, `permissions`) is declared here in the manifest's own spelling:
`csp.connect_domains` is the spec's `connectDomains`, and so on.

A declared domain or permission is a request, never a grant: it declares a capability of the
catalog (`surface.network`, `surface.devices`) that the user grants in the runtime's own prompt
(`lineup.sdk.mcp_grants`, issue 30); until then the Surface's policy is the spec's restrictive
default whatever is declared ("Host MAY further restrict"). The spec's `domain` (a
dedicated origin, host-dependent) has no place here: every Surface's origin is opaque
(`docs/surfaces-and-capabilities.md` says why).

An app's resources, as its Surface's `resources/list` and `resources/read` name them, are its
MCP App UI documents: `resource_uri` (`ui://<app_scope>/<entrypoint id>`, the id
percent-encoded) of each `surface` entrypoint that declares `mcp_app`, of type
`MCP_APP_MIME_TYPE`, with `ui_meta` as the content's `_meta.ui`. Those are read from the
signed bundle, never from the server. An app of kind `mcp` has its server's other resources
too: a page's `resources/read` of any other URI (not `ui://`) is its server's, read live
through the app's process within `UI_RESOURCE_READ_TIMEOUT_S`, its contents at most
`MAX_LIVE_RESOURCE_BYTES` of compact JSON (`live_contents_refusal`).
"""

import json
from typing import Annotated, Any, Final, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from lineup.actors.kernel import ErrorCode

from ._tool_model import ToolDescriptor

__all__ = [
    "CONTENT_SCHEMA",
    "MAX_LIVE_RESOURCE_BYTES",
    "MCP_APP_MIME_TYPE",
    "UI_RESOURCE_READ_TIMEOUT_S",
    "UI_TOOL_CALL_TIMEOUT_S",
    "McpAppCsp",
    "McpAppUi",
    "call_tool_error",
    "call_tool_result",
    "live_contents_refusal",
    "mcp_progress",
    "resource_uri",
    "tool_info",
    "ui_meta",
]

MCP_APP_MIME_TYPE: Final = "text/html;profile=mcp-app"  # the spec's UI resource type
# The output schema of an MCP server's tool that declares none: its result is the MCP content
# it answered (`lineup.sdk.mcp_server`, which names it there too).
CONTENT_SCHEMA: Final = {
    "type": "object",
    "properties": {"content": {"type": "array"}},
    "required": ["content"],
}
# How long a Surface's own `tools/call` may run in its app (a local UI action, not a recorded
# call with its own deadline): the app's process stops it then, `deadline_exceeded`; focus,
# the hostbridge and the Shell each wait a little longer.
UI_TOOL_CALL_TIMEOUT_S: Final = 60.0
# A page's `resources/read` of its server's own resource: how long the app's process waits
# for its server (focus and the hostbridge a little longer, all within the Shell's 15 s for a
# reply: `REPLY_TIMEOUT_MS` in hostbridge/web/js/core/bridge.js), and how large its contents
# may be, as compact JSON: they cross the app's frame (`MINIAPP_MAX_FRAME`, 512 KiB) with room.
UI_RESOURCE_READ_TIMEOUT_S: Final = 10.0
MAX_LIVE_RESOURCE_BYTES: Final = 256 * 1024

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
    permissions: tuple[Literal["camera", "microphone", "geolocation", "clipboard_write"], ...] = ()
    prefers_border: StrictBool | None = None


def resource_uri(app_scope: str, entrypoint_id: str) -> str:
    """The `ui://` URI of an app's MCP App UI document: its app and its entrypoint's id."""
    return f"ui://{app_scope}/{quote(entrypoint_id, safe='')}"


def ui_meta(ui: McpAppUi) -> dict[str, Any]:
    """The spec's `_meta.ui` (`McpUiResourceMeta`) of what the manifest declares, in the spec's
    spelling: what the resource asks for, not what the runtime grants."""
    csp = {
        spec: list(domains)
        for spec, domains in (
            ("connectDomains", ui.csp.connect_domains),
            ("resourceDomains", ui.csp.resource_domains),
            ("frameDomains", ui.csp.frame_domains),
            ("baseUriDomains", ui.csp.base_uri_domains),
        )
        if domains
    }
    meta: dict[str, Any] = {}
    if csp:
        meta["csp"] = csp
    if ui.permissions:
        meta["permissions"] = {
            ("clipboardWrite" if p == "clipboard_write" else p): {} for p in ui.permissions
        }
    if ui.prefers_border is not None:
        meta["prefersBorder"] = ui.prefers_border
    return meta


# ---------------------------------------------------------------- a call, as the spec shows it


def tool_info(call_id: str, descriptor: ToolDescriptor) -> dict[str, Any]:
    """The spec's `hostContext.toolInfo` of a Surface opened for a call: the call's id and the
    tool as MCP names one (`Tool`: name, title, description, inputSchema)."""
    tool: dict[str, Any] = {
        "name": descriptor.id,
        "description": descriptor.description,
        "inputSchema": descriptor.input_schema,
    }
    if descriptor.title is not None:
        tool["title"] = descriptor.title
    return {"id": call_id, "tool": tool}


def call_tool_result(
    result: dict[str, Any], descriptor: ToolDescriptor | None = None
) -> dict[str, Any]:
    """The MCP `CallToolResult` of a call's result: the whole result as JSON text (a host that
    shows only `content` loses nothing) and as `structuredContent`. An MCP server's tool that
    declares no output schema (`descriptor`'s is CONTENT_SCHEMA) answered MCP content, kept as its
    result (`lineup.sdk.mcp_server.result_of`): its CallToolResult is that content, as the
    server gave it."""
    if descriptor is not None and descriptor.output_schema == CONTENT_SCHEMA:
        return {"content": list(result.get("content") or []), "isError": False}
    text = json.dumps(result, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": result,
        "isError": False,
    }


def call_tool_error(code: str) -> dict[str, Any]:
    """The MCP `CallToolResult` of a call that failed: its stable code as the text, no
    structured content (an error need not fit the tool's output schema)."""
    return {"content": [{"type": "text", "text": code}], "isError": True}


def mcp_progress(progress: dict[str, Any], count: int) -> dict[str, Any]:
    """The MCP `notifications/progress` params (without the token) of a tool's progress
    report: its `progress` (or `done`) when a number, else `count` (the reports so far), its
    `total` when a number, and its `message` when text (cut at 500 characters)."""
    number = next(
        (
            progress[key]
            for key in ("progress", "done")
            if isinstance(progress.get(key), int | float) and not isinstance(progress[key], bool)
        ),
        count,
    )
    params: dict[str, Any] = {"progress": number}
    total = progress.get("total")
    if isinstance(total, int | float) and not isinstance(total, bool):
        params["total"] = total
    message = progress.get("message")
    if isinstance(message, str):
        params["message"] = message[:500]
    return params


def live_contents_refusal(contents: tuple[dict[str, Any], ...]) -> str | None:
    """Why a server's `ReadResourceResult.contents` may not go to a page, as a code, or None:
    `resource_too_large` over `MAX_LIVE_RESOURCE_BYTES` in all, `handler_failed` when one is
    not an object with a string `uri` and exactly one string `text` or `blob`."""
    for content in contents:
        text, blob = content.get("text"), content.get("blob")
        if not isinstance(content.get("uri"), str) or (text is None) == (blob is None):
            return ErrorCode.HANDLER_FAILED.value
        if not isinstance(text if blob is None else blob, str):
            return ErrorCode.HANDLER_FAILED.value
    size = len(json.dumps(contents, separators=(",", ":")).encode())
    return ErrorCode.RESOURCE_TOO_LARGE.value if size > MAX_LIVE_RESOURCE_BYTES else None
