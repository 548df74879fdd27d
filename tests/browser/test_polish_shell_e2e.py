"""The Shell's first screen and its Permissions page as a newcomer meets them (issue 28, items
7 and 13), in real Chromium against the real runtime with its demo Agent: the first screen says
what LineUp is; the "Online" badge is readable (WCAG AA's 4.5:1 for its small text); the
welcome card says until when it can be answered, not "Answer by"; on a phone (390×844) no
header control touches the screen's edge and nothing scrolls sideways; and the Permissions
page opens under the app tab bar, which stays where it was, the page scrolling within the
window instead of pushing the tabs off it.

Every wait is Playwright's `expect` with a deadline; no sleeps.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Page, ViewportSize, expect

from lineup.tests.support.browser import load_shell
from lineup.tests.support.runtime import start_runtime

from .conftest import ShellPage
from .test_app_registry_e2e import WAIT_MS
from .test_interactions_e2e import card

MENU_PROMPT: Final = "What would you like to try?"
PHONE: Final[ViewportSize] = {"width": 390, "height": 844}
EDGE_PX: Final = 8  # the least room between a control and the screen's edge
AA_SMALL_TEXT: Final = 4.5

# The contrast ratio (WCAG 2.1) of an element's text colour on its own background colour,
# both opaque `rgb()` as Chromium computes them.
CONTRAST: Final = """
(element) => {
  const style = getComputedStyle(element);
  const rgb = (text) => text.match(/[0-9.]+/g).slice(0, 3).map(Number);
  const lum = ([r, g, b]) => {
    const c = [r, g, b].map((v) => {
      const s = v / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const [a, b] = [lum(rgb(style.color)), lum(rgb(style.backgroundColor))];
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}
"""


def the_first_screen(p: Page) -> None:
    """What LineUp is, in one line; a readable badge; a welcome card that tells, plainly,
    until when it can be answered."""
    line = p.get_by_test_id("brand-line")
    expect(line).to_be_visible()
    expect(line).to_contain_text("Agent")
    expect(line).to_contain_text("apps")
    badge = p.get_by_test_id("runtime-state")
    expect(badge).to_have_text("Online")
    ratio = badge.evaluate(CONTRAST)
    assert ratio >= AA_SMALL_TEXT, f"the Online badge is {ratio:.2f}:1"
    menu = card(p).filter(has_text=MENU_PROMPT)
    expiry = menu.get_by_test_id("interaction-expiry")
    expect(expiry).to_have_text(re.compile(r"^You can answer until \d{2}:\d{2}$"), timeout=WAIT_MS)


def nothing_at_the_edge_of_a_phone(p: Page) -> None:
    p.set_viewport_size(PHONE)
    header = p.locator("header.top-bar")
    for control in ("runtime-state", "apps-button", "permissions-button", "brand-line"):
        box = p.get_by_test_id(control).bounding_box()
        assert box is not None, control
        assert box["x"] >= EDGE_PX, control
        assert box["x"] + box["width"] <= PHONE["width"] - EDGE_PX, (control, box)
    header_box = header.bounding_box()
    assert header_box is not None and header_box["height"] < 120  # two rows at most
    assert p.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


SCROLL_TO_LAST_ROW = """() => {
  const rows = document.querySelectorAll(
    '[data-testid="permissions-page"] [data-testid="grant-row"]');
  const last = rows[rows.length - 1];
  if (!last) return false;
  last.scrollIntoView({ block: "nearest" });
  const box = last.getBoundingClientRect();
  return box.top >= 0 && box.bottom <= window.innerHeight;
}"""


def the_permissions_page_under_the_tabs(p: Page) -> None:
    """Opened, the page sits under the tab bar, which has not moved; the page ends inside the
    window and scrolls its own list, down to the last app's rows."""
    tabs = p.get_by_test_id("app-switcher")
    expect(tabs).to_be_visible()
    before = tabs.bounding_box()
    assert before is not None
    p.get_by_test_id("permissions-button").click()
    permissions = p.get_by_test_id("permissions-page")
    expect(permissions.get_by_test_id("grant-app")).to_have_count(3, timeout=WAIT_MS)
    expect(p.get_by_test_id("permissions-heading")).to_be_focused()
    expect(tabs).to_be_in_viewport()
    after = tabs.bounding_box()
    assert after is not None and after["y"] == before["y"], (before, after)
    box = permissions.bounding_box()
    assert box is not None
    assert box["y"] >= after["y"] + after["height"]  # under the tabs
    height = p.viewport_size["height"] if p.viewport_size else 0
    assert box["y"] + box["height"] <= height
    assert p.evaluate("document.documentElement.scrollHeight") <= height  # the window: still
    # Scrolled by the page's own script, found afresh at each try: the list is rebuilt when the
    # grants the page asked for on opening arrive, which may be after the rows first shown
    # (those of its last opening) are counted, and a row found before that is detached.
    p.wait_for_function(SCROLL_TO_LAST_ROW, timeout=WAIT_MS)
    expect(permissions.get_by_test_id("grant-row").last).to_be_in_viewport()
    expect(tabs).to_be_in_viewport()
    p.keyboard.press("Escape")
    expect(permissions).to_be_hidden()
    expect(p.get_by_test_id("permissions-button")).to_be_focused()


async def test_the_first_screen_says_what_lineup_is_and_reads_well_on_a_phone(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=True)
    await page.run(load_shell(runtime.shell_url, wait_ms=WAIT_MS))
    await page.run(the_first_screen)
    await page.run(nothing_at_the_edge_of_a_phone)
    assert page.errors == []


async def test_the_permissions_page_opens_under_the_app_tabs_and_scrolls_within_the_window(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    await page.run(load_shell(runtime.shell_url, wait_ms=WAIT_MS))
    await page.run(the_permissions_page_under_the_tabs)  # 900×640: the list is taller
    await page.run(lambda p: p.set_viewport_size(PHONE))
    await page.run(the_permissions_page_under_the_tabs)
    assert page.errors == []
