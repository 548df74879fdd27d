"""An MCP app's page reads its server's own resources, live (issue 31): our own server with an
MCP App UI (`tests/support/mcp_ui_server`, the official SDK), listed in its sandbox as `lineup
run --dev-mcp` does; in real Chromium the Agent's call opens its page, and the page's own
`resources/read` (posted to the Shell as the page's script would) of `data://ours/note` is the
server's answer at that moment, through the Shell's bridge, the hostbridge, focus and the app's
process; a URI the server does not have, or a `ui://` of another app, is JSON-RPC `-32002`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Final

import pytest
import trio
from playwright.sync_api import Page, expect

from lineup.supervisor._mcp_probe import dev_mcp
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.browser import framed, load_shell
from lineup.tests.support.runtime import CONVERSATION, agent_client, start_runtime

from .conftest import ShellPage
from .test_mcp_app_host_e2e import HOST_SAID

SERVER: Final = Path(__file__).resolve().parents[1] / "support" / "mcp_ui_server"
SCOPE: Final = "our-ui-server"
WAIT_MS: Final = 20_000
# The frame says what the page's script would, and reads the Shell's answers from the recorder
# HOST_SAID puts in every frame.
POST: Final = """(m) => window.parent.postMessage({jsonrpc: "2.0", ...m}, "*")"""
ANSWERED: Final = "(id) => window.__hostSaid.some((m) => m.id === id)"
ANSWER: Final = "(id) => window.__hostSaid.find((m) => m.id === id)"
pytestmark = [pytest.mark.timeout(180)]


async def test_the_pages_resources_read_of_its_servers_resource_is_the_servers_live_answer(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    """Only the whole path proves the answer is the server's own at that moment: a real MCP
    server (probed once to be listed, as `--dev-mcp` does), the tree and Chromium. That is its
    time under the suite's load (about 11 s); nothing in it waits on a clock."""
    rt = data_dir / "rt"
    rt.mkdir(mode=0o700, parents=True)
    entry = await trio.to_thread.run_sync(dev_mcp, SERVER, [sys.executable, "server.py"], rt)
    runtime = await start_runtime(nursery, rt, extra_apps=(entry,), demo_agent=False)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT_MS / 1000)
    revision = await agent.revision_with(f"{SCOPE}.show")
    await page.run(lambda p: p.context.add_init_script(HOST_SAID))
    await page.run(load_shell(runtime.shell_url, wait_ms=WAIT_MS))
    await agent.client.call_tool(
        CONVERSATION, f"{SCOPE}.show", {"word": "hi"}, revision, call_id="show-1"
    )
    assert (await agent.terminal("show-1"))["type"] == "lineup.v1.tool.result"

    def reads(p: Page) -> dict[str, Any]:
        # Its page asks for a network origin and a device: the user says no to both, and it
        # opens without them.
        for asked in ("Reach the network", "Use devices"):
            expect(p.get_by_text(f"asks to: {asked}")).to_be_visible(timeout=WAIT_MS)
            p.get_by_role("button", name="Deny").click(timeout=WAIT_MS)
        frame = framed(p, f'iframe[title^="{SCOPE} "]', wait_ms=WAIT_MS)

        def ask(id_: int, method: str, params: dict[str, Any]) -> Any:
            frame.evaluate(POST, {"id": id_, "method": method, "params": params})
            frame.wait_for_function(ANSWERED, arg=id_, timeout=WAIT_MS)
            return frame.evaluate(ANSWER, id_)

        hello = {"protocolVersion": "2026-01-26", "appInfo": {"name": "t", "version": "1"}}
        ask(1, "ui/initialize", {**hello, "appCapabilities": {}})
        frame.evaluate(POST, {"method": "ui/notifications/initialized", "params": {}})
        return {
            "first": ask(2, "resources/read", {"uri": "data://ours/note"}),
            "second": ask(3, "resources/read", {"uri": "data://ours/note"}),
            "unknown": ask(4, "resources/read", {"uri": "data://ours/nothing"}),
            "other": ask(5, "resources/read", {"uri": "ui://someone-else/page"}),
        }

    answers = await page.run(reads)
    [first] = answers["first"]["result"]["contents"]
    [second] = answers["second"]["result"]["contents"]
    assert (first["uri"], first["mimeType"]) == ("data://ours/note", "text/plain")
    count = int(first["text"].removeprefix("read ").removesuffix(" times"))
    assert second["text"] == f"read {count + 1} times"  # live: the server's answer each time
    for refused in ("unknown", "other"):
        assert answers[refused]["error"]["code"] == -32002, answers[refused]
    assert page.errors == []
