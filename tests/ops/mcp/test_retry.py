"""The bridge's one retry (issue 16): a call the runtime refuses `inventory_revision_mismatch`
is sent again once under the new revision if its tool is unchanged there, and otherwise the
refusal is the client's answer. The AppServer side is a fake that answers each call as the
runtime would; the bridge's call path (`McpBridge._call_tool`) is the real one."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import mcp_types as types

from lineup import wire
from lineup.ops.mcp._server import Link, McpBridge

from .test_bridge import TOOL, _final, _inventory


class FakeAppServer:
    """Answers each `call_tool` by handing the bridge what the runtime would send: the first
    call is refused for its revision as a newer inventory (`newer`) arrives; any later call
    gets a result."""

    def __init__(self, bridge: McpBridge, newer: dict[str, Any]) -> None:
        self.bridge = bridge
        self.newer = newer
        self.sent: list[tuple[str, str]] = []  # (revision, call_id)

    async def call_tool(
        self,
        conversation_id: str,
        tool: str,
        arguments: dict[str, Any],
        revision: str,
        call_id: str,
    ) -> None:
        self.sent.append((revision, call_id))
        take = self.bridge.bridge.take
        if len(self.sent) == 1:
            take(self.newer)
            take(_final(wire.TOOL_ERROR, call_id, code="inventory_revision_mismatch"))
        else:
            take(_final(wire.RESULT, call_id, result={"ok": True}))


class _Session:
    async def report_progress(self, progress: float, total: float | None, message: str) -> None:
        pass


async def _call(newer: dict[str, Any]) -> tuple[types.CallToolResult, FakeAppServer]:
    mcp = McpBridge(Link("http://127.0.0.1:1", "agent", "secret", "c"), client=None)  # type: ignore[arg-type]
    server = FakeAppServer(mcp, newer)
    mcp.client = server  # type: ignore[assignment]
    mcp.bridge.take(_inventory("r1", TOOL))
    mcp._ready.set()
    params = types.CallToolRequestParams(name="b.tool", arguments={})
    result = await mcp._call_tool(SimpleNamespace(session=_Session()), params)  # type: ignore[arg-type]
    return result, server


async def test_a_refused_revision_is_retried_once_under_a_new_one_where_the_tool_is_same() -> None:
    other = {**TOOL, "method": "c.other"}
    result, server = await _call(_inventory("r2", TOOL, other))
    assert not result.is_error and result.structured_content == {"ok": True}
    assert [revision for revision, _ in server.sent] == ["r1", "r2"]
    assert server.sent[0][1] != server.sent[1][1]  # a new call, not a replay of the refused one


async def test_a_refused_revision_is_the_answer_when_the_tool_changed_in_the_new_one() -> None:
    changed = {**TOOL, "description": "B, now different"}
    result, server = await _call(_inventory("r2", changed))
    assert result.is_error and result.structured_content is None
    said = result.content[0]
    assert isinstance(said, types.TextContent)
    assert said.text == "error: inventory_revision_mismatch"
    assert [revision for revision, _ in server.sent] == ["r1"]
