"""`interaction.confirm` through `lineup mcp` in real Chromium: the MCP client's call is the
card the user clicks, and the MCP result carries the answer; the same call given up by the
client shows the card dismissed, and the Agent side gets exactly one terminal message."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp_types as types
import trio
from mcp.client.session import ClientSession
from playwright.sync_api import Page, expect

from lineup.tests.e2e.test_mcp import mcp_session

from .conftest import ShellPage
from .test_interactions_e2e import CONFIRM, card, finals, started
from .test_task_dashboard_e2e import WAIT_MS, WAIT_S


async def test_a_confirm_called_through_mcp_is_answered_by_a_click_and_a_cancel_dismisses_it(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime, agent, _revision = await started(nursery, data_dir, page)
    async with mcp_session(runtime.supervisor.data_dir) as (session, _seen):
        with trio.fail_after(WAIT_S):
            approved = await _answered_by_click(session, page)
        assert not approved.is_error
        assert approved.structured_content == {"approved": True}

        async with anyio.create_task_group() as calls:
            calls.start_soon(session.call_tool, "interaction.confirm", {**CONFIRM, "title": "Ship"})

            def shown(p: Page) -> None:
                expect(
                    card(p).filter(has_text="Ship").get_by_test_id("interaction-approve")
                ).to_be_visible(timeout=WAIT_MS)

            await page.run(shown)
            calls.cancel_scope.cancel()  # the client gives up: notifications/cancelled

        def dismissed(p: Page) -> None:
            expect(
                card(p).filter(has_text="Ship").get_by_test_id("interaction-outcome")
            ).to_have_text("Dismissed", timeout=WAIT_MS)

        await page.run(dismissed)

    await agent.settle()
    calls_seen = sorted(
        {m["payload"]["call_id"] for m in agent.seen if m["type"].startswith("lineup.v1.tool.")}
    )
    assert len(calls_seen) == 2
    ends = [await finals(agent, call_id) for call_id in calls_seen]
    kinds = sorted((e[0]["type"], e[0]["payload"].get("code")) for e in ends)
    assert [len(e) for e in ends] == [1, 1]  # exactly one terminal message each
    assert kinds == [
        ("lineup.v1.tool.error", "interaction_dismissed"),
        ("lineup.v1.tool.result", None),
    ]
    assert page.console_errors == []


async def _answered_by_click(session: ClientSession, page: ShellPage) -> types.CallToolResult:
    results: list[types.CallToolResult] = []
    async with anyio.create_task_group() as calls:

        async def ask() -> None:
            results.append(await session.call_tool("interaction.confirm", CONFIRM))

        calls.start_soon(ask)

        def click(p: Page) -> None:
            confirm = card(p).filter(has_text="Deploy now?")
            confirm.get_by_test_id("interaction-approve").click(timeout=WAIT_MS)
            expect(confirm.get_by_test_id("interaction-outcome")).to_have_text(
                "You chose: Deploy it", timeout=WAIT_MS
            )

        await page.run(click)
    return results[0]
