from __future__ import annotations

import json
import re
from typing import Any

from lineup import wire
from lineup.ops.agent._commands import (
    MAX_RESULT_CHARS,
    Call,
    Commands,
    ListTools,
    Play,
    Unclear,
    cut_at_word,
    error_line,
    inventory_markdown,
    json_block,
    parse,
    progress_line,
    receipt_line,
)
from lineup.ops.agent._play import Step
from lineup.ops.agent._tour import Ask, Say

CONV = "conv-a"
OPEN: dict[str, Any] = {  # tool descriptors as the inventory carries them (JSON)
    "method": "task-dashboard.open",
    "handling": "launch",
    "description": "Show a task to the user\nuntil they finish or close it.",
    "input_schema": {
        "type": "object",
        "properties": {"title": {"type": "string"}, "task_id": {"type": "string"}},
        "required": ["title", "task_id"],
    },
}
NOTE: dict[str, Any] = {
    "method": "notes.add",
    "handling": "direct",
    "description": "",
    "input_schema": {"type": "object", "properties": {}},
}


def _message(kind: str, payload: dict[str, Any], **header: Any) -> dict[str, Any]:
    return {"type": kind, "conversation_id": CONV, "payload": payload, **header}


def _user(message_id: str, markdown: str) -> dict[str, Any]:
    return _message(wire.TEXT, {"markdown": markdown}, id=message_id, sender={"kind": "user"})


def _commands(tools: list[dict[str, Any]] = [OPEN, NOTE]) -> Commands:  # noqa: B006 - read only
    commands = Commands()
    inventory = _message(wire.INVENTORY, {"revision": "7", "tools": tools})
    assert commands.take(inventory) is None  # the tour takes it too
    return commands


def _says(moves: list[Step] | None) -> list[str]:
    assert moves is not None
    return [m.markdown for m in moves if isinstance(m, Say)]


def _call(commands: Commands, text: str = '/call notes.add {"text": "hi"}') -> Ask:
    (ask,) = commands.take(_user("u-1", text)) or []
    assert isinstance(ask, Ask)
    return ask


# -------------------------------------------------------------------------------- parsing


def test_the_commands_parse_and_anything_else_is_no_command() -> None:
    assert parse("/tools") == ListTools()
    assert parse("  /TOOLS  ") == ListTools()
    assert parse('/call a.b {"x": [1, 2]}') == Call("a.b", {"x": [1, 2]})
    assert parse("/call a.b") == Call("a.b", {})
    assert parse('/call a.b `{"x": 1}`') == Call("a.b", {"x": 1})  # the JSON as inline code
    assert parse("/play draw-and-guess") == Play("draw-and-guess")
    for text in ("hello", "menu", "/", "/ tools", "1/2", "", "//tools"):
        assert parse(text) is None


def test_bad_input_to_call_gets_one_line_and_no_call() -> None:
    for text in ("/call", "/call a.b {nope", "/call a.b [1]", '/call a.b "x"', "/call a.b NaN"):
        answer = parse(text)
        assert isinstance(answer, Unclear), text
        assert "\n" not in answer.line
    unknown = parse("/cal a.b")
    assert isinstance(unknown, Unclear) and "/tools" in unknown.line
    assert isinstance(parse("/call a.b " + json.dumps({"x": "y" * 9_000})), Unclear)


# ----------------------------------------------------------------------------- formatting


def test_the_inventory_lists_each_tool_its_handling_description_and_fields() -> None:
    text = inventory_markdown("7", {t["method"]: t for t in (OPEN, NOTE)})
    lines = text.splitlines()
    assert lines[0] == "**2 tools** (inventory revision `7`):"
    assert lines[2] == "- `notes.add` (direct) — input: none"
    assert lines[3] == (
        "- `task-dashboard.open` (launch): Show a task to the user until they finish or close "
        "it\\. — input: `task_id` string (required), `title` string (required)"
    )
    assert inventory_markdown("3", {}) == "No tools are offered (inventory revision `3`)."


