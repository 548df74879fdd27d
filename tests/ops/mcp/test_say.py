"""`conversation.say` (`McpBridge._call_tool`, the real path) over a fake AppServer client: a
text, or with `app_session_id` a short result of that app sub-session (the runtime checks the
sub-session); a malformed one is refused `tool_input_invalid` and nothing is sent."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import mcp_types as types
import pytest

from lineup.ops.mcp._bridge import SAY, mcp_tools
from lineup.ops.mcp._server import Link, McpBridge


class FakeClient:
    def __init__(self) -> None:
        self.said: list[tuple[str, str, str | None]] = []

    async def say(
        self, conversation_id: str, markdown: str, *, app_session_context: str | None = None
    ) -> dict[str, Any]:
        self.said.append((conversation_id, markdown, app_session_context))
        return {"message_id": f"m-{len(self.said)}", "seq": len(self.said)}


async def _say(arguments: dict[str, Any]) -> tuple[types.CallToolResult, FakeClient]:
    mcp = McpBridge(Link("http://127.0.0.1:1", "agent", "secret", "c"), client=None)  # type: ignore[arg-type]
    client = FakeClient()
    mcp.client = client  # type: ignore[assignment]
    params = types.CallToolRequestParams(name=SAY, arguments=arguments)
    result = await mcp._call_tool(SimpleNamespace(session=None), params)  # type: ignore[arg-type]
    return result, client


def test_say_offers_an_optional_app_session_id() -> None:
    (say,) = [t for t in mcp_tools(None) if t.name == SAY]
    assert set(say.input_schema["properties"]) == {"markdown", "app_session_id"}
    assert say.input_schema["required"] == ["markdown"]


async def test_say_sends_a_text_or_a_short_result_of_the_named_sub_session() -> None:
    plain, client = await _say({"markdown": "hi"})
    assert not plain.is_error and client.said == [("c", "hi", None)]
    grouped, client = await _say({"markdown": "60 %", "app_session_id": "lu:app_session:x"})
    assert not grouped.is_error and client.said == [("c", "60 %", "lu:app_session:x")]


@pytest.mark.parametrize("session", [7, "", "s" * 201])
async def test_a_malformed_app_session_id_is_refused_and_nothing_is_sent(session: Any) -> None:
    refused, client = await _say({"markdown": "60 %", "app_session_id": session})
    assert refused.is_error and refused.structured_content is None
    assert _text(refused) == "error: tool_input_invalid at /app_session_id"
    assert client.said == []


@pytest.mark.parametrize(
    ("arguments", "pointer"),
    [
        ({}, "/markdown"),
        ({"markdown": ""}, "/markdown"),
        ({"markdown": "hi", "to": "everyone"}, "/to"),  # the schema's additionalProperties
        ({"markdown": "x" * 16_001}, "/markdown"),
    ],
)
async def test_say_refuses_what_its_schema_does_not_allow_and_sends_nothing(
    arguments: dict[str, Any], pointer: str
) -> None:
    refused, client = await _say(arguments)
    assert refused.is_error and refused.structured_content is None
    assert _text(refused) == f"error: tool_input_invalid at {pointer}"
    assert client.said == []


def _text(result: types.CallToolResult) -> str:
    (only,) = result.content
    assert isinstance(only, types.TextContent)
    return only.text
