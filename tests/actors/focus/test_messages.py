"""Focus's protocol (`actors/focus/messages.py`): the inventory crosses the bus typed."""

from __future__ import annotations

import json

from lineup.actors.focus.messages import InventoryReply
from lineup.sdk.manifest import ToolDescriptor

OBJECT = {"type": "object", "properties": {}, "additionalProperties": False}


def descriptor(method: str, **fields: object) -> ToolDescriptor:
    return ToolDescriptor.model_validate(
        {"method": method, "handling": "direct", "input_schema": OBJECT,
         "output_schema": OBJECT, **fields}
    )  # fmt: skip


def test_an_inventory_reply_arrives_as_tool_descriptors_after_a_frame_round_trip() -> None:
    sent = InventoryReply(
        revision="7",
        tools=(descriptor("board.open", handling="launch", requires_foreground=True),),
        disabled_tools=(),
    )

    # What the bus does: the JSON of the body on the channel, validated again on arrival.
    received = InventoryReply.model_validate(json.loads(sent.model_dump_json()))

    assert received == sent
    [tool] = received.tools
    assert isinstance(tool, ToolDescriptor)
    assert (tool.handling, tool.requires_foreground, tool.timeout_ms) == (
        "launch", True, sent.tools[0].timeout_ms,
    )  # fmt: skip


def test_an_inventory_finds_an_advertised_tool_by_method_and_nothing_else() -> None:
    inventory = InventoryReply(
        revision="1", tools=(descriptor("board.open"), descriptor("board.close")), disabled_tools=()
    )

    found = inventory.tool("board.close")
    assert found is not None and found.method == "board.close"
    assert inventory.tool("board.gone") is None
    assert inventory.tool("") is None
