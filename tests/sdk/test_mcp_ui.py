"""An MCP server's UI as its app declares it (`lineup.sdk.mcp_ui`): each `ui://` resource a tool
links to as a Surface entrypoint with its `_meta.ui`, the tool's link and visibility, and the
reason of each UI left out."""

from __future__ import annotations

import base64
from typing import Any

from lineup.sdk.manifest import Entrypoint
from lineup.sdk.mcp_apps import McpAppCsp, McpAppUi
from lineup.sdk.mcp_server import manifest_of, tools_of
from lineup.sdk.mcp_ui import (
    MAX_UI_DOCUMENT,
    MAX_UI_RESOURCES,
    entrypoint_id_of,
    link,
    linked_uris,
    ui_of,
    visibility_of,
)

OBJ = {"type": "object"}
MCP_APP = "text/html;profile=mcp-app"
HTML = "<!doctype html><p>hi</p>"


def tool(name: str, **ui: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": OBJ, "_meta": {"ui": ui}}


def page(uri: str, text: str = HTML, **meta: Any) -> dict[str, Any]:
    content: dict[str, Any] = {"uri": uri, "mimeType": MCP_APP, "text": text}
    if meta:
        content["_meta"] = {"ui": meta}
    return content


def test_a_linked_resource_is_an_entrypoint_declaring_its_meta_and_its_tool_is_linked() -> None:
    listed = [tool("show", resourceUri="ui://srv/page.html")]
    listing = [
        {"uri": "ui://srv/page.html", "name": "p", "_meta": {"ui": {"prefersBorder": False}}}
    ]
    content = page(
        "ui://srv/page.html",
        csp={"connectDomains": ["https://api.example.com"], "frameDomains": []},
        permissions={"camera": {}, "clipboardWrite": {}, "teleport": {}},
        prefersBorder=True,  # the content's, over the listing's
        domain="abc.example.com",  # no place here: every Surface's origin is opaque
    )
    ui = ui_of(listed, listing, {"ui://srv/page.html": content})
    assert ui.refused == ()
    assert ui.entrypoints == (
        Entrypoint(
            id="srv-page-html",
            kind="surface",
            document="mcp-ui/srv-page-html.html",
            mcp_app=McpAppUi(
                csp=McpAppCsp(connect_domains=("https://api.example.com",)),
                permissions=("camera", "clipboard_write"),
                prefers_border=True,
            ),
        ),
    )
    assert ui.documents == {"mcp-ui/srv-page-html.html": HTML}
    tools = link(tools_of("srv", listed), listed, ui.entrypoints)
    (show,) = tools.descriptors
    assert show.ui is not None
    assert (show.ui.entrypoint, show.ui.visibility) == ("srv-page-html", ("model", "app"))
    assert show.handling == "launch"  # the Agent's call brings its UI where the user is
    manifest = manifest_of("srv", "1", None, ["node", "s.js"], tools, ui.entrypoints)
    assert manifest.placed_tools()[0].ui == show.ui
    assert manifest.declared_capabilities == ("surface.network", "surface.devices")


def test_the_deprecated_flat_key_links_a_tool_too_and_a_blob_is_read() -> None:
    listed = [{"name": "old", "inputSchema": OBJ, "_meta": {"ui/resourceUri": "ui://srv/old"}}]
    blob = {
        "uri": "ui://srv/old",
        "mimeType": "text/html; profile=mcp-app",
        "blob": base64.b64encode(HTML.encode()).decode(),
    }
    ui = ui_of(listed, [], {"ui://srv/old": blob})
    assert [e.id for e in ui.entrypoints] == ["srv-old"]
    assert ui.documents == {"mcp-ui/srv-old.html": HTML}
    (old,) = link(tools_of("srv", listed), listed, ui.entrypoints).descriptors
    assert old.ui is not None and old.ui.entrypoint == "srv-old"


def test_a_resource_lineup_cannot_show_leaves_its_tool_without_a_ui_and_says_why() -> None:
    uris = ("plain", "big", "cut", "gone", "csp", "bad64", "empty")
    listed = [tool(name, resourceUri=f"ui://srv/{name}") for name in uris]
    listed.append(tool("web", resourceUri="https://example.com/page"))
    read: dict[str, dict[str, Any]] = {
        "ui://srv/plain": {**page("ui://srv/plain"), "mimeType": "text/html"},
        "ui://srv/big": page("ui://srv/big", "x" * (MAX_UI_DOCUMENT + 1)),
        "ui://srv/cut": {"mimeType": MCP_APP, "size": MAX_UI_DOCUMENT + 1},  # as the probe cuts
        "ui://srv/gone": {"error": "McpError"},
        "ui://srv/csp": page("ui://srv/csp", csp={"connectDomains": ["javascript:alert(1)"]}),
        "ui://srv/bad64": {"uri": "ui://srv/bad64", "mimeType": MCP_APP, "blob": "!!"},
    }
    ui = ui_of(listed, [], read)
    assert ui.entrypoints == () and ui.documents == {}
    assert dict(ui.refused) == {
        "https://example.com/page": "ui_resource_not_ui",
        "ui://srv/plain": "ui_resource_not_mcp_app",
        "ui://srv/big": "ui_resource_too_big",
        "ui://srv/cut": "ui_resource_too_big",
        "ui://srv/gone": "ui_resource_unreadable",
        "ui://srv/csp": "ui_meta_invalid",
        "ui://srv/bad64": "ui_resource_unreadable",
        "ui://srv/empty": "ui_resource_not_mcp_app",  # nothing read: no type
    }
    tools = link(tools_of("srv", listed), listed, ui.entrypoints)
    assert len(tools.descriptors) == len(listed)  # every tool stays, without a UI
    assert all(t.ui is None and t.handling == "direct" for t in tools.descriptors)


def test_an_app_only_tool_is_the_pages_alone_and_left_out_when_there_is_no_page() -> None:
    listed = [
        tool("show", resourceUri="ui://srv/page"),
        tool("refresh", visibility=["app"]),  # no page of its own: the app's first
        tool("agent", visibility=["model"]),
        tool("odd", visibility=["someone"]),
    ]
    ui = ui_of(listed, [], {"ui://srv/page": page("ui://srv/page")})
    tools = link(tools_of("srv", listed), listed, ui.entrypoints)
    by_name = {tools.names[t.method]: t for t in tools.descriptors}
    assert set(by_name) == {"show", "refresh", "agent"}
    refresh, agent = by_name["refresh"], by_name["agent"]
    assert refresh.ui is not None and refresh.ui.entrypoint == "srv-page"
    assert (refresh.agent_visible, refresh.app_callable, refresh.handling) == (
        False,
        True,
        "direct",
    )
    assert agent.ui is None and agent.agent_visible  # no page: the Agent's only
    assert ("odd", "tool_visibility_invalid") in tools.refused

    bare = link(tools_of("srv", listed[1:2]), listed[1:2], ())
    assert bare.descriptors == ()
    assert bare.refused == (("refresh", "tool_app_only_without_ui"),)


def test_resources_past_the_bound_or_on_one_entrypoint_are_left_out() -> None:
    many = [tool(f"t{i}", resourceUri=f"ui://srv/p{i}") for i in range(MAX_UI_RESOURCES + 1)]
    assert len(linked_uris(many)) == MAX_UI_RESOURCES
    read = {f"ui://srv/p{i}": page(f"ui://srv/p{i}") for i in range(MAX_UI_RESOURCES + 1)}
    ui = ui_of(many, [], read)
    assert len(ui.entrypoints) == MAX_UI_RESOURCES
    assert ui.refused == ((f"ui://srv/p{MAX_UI_RESOURCES}", "ui_resource_over_bound"),)

    twins = [tool("a", resourceUri="ui://srv/a.b"), tool("b", resourceUri="ui://srv/a-b")]
    ui = ui_of(twins, [], {"ui://srv/a.b": page("ui://srv/a.b"), "ui://srv/a-b": page("x")})
    assert [e.id for e in ui.entrypoints] == ["srv-a-b"]
    assert ui.refused == (("ui://srv/a-b", "ui_resource_duplicate"),)


def test_names_and_visibility_read_as_the_spec_writes_them() -> None:
    assert entrypoint_id_of("ui://get-time/mcp-app.html") == "get-time-mcp-app-html"
    assert entrypoint_id_of("ui://") == "ui"
    assert visibility_of({"name": "x"}) == ("model", "app")
    assert visibility_of(tool("x", visibility=["app", "model"])) == ("model", "app")
    assert visibility_of(tool("x", visibility=["app"])) == ("app",)
