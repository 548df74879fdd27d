"""The Shell's runtime badge through the runtime's lifecycle, in real Chromium against the real
`lineup run`: online, then `Stopping…` once a SIGTERM begins the shutdown, then disconnected."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from playwright.sync_api import Page, expect

from lineup.tests.support.process import lineup_run, stopped

from .conftest import ShellPage

WAIT_MS: Final = 10_000
# Records every state the badge shows, in order: a MutationObserver runs after each task, so
# it sees a state however briefly it was shown.
WATCH_BADGE: Final = """() => {
  const badge = document.querySelector('[data-testid="runtime-state"]');
  window.__badge = [badge.dataset.state];
  window.__labels = {};
  new MutationObserver(() => {
    const state = badge.dataset.state;
    window.__labels[state] = badge.textContent;
    if (window.__badge.at(-1) !== state) window.__badge.push(state);
  }).observe(badge, { attributes: true, childList: true, characterData: true, subtree: true });
}"""


async def test_the_badge_says_stopping_when_the_runtime_shuts_down_then_disconnected(
    page: ShellPage, data_dir: Path
) -> None:
    async with lineup_run(data_dir, within_s=30) as (process, shell_url):

        def load(p: Page) -> None:
            p.goto(shell_url)
            badge = p.get_by_test_id("runtime-state")
            expect(badge).to_have_attribute("data-state", "online", timeout=WAIT_MS)
            expect(badge).to_have_text("Online")
            p.evaluate(WATCH_BADGE)

        await page.run(load)
        await stopped(process, within_s=10)

        def gone(p: Page) -> tuple[list[str], dict[str, str]]:
            badge = p.get_by_test_id("runtime-state")
            expect(badge).to_have_attribute("data-state", "disconnected", timeout=WAIT_MS)
            return p.evaluate("window.__badge"), p.evaluate("window.__labels")

        shown, labels = await page.run(gone)
    # Online, then stopping, told before the hostbridge went; nothing the link said as the
    # tree went down (the AppServer stops too) came between.
    assert shown == ["online", "stopping", "disconnected"], shown
    assert labels["stopping"] == "Stopping…"
