"""A small MCP server of our own with MCP App UIs (the official SDK's `MCPServer`), listed by the
tests as `lineup run --dev-mcp -- python server.py` does (tests/e2e/test_mcp_ui_probe.py). Not
LineUp code: it imports only the `mcp` SDK, as any server a user brings would.

Its tools, each linked (`_meta.ui.resourceUri`) to a `ui://` resource: `show` to a page of the
spec's type that asks for a network origin, a device and a border; `refresh` to the same page,
for the page alone (`visibility` `["app"]`); `legacy` by the deprecated flat
`_meta["ui/resourceUri"]` to a second page; `plain` to a resource of another type (`text/html`);
`huge` to one over LineUp's bound; `missing` to one the server does not have.

Its other resources, for a page's live `resources/read`: `data://ours/note` (text: how many
times it was read), `data://ours/dot` (bytes, a blob), `data://ours/big` (text over LineUp's
bound for a live read), `data://ours/slow` (answers after a minute: past LineUp's deadline).
"""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import MCPServer

MCP_APP = "text/html;profile=mcp-app"
PAGE = "<!doctype html><html><body><p id='ours'>Our page</p></body></html>"

server = MCPServer("Our UI Server")


@server.tool(description="Show a word in our page.", meta={"ui": {"resourceUri": "ui://ours/page"}})
def show(word: str) -> str:
    return word


@server.tool(
    description="What only the page calls.",
    meta={"ui": {"resourceUri": "ui://ours/page", "visibility": ["app"]}},
)
def refresh() -> str:
    return "fresh"


@server.tool(description="Linked the old way.", meta={"ui/resourceUri": "ui://ours/legacy"})
def legacy() -> str:
    return "old"


@server.tool(description="Linked to plain HTML.", meta={"ui": {"resourceUri": "ui://ours/plain"}})
def plain() -> str:
    return "plain"


@server.tool(description="Linked to a huge page.", meta={"ui": {"resourceUri": "ui://ours/huge"}})
def huge() -> str:
    return "huge"


@server.tool(description="Linked to nothing.", meta={"ui": {"resourceUri": "ui://ours/missing"}})
def missing() -> str:
    return "missing"


@server.resource(
    "ui://ours/page",
    mime_type=MCP_APP,
    meta={
        "ui": {
            "csp": {"connectDomains": ["https://api.example.com"]},
            "permissions": {"clipboardWrite": {}},
            "prefersBorder": True,
        }
    },
)
def page() -> str:
    return PAGE


@server.resource("ui://ours/legacy", mime_type=MCP_APP)
def legacy_page() -> str:
    return PAGE.replace("Our page", "Our old page")


@server.resource("ui://ours/plain", mime_type="text/html")
def plain_page() -> str:
    return PAGE


@server.resource("ui://ours/huge", mime_type=MCP_APP)
def huge_page() -> str:
    return PAGE + "<!--" + "x" * (3 * 1024 * 1024) + "-->"


READS = [0]


@server.resource("data://ours/note", mime_type="text/plain")
def note() -> str:
    READS[0] += 1
    return f"read {READS[0]} times"


@server.resource("data://ours/dot", mime_type="application/octet-stream")
def dot() -> bytes:
    return bytes(range(8))


@server.resource("data://ours/big", mime_type="text/plain")
def big() -> str:
    return "y" * (300 * 1024)


@server.resource("data://ours/slow", mime_type="text/plain")
async def slow() -> str:
    await anyio.sleep(60)
    return "late"


if __name__ == "__main__":
    server.run("stdio")
