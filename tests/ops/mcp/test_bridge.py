"""The bridge's state without MCP I/O: the inventory as tools, one terminal message per call,
the retry rule's "unchanged", the results' shape, the desktop config."""

from __future__ import annotations

import argparse
import base64
import json
from pathlib import Path
from typing import Any

import mcp_types as types
import trio

from lineup import wire
from lineup.ops.mcp import config_snippet
from lineup.ops.mcp._bridge import Bridge, Inventory, inline_png, mcp_tools, result_of
from lineup.tests.support.picture_app import grey_png

TOOL = {
    "method": "b.tool",
    "description": "B",
    "handling": "direct",
    "input_schema": {"type": "object"},
    "output_schema": {"type": "object"},
}


def _inventory(revision: str, *tools: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": wire.INVENTORY,
        "conversation_id": "c",
        "payload": {"revision": revision, "tools": list(tools)},
    }


def _final(kind: str, call_id: str, **payload: object) -> dict[str, Any]:
    return {"type": kind, "conversation_id": "c", "payload": {"call_id": call_id, **payload}}


def test_the_tools_are_the_inventory_in_method_order_then_the_conversations() -> None:
    inventory = Inventory.of(_inventory("2", TOOL, {**TOOL, "method": "a.tool"})["payload"])
    names = [t.name for t in mcp_tools(inventory)]
    assert names == ["a.tool", "b.tool", "conversation.say", "conversation.next_message"]
    assert mcp_tools(inventory)[1].description == "B"


def test_a_tool_is_unchanged_only_when_equal_in_both_revisions() -> None:
    old = Inventory.of(_inventory("1", TOOL)["payload"])
    same = Inventory.of(_inventory("2", TOOL)["payload"])
    other = Inventory.of(_inventory("3", {**TOOL, "description": "new"})["payload"])
    assert same.unchanged(old, "b.tool")
    assert not other.unchanged(old, "b.tool")
    assert not same.unchanged(old, "gone.tool")


async def test_a_call_gets_its_first_terminal_message_only_and_a_foreign_one_is_dropped() -> None:
    bridge = Bridge(conversation_id="c")
    assert bridge.take(_inventory("1", TOOL)) == "inventory"
    assert bridge.take(_inventory("1", TOOL)) is None  # the same revision again
    assert not bridge.calls.deliver(_final(wire.RESULT, "nobody", result={}))
    with bridge.calls.open("c1") as slot:
        bridge.take(_final(wire.RECEIPT, "c1", status="accepted"))
        bridge.take(_final(wire.RESULT, "c1", result={"ok": True}))
        assert not bridge.calls.deliver(_final(wire.TOOL_ERROR, "c1", code="late"))
        with trio.fail_after(1):
            assert (await slot.next())["type"] == wire.RECEIPT
            assert (await slot.next())["payload"]["result"] == {"ok": True}
    assert len(bridge.calls) == 0


def test_a_result_is_structured_and_an_error_carries_its_code_in_its_text_only() -> None:
    ok = result_of(_final(wire.RESULT, "c1", result={"approved": True}))
    assert (ok.is_error, ok.structured_content) == (False, {"approved": True})
    refused = result_of(_final(wire.TOOL_ERROR, "c1", code="tool_input_invalid"))
    assert (refused.is_error, refused.structured_content) == (True, None)
    pointed = result_of(_final(wire.TOOL_ERROR, "c1", code="tool_input_invalid", pointer="/a/0"))
    assert pointed.structured_content is None
    said = pointed.content[0]
    assert isinstance(said, types.TextContent)
    assert said.text == "error: tool_input_invalid at /a/0"


def test_a_png_inline_is_image_content_beside_the_json_and_the_structure_is_unchanged() -> None:
    png = base64.b64encode(grey_png()).decode("ascii")
    result = {"artifact_id": "art-1", "png_base64": png, "width": 4, "height": 4, "strokes": 2}
    answer = result_of(_final(wire.RESULT, "c1", result=result))
    assert answer.structured_content == result
    text, image = answer.content
    assert isinstance(text, types.TextContent) and isinstance(image, types.ImageContent)
    assert (image.data, image.mime_type) == (png, "image/png")
    named = json.loads(text.text)
    assert named["png_base64"] == f"(image/png, {len(grey_png())} bytes: the image content)"
    assert (named["artifact_id"], named["strokes"]) == ("art-1", 2)


def test_only_a_real_png_in_base64_becomes_an_image() -> None:
    not_png = base64.b64encode(b"GIF89a" + b"\0" * 20).decode("ascii")
    for value in (not_png, "not base64!", 42, base64.b64encode(grey_png())[:-2].decode()):
        result = {"png_base64": value}
        assert inline_png(result) is None
        (only,) = result_of(_final(wire.RESULT, "c1", result=result)).content
        assert isinstance(only, types.TextContent)
    too_long = base64.b64encode(grey_png() + b"\0" * 300_000).decode("ascii")
    assert inline_png({"png_base64": too_long}) is None


def _lineup_server(args: argparse.Namespace) -> dict[str, Any]:
    """The `lineup` entry of the snippet's `mcpServers` (JSON: checked, not assumed)."""
    servers = config_snippet(args, python="/py")["mcpServers"]
    assert isinstance(servers, dict)
    server = servers["lineup"]
    assert isinstance(server, dict)
    return server


def test_the_desktop_config_names_this_interpreter_and_keeps_a_secret_out_of_argv() -> None:
    args = argparse.Namespace(
        appserver=None,
        data_dir=Path("/d"),
        agent_id="demo-agent",
        agent_secret=None,
        conversation_id=None,
    )
    server = _lineup_server(args)
    assert server == {"command": "/py", "args": ["-m", "lineup", "mcp", "--data-dir", "/d"]}
    args.agent_secret = "s3cret"
    server = _lineup_server(args)
    assert "s3cret" not in server["args"] and server["env"] == {"LINEUP_AGENT_SECRET": "s3cret"}