def test_text_from_an_app_is_escaped_in_the_inventory() -> None:
    hostile = {
        "method": "x.y",
        "handling": "direct",
        "description": "[click](javascript:alert(1)) **bold** " + "long " * 50,
        "input_schema": {"properties": {"a`b": {"type": "string"}}},
    }
    (line,) = [ln for ln in inventory_markdown("1", {"x.y": hostile}).splitlines() if "x.y" in ln]
    assert "\\[click\\]\\(javascript:alert\\(1\\)\\)" in line
    assert "\\*\\*bold\\*\\*" in line
    assert "a\\`b" in line  # a backtick is no code span
    assert "…" in line
    assert re.search(r"long…", line)  # cut after a whole word


def test_a_description_is_cut_after_a_whole_word_with_an_ellipsis_or_not_at_all() -> None:
    assert cut_at_word("short and whole", 20) == "short and whole"
    assert cut_at_word("exactly twenty chars", 20) == "exactly twenty chars"
    assert cut_at_word("Show a task to the user until they finish", 20) == "Show a task to the…"
    assert cut_at_word("Show a task, to the user", 14) == "Show a task…"
    assert cut_at_word("Supercalifragilistic", 10) == "Supercali…"  # one word: cut inside
    for limit in range(2, 40):
        text = "Draw a picture for the Agent to guess, then submit it"
        cut = cut_at_word(text, limit)
        assert len(cut) <= limit
        assert cut == text or (cut.endswith("…") and text.startswith(cut[:-1]))
        words = cut.removesuffix("…").split()
        assert all(w in text.split() for w in words[:-1])


def test_a_result_is_a_fenced_json_block_with_long_strings_abbreviated_and_bounded() -> None:
    block = json_block({"png_base64": "A" * 10_000, "note": "a ``` fence", "n": 1})
    assert block.startswith("```json\n") and block.endswith("\n```")
    body = block.removeprefix("```json\n").removesuffix("\n```")
    parsed = json.loads(body)
    assert parsed["note"] == "a ``` fence"  # the same JSON, no backtick in the block
    assert "`" not in body
    assert parsed["png_base64"].endswith("(10000 characters)")
    big = json_block({f"k{i}": "v" * 100 for i in range(200)})
    assert len(big) < MAX_RESULT_CHARS + 100
    assert re.search(r"… \(\d+ more characters\)\n```$", big)


def test_receipts_progress_and_errors_say_a_sentence_and_keep_the_code_for_details() -> None:
    assert receipt_line("a.b", "accepted") == "`a.b`: **accepted**."
    assert receipt_line("a.b", "activation_failed", "app_crashed") == (
        "`a.b`: **its app did not start**.\n\n*Details: `app_crashed`*"
    )
    assert receipt_line("a.b", "rejected", "tool_not_visible") == (
        "`a.b` was **refused**. That app cannot run right now.\n\n*Details: `tool_not_visible`*"
    )
    assert progress_line("a.b", {"message": "half *way*"}) == "`a.b` progress: half \\*way\\*"
    assert progress_line("a.b", {"done": 1}) == '`a.b` progress: `{"done": 1}`'
    assert error_line("a.b", "tool_input_invalid", "/title") == (
        "`a.b` was **refused**. The input does not fit what the tool expects.\n\n"
        "*Details: `tool_input_invalid`, at `/title`*"
    )
    assert error_line("a.b", "tool_input_invalid", "") == (
        "`a.b` was **refused**. The input does not fit what the tool expects.\n\n"
        "*Details: `tool_input_invalid`, at the whole input*"
    )
    assert error_line("a.b", "app_closed", refused=False) == (
        "`a.b` **failed**. The app was closed.\n\n*Details: `app_closed`*"
    )
    for line in (receipt_line("a.b", "x"), progress_line("a.b", {"m": "x\ny"})):
        assert "\n" not in line


# ---------------------------------------------------------------------------------- state


