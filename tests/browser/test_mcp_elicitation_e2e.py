"""An elicitation of a server nobody here wrote, answered by clicking a LineUp card (issue 31).

`@modelcontextprotocol/server-everything` (pinned, `test_mcp_everything`) runs sandboxed as an
MCP app; its `trigger-elicitation-request` tool, which it offers only to a client that
declares elicitation, asks a form of thirteen properties. LineUp asks it as an input card of
the seven it can show (strings and numbers; the optional booleans and selects are left out,
`sdk/_mcp_forms.py`), in real Chromium: the user's Submit is the server's `accept` with what
was typed, the card's Cancel its `decline`. The tool's own result says what it heard."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Final

import pytest
import trio
from playwright.sync_api import Locator, Page, expect

from lineup.tests.e2e.test_mcp_everything import SCOPE, everything_entry
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.browser import load_shell
from lineup.tests.support.runtime import CONVERSATION, agent_client, start_runtime

from .conftest import ShellPage

WAIT_MS: Final = 20_000
STEP_S: Final = 90.0  # one browser step, its several waits
TOOL: Final = f"{SCOPE}.trigger-elicitation-request"
ASKED: Final = "Please provide inputs for the following fields:"  # the server's message
RESULT: Final = "lineup.v1.tool.result"
pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(shutil.which("node") is None, reason="Node is not installed"),
]


def _open_card(p: Page) -> Locator:
    """The question open now, by its id: the user goes to the app whose tab says it waits for
    an answer, where an app's own question is (`data-place="app"`)."""
    tab = p.get_by_test_id("app-switcher").get_by_test_id("app-tab").filter(has_text="Everything")
    if tab.get_attribute("aria-current") != "page":
        expect(tab).to_contain_text("waiting for your answer", timeout=WAIT_MS)
        tab.click()
    cards = p.locator('[data-testid="interaction-card"][data-place="app"]').filter(has_text=ASKED)
    opened = cards.and_(p.locator('[data-outcome="open"]'))
    expect(opened).to_have_count(1, timeout=WAIT_MS)
    asked = opened.get_attribute("data-interaction-id")
    return p.locator(f'[data-testid="interaction-card"][data-interaction-id="{asked}"]')


def _texts(result: dict[str, object]) -> str:
    content = result["content"]
    assert isinstance(content, list)
    return "\n".join(str(block.get("text", "")) for block in content)


async def test_the_everything_servers_elicitation_is_answered_and_declined_by_clicking_its_card(
    nursery: trio.Nursery,
    data_dir: Path,
    page: ShellPage,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Up to twenty seconds on a fresh clone, by what it proves: the published everything
    server (Node, sandboxed; fetched from npm once a session) started by a real tree, and two
    of its questions answered by clicking in Chromium."""
    rt = data_dir / "rt"
    entry = await trio.to_thread.run_sync(everything_entry, tmp_path_factory, data_dir)
    runtime = await start_runtime(nursery, rt, extra_apps=(entry,), demo_agent=False)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT_MS / 1000)
    revision = await agent.revision_with(TOOL)  # listed: the probe declared elicitation
    await page.run(load_shell(runtime.shell_url, wait_ms=WAIT_MS), timeout_s=STEP_S)

    await agent.client.call_tool(CONVERSATION, TOOL, {}, revision, call_id="elicit-1")

    def fill_and_submit(p: Page) -> None:
        card = _open_card(p)
        fields = card.get_by_test_id("interaction-field")
        expect(fields).to_have_count(7, timeout=WAIT_MS)
        card.locator('[data-field-id="f0"]').fill("Ada Lovelace")
        card.locator('[data-field-id="f5"]').fill("7")  # "Integer", 1..100
        card.get_by_test_id("interaction-submit").click()
        expect(card).to_have_attribute("data-outcome", "answered", timeout=WAIT_MS)

    await page.run(fill_and_submit, timeout_s=STEP_S)
    done = await agent.terminal("elicit-1")
    assert done["type"] == RESULT, done
    said = _texts(done["payload"]["result"])
    assert "User provided the requested information" in said
    assert "- Name: Ada Lovelace" in said and "- Favorite Integer: 7" in said

    await agent.client.call_tool(CONVERSATION, TOOL, {}, revision, call_id="elicit-2")

    def cancel(p: Page) -> None:
        card = _open_card(p)
        card.get_by_test_id("interaction-cancel").click()
        expect(card).to_have_attribute("data-outcome", "cancelled", timeout=WAIT_MS)

    await page.run(cancel, timeout_s=STEP_S)
    declined = await agent.terminal("elicit-2")
    assert declined["type"] == RESULT, declined
    assert "User declined to provide the requested information" in _texts(
        declined["payload"]["result"]
    )
    await agent.settle()
    for call_id in ("elicit-1", "elicit-2"):
        assert len(agent.of_call(call_id, RESULT, "lineup.v1.tool.error")) == 1
    assert page.console_errors == []
