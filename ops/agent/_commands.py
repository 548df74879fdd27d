"""The demo Agent's chat commands, without I/O: `/tools`, `/call TOOL {json}` and `/play GAME`.

Theory of operation: `parse(text)` reads one user message into a command (or None when it is
no command: the tour echoes it). `Commands.take(message)` reads every message the client sends
the Agent before the tour does: it keeps each conversation's inventory (and returns None, so the
tour sees it too), answers a command (returns its moves), and follows the calls it made: their
receipts, progress and one terminal message become one short chat line each, the result a
fenced JSON block (bounded). It returns None for everything that is not its own, which the
tour then takes. `/play` is `_play.Game`'s.

Every key derives from the message answered, as everywhere in the demo Agent: a `/call`'s
call id (also its idempotency key) is `demo-call-<digest of the user's message id>`, a
receipt's line `receipt:<call_id>:<status>`, a progress line `progress:<message id>`, the
ending `result:<call_id>`. So a restarted Agent, which syncs from the start again, posts
nothing twice and calls nothing twice.

All text from the user, an app or the runtime is escaped before it goes into Markdown: inline
with `markdown_text`, in a code span only when it holds no backtick, and a JSON block with
every backtick written `\\u0060` (the same JSON, which no fence can be closed by).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

from lineup import wire

from ._play import Game, Step, Tick, digest
from ._questions import code_span, markdown_text
from ._tour import Ask, Say
from ._words import explained

__all__ = [
    "CALL_WORD",
    "MAX_CALL_CHARS",
    "MAX_RESULT_CHARS",
    "PLAY_WORD",
    "TOOLS_WORD",
    "Call",
    "Commands",
    "ListTools",
    "Play",
    "Unclear",
    "code_span",
    "cut_at_word",
    "error_line",
    "inventory_markdown",
    "json_block",
    "parse",
    "progress_line",
    "receipt_line",
    "result_markdown",
]

TOOLS_WORD: Final = "/tools"
CALL_WORD: Final = "/call"
PLAY_WORD: Final = "/play"
USAGE: Final = "`/tools`, `/call TOOL {json}` or `/play draw-and-guess`"
MAX_CALL_CHARS: Final = 8_000  # of a `/call`'s JSON
MAX_RESULT_CHARS: Final = 3_000  # of a result's JSON block
MAX_STRING_CHARS: Final = 120  # of one string in a result (a PNG's base64 is abbreviated)
MAX_LINE_CHARS: Final = 200  # of a progress line's JSON
MAX_DESCRIPTION_CHARS: Final = 120
MAX_FIELDS: Final = 8  # of a tool's input fields listed
MAX_TOOLS_LISTED: Final = 60
MAX_PROGRESS_LINES: Final = 20  # per call; the rest is not said
MAX_FOLLOWED: Final = 256  # calls followed at once; the oldest is forgotten


@dataclass(frozen=True)
class ListTools:
    pass


@dataclass(frozen=True)
class Call:
    tool: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Play:
    game: str


@dataclass(frozen=True)
class Unclear:
    """A command the Agent cannot make: `line` says why, in one line."""

    line: str


Command = ListTools | Call | Play | Unclear


# ------------------------------------------------------------------------------- parsing


def _no_constant(name: str) -> Any:
    raise ValueError(name)  # NaN and Infinity are not JSON


def parse(text: str) -> Command | None:
    """The command in one user message, or None when it is none (it does not start with `/`
    and a letter)."""
    stripped = text.strip()
    if len(stripped) < 2 or stripped[0] != "/" or not stripped[1].isalpha():
        return None
    word, _, rest = stripped.partition(" ")
    word, rest = word.lower(), rest.strip()
    if word == TOOLS_WORD:
        return ListTools()
    if word == PLAY_WORD:
        return Play(rest.lower())
    if word != CALL_WORD:
        return Unclear(f"I know no command {code_span(word)}: try {USAGE}.")
    tool, _, raw = rest.partition(" ")
    if not tool:
        return Unclear("Which tool? Write `/call TOOL {json}`; `/tools` lists them.")
    raw = raw.strip()
    if raw.startswith("`") and raw.endswith("`") and len(raw) > 1:
        raw = raw.strip("`").strip()  # the JSON may come as inline code
    if not raw:
        return Call(tool, {})
    if len(raw) > MAX_CALL_CHARS:
        return Unclear(f"That input is too long: at most {MAX_CALL_CHARS} characters.")
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except ValueError:
        return Unclear('That input is not JSON: write an object such as `{"key": "value"}`.')
    if not isinstance(value, dict):
        return Unclear('The input must be a JSON object, such as `{"key": "value"}`.')
    return Call(tool, value)


# ---------------------------------------------------------------------------- formatting


def cut_at_word(text: str, limit: int = MAX_DESCRIPTION_CHARS) -> str:
    """`text` whole when it fits in `limit` characters, else cut after its last whole word
    that fits, with an ellipsis (`…`); a first word longer than the limit is cut inside."""
    if len(text) <= limit:
        return text
    kept = text[: limit - 1]
    space = kept.rfind(" ")
    if space > 0 and not text[limit - 1].isspace():
        kept = kept[:space]
    return kept.rstrip(" ,;:.-–—") + "…"


def _field(name: str, schema: Any, required: bool) -> str:
    kind = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(kind, list):
        kind = "|".join(str(k) for k in kind)
    if kind is None and isinstance(schema, dict) and "enum" in schema:
        kind = "one of " + ", ".join(json.dumps(v) for v in schema["enum"][:5])
    shown = f"{code_span(name)} {markdown_text(str(kind))}" if kind else code_span(name)
    return shown + (" (required)" if required else "")


def _fields(schema: Any) -> str:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not properties:
        return "none"
    required = set(schema.get("required") or [])
    names = sorted(properties, key=lambda n: (n not in required, n))
    shown = [_field(str(n), properties[n], n in required) for n in names[:MAX_FIELDS]]
    more = len(names) - MAX_FIELDS
    return ", ".join(shown) + (f", and {more} more" if more > 0 else "")


def inventory_markdown(revision: str, tools: dict[str, dict[str, Any]]) -> str:
    """`/tools`' answer: each tool's name, handling, one-line description and input fields."""
    if not tools:
        return f"No tools are offered (inventory revision {code_span(revision)})."
    lines = [f"**{len(tools)} tools** (inventory revision {code_span(revision)}):", ""]
    for method in sorted(tools)[:MAX_TOOLS_LISTED]:
        tool = tools[method]
        description = cut_at_word(" ".join(str(tool.get("description") or "").split()))
        handling = markdown_text(str(tool.get("handling") or "?"))
        line = f"- {code_span(method)} ({handling})"
        line += f": {markdown_text(description)}" if description else ""
        lines.append(f"{line} — input: {_fields(tool.get('input_schema'))}")
    if len(tools) > MAX_TOOLS_LISTED:
        lines.append(f"- and {len(tools) - MAX_TOOLS_LISTED} more")
    lines += ["", 'Call one with `/call TOOL {"field": "value"}`.']
    return "\n".join(lines)


def _abbreviated(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_STRING_CHARS:
        return f"{value[:40]}… ({len(value)} characters)"
    if isinstance(value, dict):
        return {k: _abbreviated(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_abbreviated(v) for v in value]
    return value


def json_block(document: Any) -> str:
    """`document` as a fenced JSON block: long strings abbreviated, the whole cut at
    `MAX_RESULT_CHARS`, backticks escaped (still the same JSON)."""
    text = json.dumps(_abbreviated(document), indent=2, ensure_ascii=False, sort_keys=True)
    text = text.replace("`", "\\u0060")
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n… ({len(text) - MAX_RESULT_CHARS} more characters)"
    return f"```json\n{text}\n```"


# A receipt's status as the user reads it (the wire's `ReceiptStatus`, never shown raw).
RECEIPT_WORDS: Final[dict[str, str]] = {
    "accepted": "accepted",
    "starting": "starting its app",
    "activation_ready": "its app is ready",
    "activation_failed": "its app did not start",
    "activation_cancelled": "its app was closed before it was ready",
}


def receipt_line(tool: str, status: str, code: str | None = None) -> str:
    """A receipt as words: its status, and when it carries a code, what the code means (the
    code itself only in the details line)."""
    if status == "rejected":
        return explained(f"{code_span(tool)} was **refused**.", code or "rejected")
    words = RECEIPT_WORDS.get(status) or markdown_text(status)
    said = f"{code_span(tool)}: **{words}**."
    return explained(said, code) if code else said


def progress_line(tool: str, progress: Any) -> str:
    message = progress.get("message") if isinstance(progress, dict) else None
    if isinstance(message, str):
        return f"{code_span(tool)} progress: {markdown_text(message[:MAX_LINE_CHARS])}"
    text = json.dumps(progress, ensure_ascii=False, sort_keys=True)
    if len(text) > MAX_LINE_CHARS:
        text = text[: MAX_LINE_CHARS - 1] + "…"
    return f"{code_span(tool)} progress: {code_span(text)}"


def result_markdown(tool: str, result: Any) -> str:
    return f"{code_span(tool)} returned:\n\n{json_block(result)}"


def error_line(tool: str, code: str, pointer: str | None = None, *, refused: bool = True) -> str:
    """A refusal (before any receipt) or a failure (after one) as a sentence; the code, and
    the JSON pointer of the offending field when it has one, in the details line."""
    verb = "was **refused**" if refused else "**failed**"
    return explained(f"{code_span(tool)} {verb}.", code, pointer)


# ------------------------------------------------------------------------------ the state


@dataclass
class _Followed:
    conversation_id: str
    tool: str
    progress_lines: int = 0
    receipted: bool = False  # a receipt came: an error now is a failure, not a refusal


@dataclass
class Commands:
    """What the chat commands remember: each conversation's inventory, the calls followed,
    and the rounds played (`game`). Not thread-safe; pure."""

    revisions: dict[str, str] = field(default_factory=dict)
    tools: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    followed: dict[str, _Followed] = field(default_factory=dict)  # call_id -> its call
    game: Game = field(default_factory=Game)

    def take(self, message: dict[str, Any]) -> list[Step] | None:
        """The moves answering `message`, or None when it is not the commands' (the tour
        takes it)."""
        kind, payload = message.get("type"), message.get("payload")
        conversation_id = message.get("conversation_id")
        if not isinstance(payload, dict) or not isinstance(conversation_id, str):
            return None
        if kind == wire.INVENTORY:
            self._inventory(conversation_id, payload)
            return None
        if kind == wire.TEXT:
            return self._text(conversation_id, message, payload)
        call_id = payload.get("call_id")
        if kind not in (wire.RECEIPT, wire.PROGRESS, wire.RESULT, wire.TOOL_ERROR):
            return None
        if not isinstance(call_id, str):
            return None
        if call_id in self.followed:
            return self._step(call_id, str(kind), message, payload)
        return self.game.step(call_id, str(kind), payload, self.revision(conversation_id))

    def tick(self, tick: Tick) -> list[Step]:
        """The moves of a `Tick` that fired (its delay is the caller's)."""
        return self.game.tick(tick, self.revision(tick.conversation_id))

    def revision(self, conversation_id: str) -> str:
        return self.revisions.get(conversation_id, "")

    def _inventory(self, conversation_id: str, payload: dict[str, Any]) -> None:
        revision, tools = payload.get("revision"), payload.get("tools")
        if not isinstance(revision, str | int) or not isinstance(tools, list):
            return
        self.revisions[conversation_id] = str(revision)
        self.tools[conversation_id] = {
            str(t["method"]): t for t in tools if isinstance(t, dict) and "method" in t
        }

    def _text(
        self, conversation_id: str, message: dict[str, Any], payload: dict[str, Any]
    ) -> list[Step] | None:
        sender, markdown = message.get("sender"), payload.get("markdown")
        message_id = message.get("id")
        if not isinstance(sender, dict) or sender.get("kind") != "user":
            return None
        if not isinstance(markdown, str) or not isinstance(message_id, str):
            return None
        command = parse(markdown)
        if command is None:
            return None
        key = f"reply:{message_id}"
        if isinstance(command, Unclear):
            return [Say(conversation_id, command.line, key)]
        if conversation_id not in self.revisions:
            return [Say(conversation_id, "No inventory has arrived yet: try again soon.", key)]
        revision, tools = self.revisions[conversation_id], self.tools[conversation_id]
        if isinstance(command, ListTools):
            return [Say(conversation_id, inventory_markdown(revision, tools), key)]
        if isinstance(command, Play):
            return self.game.start(conversation_id, message_id, command.game, tools, revision)
        call_id = f"demo-call-{digest(message_id)}"
        while len(self.followed) >= MAX_FOLLOWED:
            self.followed.pop(next(iter(self.followed)))
        self.followed[call_id] = _Followed(conversation_id, command.tool)
        return [Ask(conversation_id, command.tool, command.input, call_id, revision)]

    def _step(
        self, call_id: str, kind: str, message: dict[str, Any], payload: dict[str, Any]
    ) -> list[Step]:
        call = self.followed[call_id]
        conv, tool = call.conversation_id, call.tool
        if kind == wire.RECEIPT:
            status, code = str(payload.get("status", "")), payload.get("code")
            call.receipted = True
            line = receipt_line(tool, status, code if isinstance(code, str) else None)
            return [Say(conv, line, f"receipt:{call_id}:{status}")]
        if kind == wire.PROGRESS:
            call.progress_lines += 1
            if call.progress_lines > MAX_PROGRESS_LINES:
                return []
            key = f"progress:{message.get('id') or digest(call_id, str(call.progress_lines))}"
            return [Say(conv, progress_line(tool, payload.get("progress")), key)]
        del self.followed[call_id]
        if kind == wire.RESULT:
            return [Say(conv, result_markdown(tool, payload.get("result")), f"result:{call_id}")]
        pointer = payload.get("pointer")
        line = error_line(
            tool,
            str(payload.get("code", "")),
            pointer if isinstance(pointer, str) else None,
            refused=not call.receipted,
        )
        return [Say(conv, line, f"result:{call_id}")]
