"""The App Registry in a user's words, in real Chromium against a real `lineup run --catalog`
started as `make run` starts it (issue 28, item 9).

It read like an admin table: kind `bundled-reference`, signer key ids in a column, the game
listed as `draw-and-guess`, and after a successful install the game's catalog entry read
"installed already (this version or a newer one) app_version_mismatch". Now every app is named
by its title (Draw and Guess before it is installed too: the title of its verified manifest),
what it is and how it stands are words, its id and signer's key sit in a details line, and a
finished install reads as a success: "Installed Draw and Guess 1.0.0." and "Installed" on its
entry, with no code shown; on a phone's width each row stacks, every column inside the frame.
Browser waits are Playwright's auto-waiting `expect`; no sleeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest
import trio
from playwright.sync_api import Locator, Page, expect

from lineup.tests.support.session_builds import make_run_catalog

from .conftest import ShellPage
from .test_app_registry_e2e import FRAME, WAIT_MS, allow_once, registry, registry_opened, row

BUNDLE: Final = "draw-and-guess-1.0.0.lineup"
SCOPE: Final = "draw-and-guess"
TITLE: Final = "Draw and Guess"
# What the table said of the runtime's apps and of a catalog entry, and must no longer say.
ADMIN_WORDS: Final = ("bundled-reference", "bundled", "installed already", "app_version_mismatch")


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The catalog `make run` would offer: every example and its MCP server packed and signed
    (once a test session, `lineup.tests.support.session_builds`)."""
    out = make_run_catalog(tmp_path_factory)
    assert (out / BUNDLE).is_file()
    return out


def entry(p: Page) -> Locator:
    return registry(p).locator(f'#available tr[data-file="{BUNDLE}"]')


def offered_by_title(p: Page) -> None:
    expect(registry(p).locator("body")).to_have_attribute("data-state", "ready", timeout=WAIT_MS)
    name = entry(p).get_by_role("rowheader")
    expect(name.locator(":scope > span").first).to_have_text(TITLE, timeout=WAIT_MS)
    details = name.locator(".details")
    expect(details).to_contain_text(f"App id {SCOPE}")
    expect(details).to_contain_text("signed by key ed25519:")
    # The runtime's own apps say what they are in words.
    expect(row(p, "whiteboard")).to_contain_text("Comes with LineUp")
    expect(row(p, "whiteboard")).to_contain_text("Ready")
    expect(row(p, "chat")).to_contain_text("Part of LineUp")
    table = registry(p).locator("table.apps").first
    for word in ADMIN_WORDS:
        expect(table).not_to_contain_text(word)


def installed_reads_as_success(p: Page) -> None:
    entry(p).get_by_role("button", name=f"Install {TITLE} 1.0.0").click(timeout=WAIT_MS)
    allow_once(p, "app.install")
    status = registry(p).locator("#status")
    expect(status).to_have_text(f"Installed {TITLE} 1.0.0.", timeout=WAIT_MS)
    expect(status).to_have_attribute("data-tone", "ok")
    expect(registry(p).locator("#status-code")).to_be_hidden()
    # Its catalog entry: installed, a success; the code stays an attribute, never words.
    expect(entry(p)).to_have_attribute("data-code", "app_version_mismatch", timeout=WAIT_MS)
    reason = entry(p).locator(".reason")
    expect(reason).to_have_text("Installed")
    expect(reason).to_have_class("tone-ok reason")
    for word in ADMIN_WORDS:
        expect(registry(p).locator("#available")).not_to_contain_text(word)
    # Its row: by title, what it is, how it stands, the last change.
    game = row(p, SCOPE)
    expect(game.get_by_role("rowheader").locator(":scope > span").first).to_have_text(TITLE)
    expect(game).to_contain_text("Installed by you")
    expect(game).to_contain_text("Ready")
    expect(game).to_contain_text("Installed 1.0.0")
    expect(game.get_by_role("button", name=f"Disable {TITLE}")).to_have_count(1)


def whole_on_a_phone(p: Page) -> None:
    """At 390 px every column of a row is inside the registry's frame (stacked), none cut off
    beyond its right edge."""
    p.set_viewport_size({"width": 390, "height": 844})
    frame = p.locator(FRAME).bounding_box()
    assert frame is not None
    for label in ("What it is", "Status", "Last change", "Actions"):
        cell = row(p, SCOPE).locator(f'td[data-label="{label}"]')
        expect(cell).to_be_visible(timeout=WAIT_MS)
        box = cell.bounding_box()
        assert box is not None and box["x"] + box["width"] <= frame["x"] + frame["width"], label


async def test_the_registry_names_apps_by_title_in_words_and_an_install_reads_as_success(
    nursery: trio.Nursery, data_dir: Path, catalog: Path, page: ShellPage
) -> None:
    await registry_opened(nursery, data_dir, page, catalog=catalog)
    await page.run(offered_by_title)
    await page.run(installed_reads_as_success)
    await page.run(whole_on_a_phone)
    assert page.errors == []
