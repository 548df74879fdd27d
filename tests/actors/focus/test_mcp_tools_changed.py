"""A development MCP app's new `tools/list` (`notifications/tools/list_changed`) in the focus
actor (`actors/focus/_dev_reload.py`): its tools are mapped as at `--dev-mcp`, each keeping its
link to the UI its manifest declares (`lineup.sdk.mcp_ui.link`) — against the in-memory bus of
test_surfaces.py."""

from __future__ import annotations

from typing import Any

import trio

from lineup.actors.kernel import Message
from lineup.actors.store.messages import InventoryRevisionBumpReply, InventoryRevisionBumpRequest
from lineup.sdk import protocol as p
from lineup.sdk.manifest import Entrypoint
from lineup.sdk.mcp_apps import McpAppUi
from lineup.sdk.mcp_server import manifest_of, tools_of

from .test_surfaces import SCOPE, FakeBus, focus_with

OBJ = {"type": "object"}
PAGE = Entrypoint(
    id="ours-page", kind="surface", document="mcp-ui/ours-page.html", mcp_app=McpAppUi()
)


class StoreBus(FakeBus):
    """The in-memory bus, whose store gives each inventory a new revision."""

    def __init__(self) -> None:
        super().__init__()
        self.revision = 0

    async def request(self, peer: str, body: Message, *, expect: type[Any], **kw: Any) -> Any:
        if isinstance(body, InventoryRevisionBumpRequest):
            self.revision += 1
            return InventoryRevisionBumpReply(revision=self.revision, created=True)
        return await super().request(peer, body, expect=expect, **kw)


def tool(name: str, **ui: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": OBJ, "_meta": {"ui": ui}}


async def test_a_dev_mcp_apps_new_tools_keep_their_links_to_its_ui() -> None:
    first = [tool("show", resourceUri="ui://ours/page")]
    manifest = manifest_of(SCOPE, "1", None, ["node", "s.js"], tools_of(SCOPE, first), (PAGE,))
    focus = focus_with(StoreBus(), manifest)
    focus.book.change(SCOPE, source="dev")
    grown = (
        *first,
        tool("refresh", resourceUri="ui://ours/page", visibility=["app"]),
        tool("later", resourceUri="ui://ours/new"),  # a UI not read at `--dev-mcp`: none
    )
    changed = p.McpToolsChangedRequest(tools=grown)
    async with trio.open_nursery() as nursery:
        focus.port.nursery = nursery
        reply = await focus.dev_reload.mcp_tools_changed(SCOPE, changed)
        nursery.cancel_scope.cancel()
    assert (reply.tools, reply.refused) == (3, 0)
    now = focus.book.manifest(SCOPE)
    assert now is not None and now.entrypoints == (PAGE,)
    links = {t.method: t.ui and (t.ui.entrypoint, t.ui.visibility) for t in now.tools}
    assert links == {
        f"{SCOPE}.show": ("ours-page", ("model", "app")),
        f"{SCOPE}.refresh": ("ours-page", ("app",)),
        f"{SCOPE}.later": None,
    }
