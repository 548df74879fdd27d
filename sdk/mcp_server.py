"""An MCP server as a LineUp app: its scope, its tools' descriptors, its results. No I/O.

Theory of operation
-------------------
LineUp is the MCP client of an app of kind `mcp` (`lineup.sdk._mcp_host` runs the server). What
the server says in MCP is mapped here, once, for the manifest written at `lineup run --dev-mcp`
and for the adapter that serves the calls, so both read a tool one way:

    serverInfo.name       the app's scope, unless one is given: lower case, every run of other
                          characters one "-", a letter first (`scope_of`)
    tool name             kept under the scope (`<scope>.<name>`) when LineUp's id rule takes it
                          as written; otherwise lower-cased with "_" between words and for
                          every other character (`getTime` → `get_time`), and the adapter calls
                          the server by its own name (`method_of`). Two names that map to one
                          method, or a name still refused, leave the tool out, with a reason
    inputSchema           the input schema, as declared (JSON Schema 2020-12, `_mcp_schema`)
    outputSchema          the output schema, as declared; a tool without one answers
                          `{"content": [...]}` (`CONTENT_SCHEMA`)
    annotations           `readOnlyHint` → risk low; `destructiveHint` (MCP's default when not
                          read-only) → risk high; `idempotentHint` → idempotent. Every tool is a
                          `direct` command: started in the background, as LineUp's own are
                          (but one linked to its UI, `launch`: `lineup.sdk.mcp_ui`)
    CallToolResult        `structuredContent` when the tool declares an output schema, else
                          `{"content": [...]}`: the one terminal result (`result_of`); with
                          `isError`, a tool error `mcp_tool_error` (`error_text_of` its text)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import ValidationError

from ._tool_model import ManifestInvalid, ToolDescriptor
from .manifest import FORMAT, Entrypoint, Manifest, load_manifest
from .mcp_apps import CONTENT_SCHEMA

__all__ = [
    "CONTENT_SCHEMA",
    "McpTools",
    "error_text_of",
    "manifest_of",
    "method_of",
    "result_of",
    "scope_of",
    "tools_of",
]

MAX_ERROR_TEXT: Final = 1000
_NAME_OK: Final = re.compile(r"^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$")
_WORD_BREAK: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_OTHER: Final = re.compile(r"[^a-z0-9_.-]+")


def scope_of(server_name: str) -> str:
    """An app scope from the server's `serverInfo.name` ("Our Test Server" → `our-test-server`)."""
    scope = re.sub(r"[^a-z0-9]+", "-", server_name.lower()).strip("-")[:63].rstrip("-")
    if not scope or not scope[0].isalpha():
        scope = f"mcp-{scope}".rstrip("-")[:63]
    return scope


def method_of(scope: str, name: str) -> str:
    """The LineUp method of the server's tool `name` under `scope` (the module's docstring)."""
    if not _NAME_OK.match(name):
        name = _OTHER.sub("_", _WORD_BREAK.sub("_", name).lower()).strip("_.-")
        name = re.sub(r"\.{2,}", ".", name)
        if not name or not name[0].isalpha():
            name = f"t_{name}"
    return f"{scope}.{name}"


class McpTools:
    """The server's tools as LineUp holds them: descriptors, and each method's MCP name."""

    def __init__(
        self,
        descriptors: tuple[ToolDescriptor, ...],
        names: Mapping[str, str],
        refused: Sequence[tuple[str, str]],
    ) -> None:
        self.descriptors = descriptors
        self.names = dict(names)  # method → the server's own name
        self.refused = tuple(refused)  # (the server's name, reason)

    def structured(self, method: str) -> bool:
        """Whether the tool declares an output schema (its result is `structuredContent`)."""
        found = next((d for d in self.descriptors if d.method == method), None)
        return found is not None and found.output_schema != CONTENT_SCHEMA


def tools_of(scope: str, listed: Sequence[Mapping[str, Any]]) -> McpTools:
    """The descriptors of the server's `tools/list` (dumped by alias, as on the wire)."""
    descriptors: list[ToolDescriptor] = []
    names: dict[str, str] = {}
    refused: list[tuple[str, str]] = []
    for tool in listed:
        name = str(tool.get("name", ""))
        method = method_of(scope, name)
        if method in names:
            refused.append((name, "duplicate_tool"))
            continue
        try:
            descriptor = _descriptor(method, tool)
        except ManifestInvalid as exc:
            refused.append((name, exc.reason))
            continue
        except ValidationError:
            refused.append((name, "tool_declaration_invalid"))
            continue
        descriptors.append(descriptor)
        names[method] = name
    return McpTools(tuple(descriptors), names, refused)


def _descriptor(method: str, tool: Mapping[str, Any]) -> ToolDescriptor:
    annotations = tool.get("annotations") or {}
    read_only = annotations.get("readOnlyHint") is True
    destructive = not read_only and annotations.get("destructiveHint") is not False
    title = str(tool.get("title") or annotations.get("title") or "")[:80].strip()
    return ToolDescriptor(
        method=method,
        handling="direct",
        delivery="mcp",
        input_schema=dict(tool.get("inputSchema") or {}),
        output_schema=dict(tool.get("outputSchema") or CONTENT_SCHEMA),
        description=str(tool.get("description") or "")[:4096],
        title=title or None,
        idempotent=True if annotations.get("idempotentHint") is True else None,
        risk="low" if read_only else "high" if destructive else "medium",
    )


def manifest_of(
    scope: str,
    version: str,
    title: str | None,
    command: Sequence[str],
    tools: McpTools,
    entrypoints: Sequence[Entrypoint] = (),
) -> Manifest:
    """The `lineup.app.v1` manifest of an MCP app (kind `mcp`), with its UIs' `entrypoints`
    (`lineup.sdk.mcp_ui`). Raises `ManifestInvalid`."""
    return load_manifest(
        {
            "format": FORMAT,
            "app_scope": scope,
            "version": version or "0",
            "kind": "mcp",
            **({"title": title} if title else {}),
            "mcp": {"command": list(command)},
            "entrypoints": [e.model_dump(mode="json") for e in entrypoints],
            "tools": [d.model_dump(mode="json") for d in tools.descriptors],
        }
    )


def result_of(result: Mapping[str, Any], structured: bool) -> dict[str, Any]:
    """The LineUp result of a (successful) `CallToolResult`, dumped by alias."""
    if structured:
        content = result.get("structuredContent")
        return dict(content) if isinstance(content, dict) else {}
    return {"content": list(result.get("content") or [])}


def error_text_of(result: Mapping[str, Any]) -> str:
    """The text of an `isError` result, for the Agent (never logged), at most MAX_ERROR_TEXT."""
    parts = [
        str(block.get("text", ""))
        for block in result.get("content") or []
        if isinstance(block, dict) and block.get("type") == "text"
    ]
    return " ".join(parts)[:MAX_ERROR_TEXT]
