"""An artifact through the whole runtime in real Chromium (issue 13): a MiniApp makes one
(tests/support/artifact_app.py), its card shows in the chat, in the sub-session group of the
instance that made it, and the user opens and downloads it with the card's links: the bytes
the app gave, under the headers that keep them inert. A link with another ticket is a 404."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Page, expect

from lineup.tests.e2e.test_artifacts import start
from lineup.tests.support.artifact_app import ArtMaker
from lineup.tests.support.browser import called_from_the_shell

from .conftest import ShellPage

WAIT_MS: Final = 10_000
NAME: Final = "meeting-notes.txt"
CONTENT: Final = "the notes of the meeting\n"


async def test_an_apps_artifact_is_shown_in_its_group_and_opens_and_downloads(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime = await start(nursery, data_dir, ArtMaker)
    base = runtime.shell_url.split("/#")[0]
    arguments = {"mode": "create", "name": NAME, "text": CONTENT, "request_id": "r-1"}
    _, _, terminal = await called_from_the_shell(
        nursery, runtime, page, "artmaker.run", arguments, call_id="c1", wait_ms=WAIT_MS
    )
    result = terminal["payload"]["result"]
    [artifact_id] = result["ids"]

    def shown(p: Page) -> None:
        card = p.locator(f'[data-testid="artifact-card"][data-artifact-id="{artifact_id}"]')
        expect(card).to_have_count(1, timeout=WAIT_MS)
        group = p.get_by_test_id("app-session-group")
        expect(group.locator('[data-testid="artifact-card"]')).to_have_count(1)
        # The app's instance is in front (a view of no kind this Shell draws): back to the chat.
        p.locator('[data-testid="app-tab"][data-app-scope="chat"]').click()
        expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)
        group.get_by_test_id("app-session-toggle").click()
        expect(card.get_by_test_id("artifact-name")).to_have_text(NAME)
        expect(card.get_by_test_id("artifact-meta")).to_have_text(f"Text · {len(CONTENT)} B")
        download = card.get_by_test_id("artifact-download")
        download.focus()
        expect(download).to_be_focused()
        with p.expect_download() as got:
            p.keyboard.press("Enter")  # from the keyboard
        assert got.value.suggested_filename == NAME
        assert Path(got.value.path()).read_text() == CONTENT
        href = card.get_by_test_id("artifact-open").get_attribute("href")
        assert href is not None and href.startswith(f"/artifacts/{artifact_id}?ticket=")
        opened = p.context.request.get(base + href)
        assert (opened.status, opened.text()) == (200, CONTENT)
        assert opened.headers["x-content-type-options"] == "nosniff"
        assert opened.headers["content-disposition"] == f'attachment; filename="{NAME}"'
        assert opened.headers["content-security-policy"].endswith("; sandbox")
        forged = p.context.request.get(f"{base}/artifacts/{artifact_id}?ticket={'0' * 32}")
        assert forged.status == 404
        assert CONTENT not in forged.text()

    await page.run(shown)
