"""An inventory's tools are found by id through an index built once per (frozen) inventory:
the same answers a scan gave, and nothing of the index in its equality or on the wire."""

from __future__ import annotations

from typing import Final

from lineup.actors.focus.messages import InventoryReply
from lineup.sdk.manifest import ToolDescriptor

OBJECT: Final = {"type": "object", "properties": {}, "additionalProperties": False}


def tool(method: str, timeout_ms: int = 30_000) -> ToolDescriptor:
    return ToolDescriptor(
        method=method,
        handling="direct",
        input_schema=OBJECT,
        output_schema=OBJECT,
        timeout_ms=timeout_ms,
    )


def test_a_tool_is_found_by_its_id_and_the_first_of_an_id_wins() -> None:
    first, again = tool("probe.echo"), tool("probe.echo", timeout_ms=60_000)
    inventory = InventoryReply(
        revision="1", tools=(first, tool("probe.other"), again), disabled_tools=()
    )
    assert inventory.tool("probe.echo") is first  # as the scan found it
    assert inventory.tool("probe.other") == tool("probe.other")
    assert inventory.tool("probe.missing") is None


def test_the_index_is_in_neither_the_equality_nor_the_wire() -> None:
    made = InventoryReply(revision="1", tools=(tool("probe.echo"),), disabled_tools=())
    looked_up = InventoryReply(revision="1", tools=(tool("probe.echo"),), disabled_tools=())
    assert looked_up.tool("probe.echo") is not None  # its index is built now
    assert made == looked_up
    assert "tools_by_id" not in looked_up.model_dump()
    assert InventoryReply.model_validate_json(looked_up.model_dump_json()) == made
