"""An MCP server's own UI (issue 31), from servers nobody here wrote, unchanged: the ext-apps
"Get Time" servers (`@modelcontextprotocol/server-basic-vanillajs` and `server-basic-react`,
fetched pinned), each run as `node dist/index.js --stdio` and listed in its sandbox as `lineup
run --dev-mcp` does, which also reads its `ui://` resource into the app's manifest and folder
(`lineup.sdk.mcp_ui`). One tree runs both; in real Chromium the Agent calls each server's
`get-time`, the runtime opens that server's UI in a Surface on the call, the page shows the
tool's real result (the server's time, as the server gave it), and the page's own "Get Server
Time" (`tools/call`) reaches the server through the app's adapter (`McpAppHost`): it shows a
new time. The page's `resources/read` of its own UI gives the HTML the server served at listing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import pytest
import trio
from playwright.sync_api import Frame, Page, expect

from lineup.actors.kernel import ActorKind, AuditRecord
from lineup.supervisor._mcp_probe import dev_mcp
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.browser import framed, load_shell
from lineup.tests.support.mcp_time_app import MCP_APP_PACKAGE, MCP_REACT_APP_PACKAGE
from lineup.tests.support.npm import NpmPackage, installed
from lineup.tests.support.runtime import CONVERSATION, agent_client, start_runtime
from lineup.tests.support.tree import attach, audit_rows

from .conftest import ShellPage
from .test_mcp_app_host_e2e import HOST_SAID

WAIT_MS: Final = 20_000
COMMAND: Final = ["node", "dist/index.js", "--stdio"]
TOOL: Final = "get-time"
ISO_TIME: Final = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
ENTRYPOINT: Final = "get-time-mcp-app-html"  # of `ui://get-time/mcp-app.html`
READ_ID: Final = 9001  # an id the page's own requests do not reach
# The frame asks the Shell for its resource as the page's script would, and reads the answer
# from the recorder HOST_SAID puts in every frame.
READ: Final = """(args) => window.parent.postMessage(
  {jsonrpc: "2.0", id: args.id, method: "resources/read", params: {uri: args.uri}}, "*")"""
READ_ANSWERED: Final = "(id) => window.__hostSaid.some((m) => m.id === id)"
READ_ANSWER: Final = "(id) => window.__hostSaid.find((m) => m.id === id)"


def _structured(result: dict[str, Any]) -> str:
    return str(result["time"])


def _text(result: dict[str, Any]) -> str:
    # The React build's tool declares no output schema, and the page shows the result's text
    # content: the server's own, as it gave it (`lineup.sdk.mcp_apps.call_tool_result`).
    return str(result["content"][0]["text"])


# Each server: its package, its scope (its `serverInfo.name`), where its page shows the time,
# and what it shows of a result.
SERVERS: Final = {
    "vanillajs": (
        MCP_APP_PACKAGE,
        "basic-mcp-app-server-vanilla-js",
        "#server-time",
        _structured,
    ),
    "react": (
        MCP_REACT_APP_PACKAGE,
        "basic-mcp-app-server-react",
        "p:has-text('Server Time:') code",
        _text,
    ),
}
pytestmark = [
    pytest.mark.timeout(240),
]


def frame_of(p: Page, scope: str) -> Frame:
    return framed(p, f'iframe[title^="{scope} "]', wait_ms=WAIT_MS)


async def test_each_servers_own_ui_opens_on_the_agents_call_and_its_button_reaches_the_server(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    """Ten seconds, thirty on a fresh clone (the first to fetch the two published servers from
    npm), by what it proves: both servers, unchanged, listed in the sandbox and run by a real
    tree, and each one's own UI driven in Chromium."""
    rt = data_dir / "rt"
    rt.mkdir(mode=0o700, parents=True)
    entries: dict[str, dict[str, str]] = {}

    async def listed(build: str) -> None:
        folder = installed(NpmPackage(*SERVERS[build][0]))
        entries[build] = await trio.to_thread.run_sync(dev_mcp, folder, COMMAND, rt)

    async with trio.open_nursery() as probes:
        for build in SERVERS:
            probes.start_soon(listed, build)
    runtime = await start_runtime(
        nursery, rt, extra_apps=tuple(entries[b] for b in SERVERS), demo_agent=False
    )
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT_MS / 1000)
    revision = await agent.revision_with(f"{SERVERS['react'][1]}.{TOOL}")
    await page.run(lambda p: p.context.add_init_script(HOST_SAID))
    await page.run(load_shell(runtime.shell_url, wait_ms=WAIT_MS))

    for build, (_package, scope, shown_at, shows) in SERVERS.items():
        call_id = f"time-{build}"
        await agent.client.call_tool(CONVERSATION, f"{scope}.{TOOL}", {}, revision, call_id=call_id)
        terminal = await agent.terminal(call_id)
        assert terminal["type"] == "lineup.v1.tool.result", terminal
        first = shows(terminal["payload"]["result"])

        def clicked(
            p: Page, scope: str = scope, at: str = shown_at, first: str = first
        ) -> tuple[str, Any]:
            frame = frame_of(p, scope)
            # The Agent's call, shown by the server's own page: the server's time.
            expect(frame.locator(at)).to_have_text(first, timeout=WAIT_MS)
            # Its own tools/call, through the runtime to the server: a new time.
            frame.get_by_role("button", name="Get Server Time").click()
            expect(frame.locator(at)).not_to_have_text(first, timeout=WAIT_MS)
            frame.evaluate(READ, {"id": READ_ID, "uri": f"ui://{scope}/{ENTRYPOINT}"})
            frame.wait_for_function(READ_ANSWERED, arg=READ_ID, timeout=WAIT_MS)
            return frame.locator(at).inner_text(), frame.evaluate(READ_ANSWER, READ_ID)

        again, read = await page.run(clicked)
        assert ISO_TIME.match(again), again
        served = (installed(NpmPackage(*SERVERS[build][0])) / "dist" / "mcp-app.html").read_text()
        assert read["result"]["contents"][0]["text"] == served
    # Each page's own call ran, audited by the tool and its outcome's code (none: a result).
    reader = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "reader")

    def both(rows: tuple[AuditRecord, ...]) -> bool:
        return len(rows) >= len(SERVERS)

    rows = await audit_rows(reader, both, event_prefix="focus.surface_tool_called")
    assert sorted((row.message_type, row.code) for row in rows) == sorted(
        (f"{scope}.{TOOL}", None) for _p, scope, _s, _f in SERVERS.values()
    )
    assert page.errors == []
