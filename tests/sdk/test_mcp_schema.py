"""An MCP server's tool schemas: all of JSON Schema 2020-12 through `jsonschema`, with remote
`$ref` never loaded, regular expressions bounded in time, and refusals that name the keyword
and where it is. A LineUp app's tool keeps the subset."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from lineup.sdk._mcp_schema import PATTERN_TIMEOUT, check_schema, violations
from lineup.sdk._tool_model import ManifestInvalid, ToolDescriptor
from lineup.sdk.schema import SchemaUnsupported

RICH: dict[str, Any] = {
    "type": "object",
    "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}},
    "properties": {
        "at": {"$ref": "#/$defs/point"},
        "kind": {"oneOf": [{"const": "a"}, {"const": "b"}]},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "tags": {"type": "array", "prefixItems": [{"type": "string"}]},
    },
    "required": ["kind"],
}


def mcp_tool(schema: dict[str, Any]) -> ToolDescriptor:
    return ToolDescriptor(
        method="srv.t",
        handling="direct",
        delivery="mcp",
        input_schema=schema,
        output_schema={"type": "object"},
    )


def test_an_mcp_tool_takes_what_the_subset_refuses_and_enforces_it() -> None:
    tool = mcp_tool(RICH)
    assert tool.input_violations({"kind": "a", "at": {"x": 1}, "code": "ABC"}) == []
    assert tool.input_violations({"kind": "c"}) == ["/kind"]
    assert tool.input_violations({"kind": "a", "at": {"x": "1"}}) == ["/at/x"]
    assert tool.input_violations({"kind": "a", "code": "abcd"}) == ["/code"]
    with pytest.raises(ManifestInvalid) as refused:  # the same schema, for a LineUp app
        ToolDescriptor(
            method="srv.t", handling="direct", input_schema=RICH, output_schema={"type": "object"}
        )
    assert refused.value.reason != "mcp_schema_invalid"


def test_a_schema_that_is_not_2020_12_is_refused_with_its_keyword_and_path() -> None:
    bad = {"type": "object", "properties": {"n": {"type": "integer", "minimum": "zero"}}}
    with pytest.raises(ManifestInvalid) as refused:
        mcp_tool(bad)
    assert refused.value.reason == "mcp_schema_invalid"
    assert refused.value.path == "/input_schema/properties/n/minimum"
    with pytest.raises(SchemaUnsupported) as not_object:
        check_schema({"type": "string"})
    assert not_object.value.reason == "schema_root_not_object"


def test_a_remote_ref_is_never_loaded_and_fails_the_value() -> None:
    asked: list[str] = []

    class Schemas(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # a schema that would accept anything, if it were loaded
            asked.append(self.path)
            body = json.dumps({"type": "integer"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    with ThreadingHTTPServer(("127.0.0.1", 0), Schemas) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}/int.json"
            tool = mcp_tool({"type": "object", "properties": {"r": {"$ref": url}}})
            assert tool.input_violations({"r": 1}) == [""]
            assert tool.input_violations({}) == []
        finally:
            server.shutdown()
    assert asked == []


def test_a_catastrophic_pattern_fails_the_value_within_its_time_bound() -> None:
    tool = mcp_tool(
        {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a|aa)+$"}}}
    )
    started = time.monotonic()
    found = tool.input_violations({"s": "a" * 5000 + "!"})
    assert time.monotonic() - started < 20 * PATTERN_TIMEOUT
    assert found == ["/s"]


def test_pattern_properties_use_the_bounded_engine_too() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^x-": {"type": "integer"}},
    }
    assert violations(schema, {"x-a": 1, "y": "free"}) == []
    assert violations(schema, {"x-a": "one"}) == ["/x-a"]


def test_a_manifest_checks_an_mcp_tools_schema_by_its_delivery() -> None:
    from lineup.sdk.manifest import ManifestInvalid as Refused
    from lineup.sdk.manifest import load_manifest

    tool = mcp_tool(RICH).model_dump(mode="json")
    manifest = {
        "format": "lineup.app.v1",
        "app_scope": "srv",
        "version": "1",
        "kind": "mcp",
        "mcp": {"command": ["python", "server.py"]},
        "tools": [tool],
    }
    assert load_manifest(manifest).tools[0].delivery == "mcp"
    with pytest.raises(Refused) as refused:
        load_manifest({**manifest, "tools": [{**tool, "delivery": "miniapp_sdk"}]})
    assert refused.value.path.startswith("/tools/0/input_schema")
    with pytest.raises(Refused):  # kind mcp names its server, and only it does
        load_manifest({k: v for k, v in manifest.items() if k != "mcp"})