def test_tools_answers_the_current_inventory_under_the_messages_key() -> None:
    commands = _commands()
    (say,) = commands.take(_user("u-1", "/tools")) or []
    assert isinstance(say, Say)
    assert say.key == "reply:u-1"
    assert "`task-dashboard.open` (launch)" in say.markdown
    before = Commands()
    assert _says(before.take(_user("u-2", "/tools"))) == [
        "No inventory has arrived yet: try again soon."
    ]


def test_a_call_is_made_on_the_current_revision_under_a_key_of_the_message() -> None:
    commands = _commands()
    ask = _call(commands)
    assert (ask.tool, ask.input, ask.revision) == ("notes.add", {"text": "hi"}, "7")
    assert ask.call_id.startswith("demo-call-")
    assert _call(_commands()) == ask  # the same message: the same call, the same key


def test_a_calls_receipts_progress_and_result_are_said_then_it_is_forgotten() -> None:
    commands = _commands()
    call_id = _call(commands).call_id
    accepted = commands.take(_message(wire.RECEIPT, {"call_id": call_id, "status": "accepted"}))
    assert accepted == [Say(CONV, "`notes.add`: **accepted**.", f"receipt:{call_id}:accepted")]
    progress = _message(wire.PROGRESS, {"call_id": call_id, "progress": {"n": 1}}, id="p-1")
    (step,) = commands.take(progress) or []
    assert isinstance(step, Say) and step.key == "progress:p-1"
    result = _message(wire.RESULT, {"call_id": call_id, "result": {"id": "n-1"}})
    (said,) = commands.take(result) or []
    assert isinstance(said, Say) and said.key == f"result:{call_id}"
    assert said.markdown == '`notes.add` returned:\n\n```json\n{\n  "id": "n-1"\n}\n```'
    assert commands.take(result) is None  # a replay after the end is no longer the commands'


def test_a_refusal_says_a_sentence_with_its_code_and_pointer_in_the_details() -> None:
    commands = _commands()
    call_id = _call(commands).call_id
    refused = {"call_id": call_id, "code": "tool_input_invalid", "pointer": "/text"}
    assert _says(commands.take(_message(wire.TOOL_ERROR, refused))) == [
        "`notes.add` was **refused**. The input does not fit what the tool expects.\n\n"
        "*Details: `tool_input_invalid`, at `/text`*"
    ]
    other = _call(_commands(), "/call nowhere.x")
    commands = _commands()
    _call(commands, "/call nowhere.x")
    old_style = {"call_id": other.call_id, "code": "tool_not_advertised"}
    assert _says(commands.take(_message(wire.TOOL_ERROR, old_style))) == [
        "`nowhere.x` was **refused**. No app on this LineUp offers that tool.\n\n"
        "*Details: `tool_not_advertised`*"
    ]


def test_an_error_after_a_receipt_is_a_failure() -> None:
    commands = _commands()
    call_id = _call(commands).call_id
    commands.take(_message(wire.RECEIPT, {"call_id": call_id, "status": "accepted"}))
    failed = _message(wire.TOOL_ERROR, {"call_id": call_id, "code": "app_closed"})
    assert _says(commands.take(failed)) == [
        "`notes.add` **failed**. The app was closed.\n\n*Details: `app_closed`*"
    ]


def test_bad_input_is_answered_and_nothing_is_called() -> None:
    commands = _commands()
    moves = commands.take(_user("u-1", "/call notes.add {oops"))
    assert moves is not None and not [m for m in moves if isinstance(m, Ask)]
    (say,) = moves
    assert isinstance(say, Say) and say.key == "reply:u-1"
    assert commands.followed == {}


def test_what_is_not_the_commands_goes_to_the_tour() -> None:
    commands = _commands()
    assert commands.take(_user("u-1", "hello")) is None
    agent_text = _message(wire.TEXT, {"markdown": "/tools"}, id="a-1", sender={"kind": "agent"})
    assert commands.take(agent_text) is None
    foreign = _message(wire.RESULT, {"call_id": "demo-menu-1", "result": {}})
    assert commands.take(foreign) is None
    assert commands.take({"type": wire.TEXT}) is None
