"""The console's lines: one readable, bounded line a message, and the inventory's tools."""

from __future__ import annotations

from typing import Any

import pytest

from lineup.ops.agent._render import LINE_CHARS, describe, schema_summary, tool_lines


def message(kind: str, **payload: Any) -> dict[str, Any]:
    return {"type": f"lineup.v1.{kind}", "id": "m-1", "payload": payload}


@pytest.mark.parametrize(
    ("sent", "line"),
    [
        (message("text", markdown="hello\nthere"), 'text               "hello\\nthere"'),
        (
            message("client.inventory", revision="4", tools=[{}, {}]),
            "client.inventory   revision 4, 2 tools",
        ),
        (
            message("tool.receipt", call_id="c-1", status="accepted"),
            "tool.receipt       c-1  accepted",
        ),
        (
            message("tool.receipt", call_id="c-1", status="activation_failed", code="app_crashed"),
            "tool.receipt       c-1  activation_failed  app_crashed",
        ),
        (
            message("tool.progress", call_id="c-1", progress={"percent": 40}),
            'tool.progress      c-1  {"percent":40}',
        ),
        (
            message("tool.result", call_id="c-1", result={"ok": True}),
            'tool.result        c-1  ok  {"ok":true}',
        ),
        (
            message(
                "tool.error", call_id="c-1", code="tool_input_invalid", pointer="/fields/0/max"
            ),
            "tool.error         c-1  refused tool_input_invalid at /fields/0/max",
        ),
        (
            message("tool.error", call_id="c-1", code="tool_input_invalid", pointer=""),
            'tool.error         c-1  refused tool_input_invalid at ""',
        ),
        (
            message("tool.error", call_id="c-1", code="expired"),
            "tool.error         c-1  refused expired",
        ),
        (
            message("app_session.opened", app_scope="whiteboard", app_session_id="s-1"),
            "app_session.opened whiteboard  s-1",
        ),
        (
            message(
                "app_session.context",
                app_scope="gettime",
                revision=7,
                content=[{"type": "text", "text": "UTC"}],
            ),
            'app_session.context gettime  revision 7  [{"text":"UTC","type":"text"}]',
        ),
        ({"type": "lineup.v1.someday", "payload": {"a": 1}}, 'someday            {"a":1}'),
        ({"type": 3, "payload": "odd"}, '?                  "odd"'),
    ],
)
def test_each_message_is_one_line_of_type_call_status_and_payload(
    sent: dict[str, Any], line: str
) -> None:
    assert describe(sent) == line


def test_a_huge_or_multiline_payload_stays_one_bounded_line() -> None:
    huge = message("tool.result", call_id="c" * 500, result={"k": "x\n" * 10_000})
    line = describe(huge)
    assert len(line) <= LINE_CHARS
    assert "\n" not in line
    assert line.endswith("…")


SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 1, "maxLength": 200},
        "mode": {"type": "string", "enum": ["a", "b"]},
        "fields": {
            "type": "array",
            "items": {"type": "object", "properties": {"max": {"type": "integer"}}},
        },
        "done": {"type": "boolean"},
    },
    "required": ["title"],
    "additionalProperties": False,
}


def test_an_input_schema_reads_as_a_short_type() -> None:
    assert schema_summary(SCHEMA) == (
        '{title*: string(1..200), mode: "a"|"b", fields: [{max: integer}], done: boolean}'
    )
    assert schema_summary({"type": "object", "properties": {}}) == "{}"
    assert schema_summary("nonsense") == "?"


def test_tools_lists_each_tool_with_its_input_and_one_tool_whole() -> None:
    inventory = {
        "revision": "9",
        "tools": [
            {"method": "notes.add", "handling": "direct", "input_schema": SCHEMA,
             "description": "Add a note.\nMore."},
            {"method": "a.b", "handling": "launch", "input_schema": {"type": "object"}},
        ],
    }  # fmt: skip
    assert tool_lines(inventory) == [
        "revision 9: 2 tools",
        "  a.b        launch",
        "      {}",
        "  notes.add  direct       Add a note.",
        f"      {schema_summary(SCHEMA)}",
    ]
    whole = tool_lines(inventory, "notes.add")
    assert whole[0] == "notes.add (direct) input schema:"
    assert '"additionalProperties": false,' in [line.strip() for line in whole]
    assert tool_lines(inventory, "nope") == ["no tool nope in revision 9"]
    assert tool_lines(None) == ["no inventory received yet"]


def test_a_tool_named_the_seeds_way_is_listed_and_found_by_the_id_it_is_called_by() -> None:
    inventory = {
        "revision": "3",
        "tools": [
            {"id": "sketch/board.create", "method": "board.create", "app_scope": "sketch",
             "handling": "direct", "input_schema": {"type": "object"}},
        ],
    }  # fmt: skip
    assert tool_lines(inventory)[1] == "  sketch/board.create  direct"
    assert tool_lines(inventory, "sketch/board.create")[0] == (
        "sketch/board.create (direct) input schema:"
    )
    assert tool_lines(inventory, "board.create") == ["no tool board.create in revision 3"]
