"""The App Registry's "Available" section in real Chromium against the real runtime, started as
`make run` starts it (`lineup run --catalog DIR`, the embedded default, whose catalog key is
trusted without being in trusted-keys.json).

The catalog holds two bundles signed by the test's key. Both are listed with their app, version
and signer, each with an Install button. One is then tampered in one byte on disk: Install on it
is refused by the runtime with its code (`digest_mismatch`) before the user is asked anything,
the status line says why, the entry is listed with its code and no button, and nothing is
installed. The other is installed with the keyboard alone (focus, Enter), allowed in the
runtime's prompt (which names the app, the version and the signer): it joins the apps and the
Agent's inventory, and its entry says "Installed".
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Frame, Locator, Page, expect

from lineup.sdk.bundle import SigningKey
from lineup.sdk.trust import TRUSTED_KEYS_FILE
from lineup.tests.support.bundles import build_bundle, flip_byte, write_catalog

from .conftest import ShellPage
from .test_app_registry_e2e import (
    FRAME,
    WAIT_MS,
    registry,
    registry_in_front,
    registry_opened,
    row,
    tools_at,
)

KEY: Final = SigningKey(b"\x0b" * 32)
GOOD: Final = "deliver-1.0.lineup"
TAMPERED: Final = "spoiled-1.0.lineup"


def registry_frame(p: Page) -> Frame:
    frame = p.locator(FRAME).element_handle(timeout=WAIT_MS).content_frame()
    assert frame is not None
    return frame


def available(p: Page, name: str) -> Locator:
    return registry(p).locator(f'#available tr[data-file="{name}"]')


def both_offered(p: Page) -> None:
    section = registry(p).get_by_role("table", name="Available")
    expect(section).to_be_visible(timeout=WAIT_MS)
    for name, scope in ((GOOD, "deliver"), (TAMPERED, "spoiled")):
        entry = available(p, name)
        expect(entry).to_contain_text(scope, timeout=WAIT_MS)
        expect(entry).to_contain_text("1.0")
        expect(entry).to_contain_text(KEY.key_id)
        expect(entry.get_by_role("button", name=f"Install {scope} 1.0")).to_be_enabled()


# Counts every button the registry draws disabled from now on (it redraws its rows on each state).
WATCH_DISABLED: Final = """() => {
  window.disabledDrawn = 0;
  new MutationObserver((changes) => {
    for (const change of changes) for (const node of change.addedNodes)
      if (node.querySelectorAll) window.disabledDrawn +=
        node.querySelectorAll("#available button:disabled, #rows button:disabled").length;
  }).observe(document.body, { subtree: true, childList: true });
}"""


def a_refresh_leaves_the_keyboard_where_it_is(p: Page) -> None:
    """A refresh only reads: while it is on its way, the buttons stay usable and the one the
    keyboard is on keeps the focus (it used to be drawn disabled, which dropped the focus)."""
    frame = registry_frame(p)
    button = available(p, GOOD).get_by_role("button", name="Install deliver 1.0")
    expect(button).to_be_enabled(timeout=WAIT_MS)
    button.focus()
    expect(button).to_be_focused()
    frame.evaluate(WATCH_DISABLED)
    listed = int(frame.evaluate("document.body.dataset.listed"))
    frame.evaluate('document.getElementById("refresh").click()')  # a click keeps the focus
    expect(registry(p).locator("body")).not_to_have_attribute(
        "data-listed", str(listed), timeout=WAIT_MS
    )
    expect(registry(p).locator("#refresh")).to_be_enabled(timeout=WAIT_MS)
    expect(button).to_be_focused()
    assert frame.evaluate("window.disabledDrawn") == 0


def tampered_refused(p: Page) -> None:
    available(p, TAMPERED).get_by_role("button", name="Install spoiled 1.0").click(timeout=WAIT_MS)
    status = registry(p).locator("#status")
    expect(status).to_have_text(
        "Install failed. The app's content is not the one its publisher signed.",
        timeout=WAIT_MS,
    )
    expect(p.get_by_test_id("permission-prompt")).to_be_hidden()  # never asked
    entry = available(p, TAMPERED)
    expect(entry).to_have_attribute("data-code", "digest_mismatch", timeout=WAIT_MS)
    expect(entry).to_contain_text("Details: digest_mismatch")  # the code, for the curious
    expect(entry.get_by_role("button")).to_have_count(0)
    expect(row(p, "spoiled")).to_have_count(0)


def installed_with_the_keyboard(p: Page) -> None:
    button = available(p, GOOD).get_by_role("button", name="Install deliver 1.0")
    button.focus(timeout=WAIT_MS)
    expect(button).to_be_focused()
    p.keyboard.press("Enter")
    prompt = p.get_by_test_id("permission-prompt")
    expect(prompt).to_be_visible(timeout=WAIT_MS)
    expect(prompt.get_by_test_id("permission-capability")).to_contain_text("app.install")
    expect(prompt.get_by_test_id("permission-detail")).to_contain_text(
        f"deliver 1.0, signed by {KEY.key_id}"
    )
    # Deny has the focus (the safe default); Tab reaches Allow once, Enter takes it.
    expect(prompt.get_by_test_id("permission-deny")).to_be_focused(timeout=WAIT_MS)
    expect(prompt).to_have_attribute("data-armed", "true")  # no answer in its first moments
    p.keyboard.press("Tab")
    expect(prompt.get_by_test_id("permission-allow-once")).to_be_focused()
    p.keyboard.press("Enter")
    expect(prompt).to_be_hidden(timeout=WAIT_MS)
    status = registry(p).locator("#status")
    expect(status).to_have_text("Installed deliver 1.0.", timeout=WAIT_MS)
    expect(row(p, "deliver")).to_have_attribute("data-enabled", "true", timeout=WAIT_MS)
    entry = available(p, GOOD)
    expect(entry).to_have_attribute("data-code", "app_version_mismatch", timeout=WAIT_MS)
    expect(entry.locator(".reason")).to_have_text("Installed")  # a success, not a refusal
    expect(entry.get_by_role("button")).to_have_count(0)


def clean(p: Page) -> None:
    assert p.evaluate("window.__cspViolations") == []


async def test_the_app_registry_installs_from_the_catalog_and_refuses_a_tampered_bundle(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path, page: ShellPage
) -> None:
    """About ten seconds on a loaded machine: two installs through the Shell end to end (the
    catalog read, each bundle downloaded, its signature verified, one installed and opened,
    the tampered one refused with its code), which is the claim."""
    good = build_bundle(tmp_path / "src", KEY, scope="deliver", version="1.0")
    spoiled = build_bundle(tmp_path / "src", KEY, scope="spoiled", version="1.0")
    folder = write_catalog(tmp_path / "catalog", KEY, {GOOD: good, TAMPERED: spoiled})

    agent, revision = await registry_opened(nursery, data_dir, page, catalog=folder)
    await page.run(registry_in_front)
    await page.run(both_offered)
    await page.run(a_refresh_leaves_the_keyboard_where_it_is)

    # One byte of the second bundle flipped on disk, after it was listed installable.
    (folder / TAMPERED).write_bytes(flip_byte(spoiled))
    await page.run(tampered_refused)
    assert not (data_dir / "bundles" / "spoiled").exists()

    await page.run(installed_with_the_keyboard)
    assert await tools_at(agent, present=True) != revision
    assert (data_dir / "bundles" / "deliver" / "1.0" / "bundle.lineup").read_bytes() == good
    assert not (data_dir / TRUSTED_KEYS_FILE).exists()  # the catalog's key is never written
    await page.run(clean)
    assert page.off_loopback() == [], "a request left 127.0.0.1"
    assert page.errors == []
