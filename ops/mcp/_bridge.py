"""What `lineup mcp` knows, without MCP I/O: the inventory as MCP tools, the Agent's calls in
flight, the conversation, and the translation of the runtime's answers into MCP results.

Theory of operation
-------------------
One sync loop (in `_server`) reads everything the runtime sends the Agent and hands it here:
an inventory replaces `Bridge.inventory` (a full snapshot, never merged) and wakes whoever
waits for a newer revision; a receipt, progress, result or error goes to the one call in
flight with that `call_id` (`CallTable`: one bounded slot per call, opened before the call is
sent and removed in `finally`, so a late or foreign answer is dropped, never leaked); a text is
the user's, kept (bounded) in `Conversation`. The first terminal message of a call is its only
one: the slot closes on it.

A result's text content is the whole result as JSON (bounded as the result already is: by the
wire's frame), so a host that shows only `content` loses nothing. A refusal carries no
`structuredContent` (a tool's `outputSchema` describes its result, not a refusal, and a client
validates what it gets against it): `isError`, with the stable code, and the JSON pointer of a
bad field, in its text.

A result that holds a PNG inline (`png_base64`, as `draw-and-guess.get_drawing` answers, and
checked: valid base64, the PNG signature, bounded) is also MCP image content, so a model sees
the picture; the JSON beside it, as text, names the image instead of repeating its base64. The
structured content is the result, unchanged.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

import mcp_types as types
import trio

from lineup import wire
from lineup.sdk.schema import validate

__all__ = [
    "CONVERSATION_TOOLS",
    "MESSAGES_URI",
    "NEXT_MESSAGE",
    "RESOURCE_NOT_FOUND",
    "SAY",
    "Bridge",
    "CallSlot",
    "CallTable",
    "Conversation",
    "Inventory",
    "error_result",
    "inline_png",
    "input_violation",
    "mcp_tools",
    "progress_line",
    "refusal_code",
    "result_of",
    "tool_annotations",
    "tool_title",
    "whole_text",
]

SAY: Final = "conversation.say"
NEXT_MESSAGE: Final = "conversation.next_message"
MESSAGES_URI: Final = "lineup://conversation/messages"
FINALS: Final = frozenset({wire.RESULT, wire.TOOL_ERROR})
CALL_KINDS: Final = frozenset({wire.RECEIPT, wire.PROGRESS, *FINALS})
CALL_SLOT_SIZE: Final = 64  # receipts and progress of one call not yet forwarded
MAX_CALLS: Final = 256  # calls in flight at once
MAX_MESSAGES: Final = 200  # the conversation's newest messages kept (and served)
MAX_LINE_CHARS: Final = 200  # of a progress line
MAX_WAIT_S: Final = 300.0  # the longest `conversation.next_message` wait
INLINE_PNG_KEY: Final = "png_base64"
PNG_SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"
MAX_INLINE_PNG_CHARS: Final = 256 * 1024  # of base64: beyond it, the result stays text only
ERROR_PREFIX: Final = "error: "  # a refusal's text: `error: CODE[ at POINTER][\nmessage]`
RESOURCE_NOT_FOUND: Final = -32002  # the JSON-RPC error of an unknown resource (spec 2025-11-25)

# A call that may wait (for the user, for an app) may run as one of the spec's tasks (`_tasks`).
AS_TASK: Final = types.ToolExecution(task_support="optional")
_SAY_TOOL: Final = types.Tool(
    name=SAY,
    title="Say to the user",
    description=(
        "Say something to the user in the LineUp chat (Markdown). With `app_session_id` (an "
        "open app sub-session's, as `lineup.v1.app_session.opened` named it), it is a short "
        "result of that app, shown in its group; the runtime refuses any other."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "markdown": {"type": "string", "minLength": 1, "maxLength": 16_000},
            "app_session_id": {"type": "string", "minLength": 1, "maxLength": 200},
        },
        "required": ["markdown"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {"message_id": {"type": "string"}},
        "required": ["message_id"],
    },
    # It adds a message to the chat: nothing is changed or removed, and each call says again.
    annotations=types.ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    ),
)
_NEXT_TOOL: Final = types.Tool(
    name=NEXT_MESSAGE,
    title="Wait for the user's next message",
    execution=AS_TASK,
    description=(
        "Wait for the user's next message in the LineUp chat and return it (at most "
        f"timeout_s seconds, default 60, up to {MAX_WAIT_S:g}); `timed_out` when none came. "
        "Each message is returned once."
    ),
    input_schema={
        "type": "object",
        "properties": {"timeout_s": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_S}},
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "timed_out": {"type": "boolean"},
            "message_id": {"type": "string"},
            "markdown": {"type": "string"},
            "timestamp": {"type": "string"},
        },
        "required": ["timed_out"],
    },
    # It reads the chat (each message is returned once, so a second call answers another).
    annotations=types.ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    ),
)
CONVERSATION_TOOLS: Final = (_SAY_TOOL, _NEXT_TOOL)


@dataclass(frozen=True)
class Inventory:
    """One revision of the tools the Agent may call, by the one id each is called by (its
    method, or `<scope>/<method>` for a tool named the seeds' way)."""

    revision: str
    tools: dict[str, dict[str, Any]]

    @classmethod
    def of(cls, payload: dict[str, Any]) -> Inventory:
        tools = payload.get("tools")
        by_id = {
            str(t.get("id") or t["method"]): t
            for t in (tools if isinstance(tools, list) else [])
            if isinstance(t, dict) and isinstance(t.get("method"), str)
        }
        return cls(str(payload.get("revision", "")), by_id)

    def unchanged(self, other: Inventory, method: str) -> bool:
        """Whether `method` is the same tool in both revisions (and in both at all)."""
        mine, theirs = self.tools.get(method), other.tools.get(method)
        return mine is not None and mine == theirs


def mcp_tools(inventory: Inventory | None) -> list[types.Tool]:
    """The MCP tools of `inventory`, in a deterministic order (by name), then the conversation's
    own two. Each name is the method; the schemas and description are the manifest's, the
    title and annotations `tool_title`'s and `tool_annotations`'."""
    tools = [
        types.Tool(
            name=method,
            title=tool_title(method, descriptor),
            description=descriptor.get("description") or None,
            input_schema=descriptor.get("input_schema") or {"type": "object"},
            output_schema=descriptor.get("output_schema") or None,
            annotations=tool_annotations(method, descriptor),
            execution=AS_TASK,
        )
        for method, descriptor in sorted((inventory.tools if inventory else {}).items())
        if method not in (SAY, NEXT_MESSAGE)
    ]
    return [*tools, *CONVERSATION_TOOLS]


def tool_title(method: str, descriptor: dict[str, Any]) -> str:
    """A tool's display name: the descriptor's `title` when it has one, else its method said
    in words (`task-dashboard.open` is "Task dashboard: open")."""
    title = descriptor.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    scope, _, name = method.partition(".")
    words = name.replace("_", " ").replace("-", " ").replace(".", " ")
    return f"{scope.replace('-', ' ').capitalize()}: {words}"


_HINTS: Final = {  # the descriptor's key → the MCP annotation's field
    "read_only": "read_only_hint",
    "destructive": "destructive_hint",
    "idempotent": "idempotent_hint",
    "open_world": "open_world_hint",
}


def tool_annotations(method: str, descriptor: dict[str, Any]) -> types.ToolAnnotations:
    """A tool's MCP hints, from what its descriptor says.

    A descriptor's own `annotations` (`read_only`, `destructive`, `idempotent`, `open_world`,
    booleans) win. Otherwise its tool descriptor says (seed 004 §7.1): a `query` call model
    changes nothing (read-only, not destructive); `idempotent` is its own; a `high` risk is
    destructive. A standard interaction (`interaction.*`, the runtime's own question card) only
    asks the user, so it changes nothing (read-only, not idempotent: each call asks again). Any
    other app tool may change its app's state in ways the descriptor does not describe, so it
    gets MCP's own cautious default, destructive, unless its risk is `low` or `medium`. None
    reaches outside the runtime by itself (not open-world): an app's network is a capability
    the user grants."""
    interaction = method.startswith("interaction.") and descriptor.get("handling") == "interactive"
    read_only = interaction or descriptor.get("call_model") == "query"
    risk = descriptor.get("risk")
    hints: dict[str, bool] = {
        "read_only_hint": read_only,
        "destructive_hint": not read_only and risk not in ("low", "medium"),
        "idempotent_hint": descriptor.get("idempotent") is True,
        "open_world_hint": False,
    }
    declared = descriptor.get("annotations")
    for key, value in (declared if isinstance(declared, dict) else {}).items():
        if key in _HINTS and isinstance(value, bool):
            hints[_HINTS[key]] = value
    return types.ToolAnnotations(**hints)


def whole_text(document: Any) -> str:
    """A result as the text content: all of it, as JSON (the wire already bounds a result)."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _short(document: Any) -> str:
    text = whole_text(document)
    return text if len(text) <= MAX_LINE_CHARS else text[: MAX_LINE_CHARS - 1] + "…"


def error_result(
    code: str, message: str | None = None, *, pointer: str | None = None
) -> types.CallToolResult:
    """A refusal or failure: `isError`, with no `structuredContent` (it would have to conform to
    the tool's `outputSchema`, which describes results), and the stable code in the text, with
    the JSON pointer of the offending field for `tool_input_invalid`, so a model can mend it:
    `error: CODE at POINTER`, then the runtime's message on a line of its own."""
    where = f" at {pointer or '(the whole input)'}" if pointer is not None else ""
    text = f"{ERROR_PREFIX}{code}{where}" + (f"\n{message}" if message else "")
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def refusal_code(result: Mapping[str, Any]) -> str | None:
    """The stable code of a `tools/call` result as a client gets it (JSON), or None when it is
    no refusal (or a malformed one): the reading of `error_result`'s text."""
    content = result.get("content")
    if result.get("isError") is not True or not isinstance(content, list) or not content:
        return None
    first = content[0]
    text = first.get("text") if isinstance(first, dict) else None
    if not isinstance(text, str) or not text.startswith(ERROR_PREFIX):
        return None
    code = text[len(ERROR_PREFIX) :].split(maxsplit=1)
    return code[0] if code else None


def input_violation(tool: types.Tool, arguments: dict[str, Any]) -> types.CallToolResult | None:
    """The refusal of `arguments` that break `tool`'s own advertised input schema (a missing,
    unknown or malformed property, at its pointer), or None when they keep to it."""
    violations = validate(tool.input_schema, arguments)
    return error_result("tool_input_invalid", pointer=violations[0]) if violations else None


def inline_png(result: dict[str, Any]) -> tuple[str, int] | None:
    """The result's inline PNG (its base64 and its size in bytes), or None when it holds none:
    no `png_base64` string, not base64, not a PNG, or too long."""
    data = result.get(INLINE_PNG_KEY)
    if not isinstance(data, str) or len(data) > MAX_INLINE_PNG_CHARS:
        return None
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return (data, len(raw)) if raw.startswith(PNG_SIGNATURE) else None


def result_of(final: dict[str, Any]) -> types.CallToolResult:
    """The MCP result of a call's one terminal message (`tool.result` or `tool.error`); a PNG
    inline is image content too."""
    payload = final.get("payload") or {}
    if final.get("type") == wire.RESULT:
        result = payload.get("result")
        result = result if isinstance(result, dict) else {}
        png = inline_png(result)
        if png is None:
            return types.CallToolResult(
                content=[types.TextContent(text=whole_text(result))], structured_content=result
            )
        named = {**result, INLINE_PNG_KEY: f"(image/png, {png[1]} bytes: the image content)"}
        return types.CallToolResult(
            content=[
                types.TextContent(text=whole_text(named)),
                types.ImageContent(data=png[0], mime_type="image/png"),
            ],
            structured_content=result,
        )
    message, pointer = payload.get("message"), payload.get("pointer")
    return error_result(
        str(payload.get("code", "unknown")),
        message if message else None,
        pointer=pointer if isinstance(pointer, str) else None,
    )


def progress_line(message: dict[str, Any]) -> str:
    """What one receipt or progress message says, for an MCP progress notification."""
    payload = message.get("payload") or {}
    if message.get("type") == wire.RECEIPT:
        code = payload.get("code")
        return f"{payload.get('status')}" + (f" ({code})" if code else "")
    progress = payload.get("progress")
    if isinstance(progress, dict) and isinstance(progress.get("message"), str):
        return str(progress["message"])
    return _short(progress)


class CallSlot:
    """What the runtime said of one call, not yet taken: its steps (bounded; the oldest go
    first when it overflows) and its one terminal message."""

    def __init__(self) -> None:
        self.steps: deque[dict[str, Any]] = deque(maxlen=CALL_SLOT_SIZE)
        self.final: dict[str, Any] | None = None
        self._wake = trio.Event()

    def put(self, message: dict[str, Any]) -> None:
        if message.get("type") in FINALS:
            self.final = message
        else:
            self.steps.append(message)
        self._wake.set()

    async def next(self) -> dict[str, Any]:
        """The next step, else the terminal message (waits for one, unbounded)."""
        while not self.steps and self.final is None:
            await self._wake.wait()
            self._wake = trio.Event()
        if self.steps:
            return self.steps.popleft()
        assert self.final is not None
        return self.final


class CallTable:
    """One slot per call in flight, by `call_id`."""

    def __init__(self) -> None:
        self._slots: dict[str, CallSlot] = {}

    def __len__(self) -> int:
        return len(self._slots)

    @contextmanager
    def open(self, call_id: str) -> Iterator[CallSlot]:
        """The slot of `call_id`, open for the `with` block only. Raises `OverflowError` when
        too many calls are in flight, `KeyError` when that call has a slot already."""
        if call_id in self._slots:
            raise KeyError(call_id)
        if len(self._slots) >= MAX_CALLS:
            raise OverflowError("too many calls in flight")
        slot = self._slots[call_id] = CallSlot()
        try:
            yield slot
        finally:
            del self._slots[call_id]

    def deliver(self, message: dict[str, Any]) -> bool:
        """Hand a receipt, progress, result or error to its call; False when no call of ours
        waits for it (an old one, another Agent program's) or it has its terminal message
        already (a replay: the first one is the only one)."""
        payload = message.get("payload")
        call_id = payload.get("call_id") if isinstance(payload, dict) else None
        slot = self._slots.get(call_id) if isinstance(call_id, str) else None
        if slot is None or slot.final is not None:
            return False
        slot.put(message)
        return True


@dataclass
class Conversation:
    """The conversation's newest messages (the user's, and what the bridge said), and the
    user's not yet returned by `conversation.next_message`."""

    messages: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=MAX_MESSAGES))
    unread: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=MAX_MESSAGES))
    changed: trio.Event = field(default_factory=trio.Event)

    def add(self, entry: dict[str, Any], *, unread: bool) -> None:
        self.messages.append(entry)
        if unread:
            self.unread.append(entry)
        self.changed.set()
        self.changed = trio.Event()

    def document(self) -> str:
        return json.dumps({"messages": list(self.messages)}, ensure_ascii=False)


