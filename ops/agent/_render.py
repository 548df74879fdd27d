"""How `lineup agent` shows what it receives: one readable line a message, and the inventory.

Theory of operation: pure functions of the wire's JSON (no I/O), so the console's look is
tested without a network. A message line is its short type (`lineup.v1.` dropped), the call it
is about, its status or code, and a payload summary cut to `PAYLOAD_CHARS`; the whole line is
cut to `LINE_CHARS`. A refusal reads `refused <code> at <pointer>` when the runtime named the
offending field. Everything is bounded, whatever the peer sent: a line never floods a terminal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from lineup import wire

__all__ = [
    "LINE_CHARS",
    "PAYLOAD_CHARS",
    "describe",
    "failure_of",
    "schema_summary",
    "short_type",
    "tool_lines",
]

LINE_CHARS: Final = 200
PAYLOAD_CHARS: Final = 100
SCHEMA_CHARS: Final = 300  # of one tool's input summary in the `tools` list
DESCRIPTION_CHARS: Final = 80
TYPE_WIDTH: Final = 19  # `app_session.opened` and a space (a longer type: one space)
PREFIX: Final = "lineup.v1."
ELLIPSIS: Final = "…"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def _compact(value: Any, limit: int = PAYLOAD_CHARS) -> str:
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = "?"
    return _cut(text, limit)


def short_type(kind: object) -> str:
    """`lineup.v1.tool.result` → `tool.result`; anything else as it is (bounded)."""
    text = kind if isinstance(kind, str) else "?"
    return _cut(text.removeprefix(PREFIX), 60)


def failure_of(payload: Mapping[str, Any]) -> str:
    """A `tool.error` payload as words: `refused <code>`, and `at <pointer>` when it names
    the offending field (`at ""` is the input as a whole)."""
    words = f"refused {_cut(str(payload.get('code', '?')), 60)}"
    pointer = payload.get("pointer")
    if isinstance(pointer, str):
        words += f" at {pointer or chr(34) * 2}"
    return words


def describe(message: Mapping[str, Any]) -> str:
    """One line for one client message: type, call id, status or code, a short payload."""
    kind = message.get("type")
    raw = message.get("payload")
    payload: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
    parts: list[str] = []
    call_id = payload.get("call_id")
    if isinstance(call_id, str):
        parts.append(_cut(call_id, 60))
    if kind == wire.TEXT:
        parts.append(_compact(payload.get("markdown", "")))
    elif kind == wire.INVENTORY:
        tools = payload.get("tools")
        count = len(tools) if isinstance(tools, list) else 0
        parts.append(f"revision {_cut(str(payload.get('revision')), 40)}, {count} tools")
    elif kind == wire.RECEIPT:
        parts.append(_cut(str(payload.get("status", "?")), 40))
        if payload.get("code"):
            parts.append(_cut(str(payload["code"]), 60))
    elif kind == wire.PROGRESS:
        parts.append(_compact(payload.get("progress")))
    elif kind == wire.RESULT:
        parts += ["ok", _compact(payload.get("result"))]
    elif kind == wire.TOOL_ERROR:
        parts.append(failure_of(payload))
    elif kind in (wire.APP_SESSION_OPENED, wire.APP_SESSION_CLOSED):
        parts += [_cut(str(payload.get(k, "?")), 60) for k in ("app_scope", "app_session_id")]
        pending = payload.get("pending_interaction_call_ids")
        if isinstance(pending, list) and pending:
            parts.append(f"{len(pending)} questions still open")
    elif kind == wire.APP_SESSION_CONTEXT:
        parts += [_cut(str(payload.get("app_scope", "?")), 60)]
        parts.append(f"revision {_cut(str(payload.get('revision')), 20)}")
        parts.append(_compact(payload.get("content")))
        if payload.get("structured_content") is not None:
            parts.append(_compact(payload["structured_content"]))
    else:
        parts.append(_compact(raw))
    return _cut(f"{short_type(kind):<{TYPE_WIDTH - 1}} " + "  ".join(parts), LINE_CHARS)


# ------------------------------------------------------------------------------ inventory


def schema_summary(schema: object, depth: int = 0) -> str:
    """A JSON schema of the tool subset as a short type: `{title*: string(1..200), n: integer}`
    (`*` required), `[string]`, `"a"|"b"` for an enum. Nested past two levels: `{…}`."""
    if not isinstance(schema, dict):
        return "?"
    if isinstance(schema.get("enum"), list):
        return "|".join(_compact(v, 40) for v in schema["enum"][:8])
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties")
        if not isinstance(properties, dict) or not properties:
            return "{}"
        if depth >= 2:
            return "{…}"
        required = schema.get("required")
        needed = set(required) if isinstance(required, list) else set()
        fields = [
            f"{name}{'*' if name in needed else ''}: {schema_summary(sub, depth + 1)}"
            for name, sub in properties.items()
        ]
        return "{" + ", ".join(fields) + "}"
    if kind == "array":
        return f"[{schema_summary(schema.get('items'), depth)}]"  # an array is no nesting level
    low = schema.get("minLength", schema.get("minimum"))
    high = schema.get("maxLength", schema.get("maximum"))
    bounds = f"({'' if low is None else low}..{'' if high is None else high})"
    return f"{kind}{bounds if low is not None or high is not None else ''}"


def _called(tool: Mapping[str, Any]) -> Any:
    """The name a tool is called by: its `id` (`<scope>/<method>` for a method named the seeds'
    way), else, from a runtime that publishes none, its `method`."""
    return tool.get("id") or tool.get("method")


def tool_lines(inventory: Mapping[str, Any] | None, name: str | None = None) -> list[str]:
    """The `tools` command's lines: each tool's id, handling and description, then its
    input as `schema_summary`; with `name`, that one tool's whole input schema as JSON."""
    if inventory is None:
        return ["no inventory received yet"]
    raw = inventory.get("tools")
    tools: Sequence[Any] = raw if isinstance(raw, list) else []
    described = [t for t in tools if isinstance(t, dict)]
    if name is not None:
        for tool in described:
            if _called(tool) == name:
                schema = json.dumps(tool.get("input_schema"), indent=2, sort_keys=True)
                return [f"{name} ({tool.get('handling', '?')}) input schema:", *schema.split("\n")]
        return [f"no tool {_cut(name, 100)} in revision {inventory.get('revision')}"]
    lines = [f"revision {inventory.get('revision')}: {len(described)} tools"]
    width = max([len(str(_called(t) or "?")) for t in described] + [0])
    for tool in sorted(described, key=lambda t: str(_called(t) or "")):
        description = _cut(str(tool.get("description") or "").split("\n")[0], DESCRIPTION_CHARS)
        method, handling = str(_called(tool) or "?"), str(tool.get("handling", "?"))
        head = f"  {method:<{width}}  {handling:<11}"
        lines.append(f"{head}  {description}".rstrip())
        lines.append(f"      {_cut(schema_summary(tool.get('input_schema')), SCHEMA_CHARS)}")
    return lines
