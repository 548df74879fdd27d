"""What an MCP server says, as LineUp holds it: its scope, its tools' ids, call models and
risks, its results."""

from __future__ import annotations

from lineup.sdk.mcp_server import (
    CONTENT_SCHEMA,
    error_text_of,
    manifest_of,
    method_of,
    result_of,
    scope_of,
    tools_of,
)

OBJ = {"type": "object"}


def test_a_servers_name_becomes_a_scope_lineup_takes() -> None:
    assert scope_of("Our Test Server") == "our-test-server"
    assert scope_of("@modelcontextprotocol/server-everything") == (
        "modelcontextprotocol-server-everything"
    )
    assert scope_of("42") == "mcp-42"
    assert scope_of("") == "mcp"


def test_a_tool_keeps_its_name_under_the_scope_or_a_mapped_one() -> None:
    assert method_of("srv", "add") == "srv.add"
    assert method_of("srv", "files.read_all") == "srv.files.read_all"
    assert method_of("srv", "getTinyImage") == "srv.get_tiny_image"
    assert method_of("srv", "echo tool!") == "srv.echo_tool"
    assert method_of("srv", "9lives") == "srv.t_9lives"


def test_names_that_map_to_one_method_or_schemas_refused_leave_those_tools_out() -> None:
    tools = tools_of(
        "srv",
        [
            {"name": "get_time", "inputSchema": OBJ},
            {"name": "getTime", "inputSchema": OBJ},
            {"name": "bad", "inputSchema": {"type": "object", "required": "x"}},
            {"name": "ok", "inputSchema": OBJ, "outputSchema": OBJ},
        ],
    )
    assert [d.method for d in tools.descriptors] == ["srv.get_time", "srv.ok"]
    assert tools.refused == (("getTime", "duplicate_tool"), ("bad", "mcp_schema_invalid"))
    assert tools.names == {"srv.get_time": "get_time", "srv.ok": "ok"}
    assert not tools.structured("srv.get_time") and tools.structured("srv.ok")
    assert tools.descriptors[0].output_schema == CONTENT_SCHEMA


def test_annotations_set_risk_and_idempotence() -> None:
    tools = tools_of(
        "srv",
        [
            {"name": "look", "inputSchema": OBJ, "annotations": {"readOnlyHint": True}},
            {"name": "drop", "inputSchema": OBJ},  # MCP's default: destructive
            {
                "name": "put",
                "inputSchema": OBJ,
                "annotations": {"destructiveHint": False, "idempotentHint": True},
            },
        ],
    )
    published = {d.method: d.published() for d in tools.descriptors}
    assert published["srv.look"]["risk"] == "low"
    assert published["srv.drop"]["risk"] == "high"
    assert (published["srv.put"]["risk"], published["srv.put"]["idempotent"]) == ("medium", True)
    assert {p["call_model"] for p in published.values()} == {"command"}


def test_a_result_is_its_structured_content_or_its_content() -> None:
    result = {"content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}}
    assert result_of(result, structured=True) == {"result": 5}
    assert result_of(result, structured=False) == {"content": [{"type": "text", "text": "5"}]}
    failed = {"content": [{"type": "text", "text": "x" * 5000}], "isError": True}
    assert len(error_text_of(failed)) == 1000


def test_the_manifest_is_of_kind_mcp_with_the_command() -> None:
    tools = tools_of("srv", [{"name": "add", "inputSchema": OBJ}])
    manifest = manifest_of("srv", "1.2", "Server", ["python", "server.py"], tools)
    assert (manifest.kind, manifest.mcp and manifest.mcp.command) == (
        "mcp",
        ("python", "server.py"),
    )
    assert manifest.tools[0].delivery == "mcp"
