"""What a client gets in `tools/list` and `tools/call`, without I/O: every tool has a title and
its hints, a result's text is all of it, and no refusal carries structured content (which a
client would check against the tool's `outputSchema`, and throw)."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest

from lineup import wire
from lineup.ops.mcp._bridge import (
    MAX_LINE_CHARS,
    NEXT_MESSAGE,
    SAY,
    Inventory,
    error_result,
    mcp_tools,
    refusal_code,
    result_of,
)

from .test_bridge import TOOL, _final, _inventory

CONFIRM = {**TOOL, "method": "interaction.confirm", "handling": "interactive"}


def _tools(*descriptors: dict[str, Any]) -> dict[str, types.Tool]:
    inventory = Inventory.of(_inventory("1", *descriptors)["payload"])
    return {t.name: t for t in mcp_tools(inventory)}


def test_every_tool_has_a_title_and_the_three_hints() -> None:
    tools = _tools(TOOL, CONFIRM, {**TOOL, "method": "task-dashboard.open"})
    assert tools["task-dashboard.open"].title == "Task dashboard: open"
    assert tools["interaction.confirm"].title == "Interaction: confirm"
    for tool in tools.values():
        assert tool.title
        hints = tool.annotations
        assert hints is not None
        assert None not in (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint)


def test_the_hints_say_what_the_descriptor_says() -> None:
    tools = _tools(TOOL, CONFIRM)
    asks = tools["interaction.confirm"].annotations
    assert asks is not None and (asks.read_only_hint, asks.destructive_hint) == (True, False)
    acts = tools["b.tool"].annotations  # an app's tool: MCP's cautious defaults, explicit
    assert acts is not None and (acts.read_only_hint, acts.destructive_hint) == (False, True)
    said = tools[SAY].annotations
    assert said is not None and (said.read_only_hint, said.destructive_hint) == (False, False)
    waits = tools[NEXT_MESSAGE].annotations
    assert waits is not None and waits.read_only_hint is True


def test_the_hints_follow_the_tool_descriptors_call_model_idempotency_and_risk() -> None:
    # What the inventory publishes of each tool (seed 004 §7.1), in MCP's words.
    tools = _tools(
        {**TOOL, "method": "b.look", "call_model": "query", "risk": "low", "idempotent": True},
        {**TOOL, "method": "b.set", "call_model": "command", "risk": "medium", "idempotent": True},
        {**TOOL, "method": "b.wipe", "call_model": "command", "risk": "high"},
    )
    hints = {
        name: (a.read_only_hint, a.destructive_hint, a.idempotent_hint)
        for name, tool in tools.items()
        if (a := tool.annotations) is not None and name.startswith("b.")
    }
    assert hints == {
        "b.look": (True, False, True),
        "b.set": (False, False, True),
        "b.wipe": (False, True, False),
    }


def test_a_tool_named_the_seeds_way_is_offered_by_the_id_it_is_called_by() -> None:
    seeds = {**TOOL, "method": "board.create", "app_scope": "whiteboard"}
    seeds["id"] = "whiteboard/board.create"
    assert "whiteboard/board.create" in _tools(seeds)


def test_a_descriptors_own_title_and_hints_win() -> None:
    declared = {
        **TOOL,
        "title": "Look up a thing",
        "annotations": {"read_only": True, "destructive": False, "idempotent": True, "x": 1},
    }
    (tool,) = [t for t in _tools(declared).values() if t.name == "b.tool"]
    assert tool.title == "Look up a thing"
    hints = tool.annotations
    assert hints is not None
    assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
        True,
        False,
        True,
    )


def test_a_results_text_is_the_whole_result_however_long() -> None:
    result = {"rows": [{"n": i, "label": f"row {i}"} for i in range(100)]}
    answer = result_of(_final(wire.RESULT, "c1", result=result))
    (text,) = answer.content
    assert isinstance(text, types.TextContent)
    assert len(text.text) > MAX_LINE_CHARS
    assert json.loads(text.text) == result == answer.structured_content


@pytest.mark.parametrize(
    ("code", "pointer", "message", "text"),
    [
        ("tool_input_invalid", "/bogus", None, "error: tool_input_invalid at /bogus"),
        ("tool_input_invalid", "", None, "error: tool_input_invalid at (the whole input)"),
        ("app_closed", None, "closed", "error: app_closed\nclosed"),
    ],
)
def test_a_refusal_has_no_structured_content_and_its_code_in_its_text(
    code: str, pointer: str | None, message: str | None, text: str
) -> None:
    refused = error_result(code, message, pointer=pointer)
    dumped = refused.model_dump(by_alias=True, exclude_none=True)
    assert dumped["isError"] is True and "structuredContent" not in dumped
    assert dumped["content"] == [{"type": "text", "text": text}]


def test_a_refusals_code_reads_back_from_what_the_client_gets() -> None:
    for code, pointer, message in (("app_closed", None, None), ("tool_input_invalid", "/a", "m")):
        answered = error_result(code, message, pointer=pointer).model_dump(by_alias=True)
        assert refusal_code(answered) == code
    ok = result_of(_final(wire.RESULT, "c1", result={"code": "x"}))
    assert refusal_code(ok.model_dump(by_alias=True)) is None
