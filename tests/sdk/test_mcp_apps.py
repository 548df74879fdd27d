"""What a `surface` entrypoint declares of an MCP App's page (`lineup.sdk.mcp_apps`)."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from lineup.sdk.manifest import Entrypoint
from lineup.sdk.mcp_apps import (
    McpAppCsp,
    McpAppUi,
    call_tool_error,
    call_tool_result,
    mcp_progress,
)


def test_an_entrypoint_declares_its_page_an_mcp_app_with_the_specs_meta_ui() -> None:
    entry = Entrypoint.model_validate(
        {
            "id": "ui",
            "kind": "surface",
            "mcp_app": {
                "csp": {
                    "connect_domains": ["https://api.example.com", "wss://live.example.com:8443"],
                    "resource_domains": ["https://*.cdn.example.net"],
                },
                "permissions": ["clipboard_write"],
                "prefers_border": True,
            },
        }
    )
    assert entry.mcp_app == McpAppUi(
        csp=McpAppCsp(
            connect_domains=("https://api.example.com", "wss://live.example.com:8443"),
            resource_domains=("https://*.cdn.example.net",),
        ),
        permissions=("clipboard_write",),
        prefers_border=True,
    )
    # A LineUp page's entrypoint dumps as it did before the field existed.
    assert "mcp_app" not in Entrypoint(id="main", kind="surface").model_dump()
    assert entry.model_dump(mode="json")["mcp_app"]["permissions"] == ["clipboard_write"]


@pytest.mark.parametrize(
    "domain",
    [
        "api.example.com",  # no scheme
        "ftp://files.example.com",
        "https://example.com/path",  # an origin has no path
        "https://*",
        "https://exa mple.com",
        "javascript://x",
    ],
)
def test_a_declared_domain_must_be_an_origin(domain: str) -> None:
    with pytest.raises(ValidationError):
        McpAppCsp.model_validate({"connect_domains": [domain]})


def test_an_unknown_permission_or_field_is_refused() -> None:
    with pytest.raises(ValidationError):
        McpAppUi.model_validate({"permissions": ["usb"]})
    with pytest.raises(ValidationError):
        McpAppUi.model_validate({"domain": "a904794854a047f6.claudemcpcontent.com"})


def test_a_calls_result_is_the_specs_call_tool_result_with_the_whole_result_as_text() -> None:
    result = {"time": "12:00", "nested": {"a": [1, 2]}}
    shown = call_tool_result(result)
    assert shown["isError"] is False and shown["structuredContent"] == result
    assert [c["type"] for c in shown["content"]] == ["text"]
    assert json.loads(shown["content"][0]["text"]) == result
    assert call_tool_error("handler_failed") == {
        "content": [{"type": "text", "text": "handler_failed"}],
        "isError": True,
    }


def test_a_tools_progress_is_mcps_progress_numbered_by_itself_or_by_its_count() -> None:
    assert mcp_progress({"done": 3, "total": 10, "message": "m" * 600}, 1) == {
        "progress": 3,
        "total": 10,
        "message": "m" * 500,
    }
    assert mcp_progress({"progress": 0.5}, 4) == {"progress": 0.5}
    assert mcp_progress({"state": "running", "done": True, "total": "x"}, 4) == {"progress": 4}