def text_entry(message: dict[str, Any]) -> dict[str, Any] | None:
    """The conversation entry of a `lineup.v1.text`, or None for anything else."""
    payload = message.get("payload")
    if message.get("type") != wire.TEXT or not isinstance(payload, dict):
        return None
    sender = message.get("sender")
    sender = sender if isinstance(sender, dict) else {}
    return {
        "message_id": str(message.get("id", "")),
        "from": str(sender.get("kind", "user")),
        "markdown": str(payload.get("markdown", "")),
        "timestamp": str(message.get("timestamp", "")),
    }


@dataclass
class Bridge:
    """The shared state of one `lineup mcp`: the inventory, the calls, the conversation."""

    conversation_id: str
    inventory: Inventory | None = None
    calls: CallTable = field(default_factory=CallTable)
    conversation: Conversation = field(default_factory=Conversation)
    caught_up: bool = False  # the first sync has read all that was there before us
    _new_inventory: trio.Event = field(default_factory=trio.Event)

    def take(self, message: dict[str, Any]) -> str | None:
        """Take one message the runtime sent the Agent; returns `"inventory"` when it was a new
        revision, `"text"` for a new message of the conversation, None otherwise."""
        if message.get("conversation_id") != self.conversation_id:
            return None
        kind = message.get("type")
        payload = message.get("payload")
        if kind == wire.INVENTORY and isinstance(payload, dict):
            inventory = Inventory.of(payload)
            if self.inventory is not None and inventory.revision == self.inventory.revision:
                return None
            self.inventory = inventory
            self._new_inventory.set()
            self._new_inventory = trio.Event()
            return "inventory"
        if kind in CALL_KINDS:
            self.calls.deliver(message)
            return None
        entry = text_entry(message)
        if entry is not None:
            self.conversation.add(entry, unread=self.caught_up)
            return "text"
        return None

    async def inventory_other_than(self, revision: str | None) -> Inventory:
        """The current inventory once its revision is not `revision` (waits, unbounded: the
        caller bounds it)."""
        while self.inventory is None or self.inventory.revision == revision:
            await self._new_inventory.wait()
        return self.inventory
