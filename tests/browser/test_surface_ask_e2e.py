"""A Surface asks its user a standard interaction, in real Chromium against the whole runtime:
from inside the frame (`frame.evaluate`) `lineup/ui/request` a confirm; its card appears in the
Shell where the app's own questions show (the app's container); Approve; the frame, and only
it, is told `lineup/notifications/interaction` with the answer. A request that is no standard
one is refused `bridge_params_invalid`: by the Shell's bridge for an unknown kind (counted as a
rejection), by the hostbridge for a malformed confirm (nothing recorded)."""

from __future__ import annotations

from pathlib import Path

import trio
from playwright.sync_api import Page, expect

from .conftest import ShellPage
from .test_surfaces_e2e import WAIT_MS, in_frame, notified, surfacer_opened

APP_CARD = '[data-testid="interaction-card"][data-place="app"]'


async def test_a_surface_asks_a_confirm_its_card_is_answered_in_the_shell_and_it_hears_the_answer(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    _, agent = await surfacer_opened(nursery, data_dir, page)
    with trio.fail_after(WAIT_MS / 1000):
        await agent.terminal("s-open")
    await in_frame(page, "() => window.rpc('ui/initialize', {protocolVersion: '2026-01-26'})")
    await in_frame(page, "() => window.notify('ui/notifications/initialized', {})")

    asked = await in_frame(
        page,
        """() => window.rpc('lineup/ui/request', {request: {kind: 'confirm',
            title: 'Keep the notes', prompt: 'Keep them?', approve_label: 'Keep'}})""",
    )
    interaction_id = asked["result"]["interaction_id"]
    assert interaction_id.startswith("lu:interaction:surface:")

    def approve(p: Page) -> None:
        card = p.locator(APP_CARD)
        expect(card).to_have_count(1, timeout=WAIT_MS)
        expect(card).to_contain_text("Keep the notes")
        expect(p.get_by_test_id("surface")).to_be_visible()  # the Surface stays beside it
        card.get_by_test_id("interaction-approve").click(timeout=WAIT_MS)

    await page.run(approve)
    told = await notified(page, "lineup/notifications/interaction", "() => true")
    assert told["params"] == {
        "interaction_id": interaction_id,
        "state": "completed",
        "result": {"approved": True},
    }

    # The Shell's bridge refuses an unknown kind (a rejection, counted); the hostbridge a
    # confirm without its prompt. Neither shows a card.
    unknown = await in_frame(
        page, "() => window.rpc('lineup/ui/request', {request: {kind: 'poll', title: 'x'}})"
    )
    assert unknown["error"]["code"] == -32602
    assert unknown["error"]["data"] == {"code": "bridge_params_invalid"}
    malformed = await in_frame(
        page, "() => window.rpc('lineup/ui/request', {request: {kind: 'confirm', title: 'x'}})"
    )
    assert malformed["error"]["data"] == {"code": "bridge_params_invalid"}

    def one_told(p: Page) -> None:
        expect(p.get_by_test_id("surface")).to_have_attribute("data-bridge-rejections", "1")
        expect(p.locator(APP_CARD)).to_have_count(1)  # the answered one only

    await page.run(one_told)
    received = await in_frame(
        page,
        "() => window.__received.filter((m) => m.method === 'lineup/notifications/interaction')",
    )
    assert len(received) == 1  # told once
