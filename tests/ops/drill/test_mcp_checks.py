"""The drill's MCP invariant catches a request answered twice or never, an answer to a request
nobody made, a tool answering another number, and an error without a stable code."""

from __future__ import annotations

from typing import Any

from lineup.ops.drill._mcp import Asked, check_mcp, outcome


def ok(n: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 0, "result": {"structuredContent": {"n": n}}}


def refused(code: str | None) -> dict[str, Any]:
    """A refusal as `lineup mcp` answers it: no structured content, the code in the text."""
    text = "something went wrong" if code is None else f"error: {code}"
    return {"id": 0, "result": {"isError": True, "content": [{"type": "text", "text": text}]}}


def examples(asked: dict[int, Asked], strays: list[Any] | None = None) -> list[str]:
    (rule,) = check_mcp(asked, strays or [])
    assert rule.passed == (not rule.examples)
    return rule.examples


def test_every_request_answered_once_with_its_own_answer_passes() -> None:
    asked = {
        1: Asked("initialize", None, [{"id": 1, "result": {}}]),
        2: Asked("tools/call", 7, [ok(7)]),
        3: Asked("tools/call", 8, [refused("app_crashed")]),
        4: Asked("tools/list", None, [{"id": 4, "error": {"code": -32603, "message": "x"}}]),
    }
    assert examples(asked) == []
    assert [outcome(a) for a in asked.values()] == ["ok", "ok", "error:app_crashed", "rpc_error"]


def test_a_lost_a_doubled_and_an_unasked_answer_are_caught() -> None:
    asked = {1: Asked("tools/call", 7, []), 2: Asked("tools/list", None, [ok(1), ok(1)])}
    assert examples(asked, strays=[99]) == [
        "tools/call #1: 0 responses",
        "tools/list #2: 2 responses",
        "a response to #99, never asked",
    ]
    assert [outcome(a) for a in asked.values()] == ["unanswered", "answered_twice"]


def test_a_wrong_number_or_an_error_without_a_code_is_caught() -> None:
    asked = {1: Asked("tools/call", 7, [ok(8)]), 2: Asked("tools/call", 9, [refused(None)])}
    assert examples(asked) == [
        "tools/call #1: answered 8, asked 7",
        "tools/call #2: an error without a code",
    ]
