"""An accessibility pass with axe-core (issue 28): every screen a newcomer's walk visits, in real
Chromium against the real runtime with its demo Agent, has no violation of WCAG 2.1 A or AA.

The screens: the first screen (the welcome message and the menu's question card), a form card
(chosen from the menu), the Permissions page, the App Registry and the Whiteboard (each opened
from the Apps menu; axe runs in the Shell and, separately, in the app's Surface frame, which is
another origin), in the light colour scheme and in the dark one. axe-core comes from npm,
pinned (`_axe.py`). Every wait is Playwright's
`expect`; no sleeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal

import pytest
import trio
from playwright.sync_api import Page, ViewportSize, expect

from lineup.tests.support.browser import SURFACE_FRAME, load_shell, ready_frame
from lineup.tests.support.runtime import start_runtime

from ._axe import axe_source, violations
from .conftest import ShellPage
from .test_app_registry_e2e import WAIT_MS
from .test_interactions_e2e import card

MENU_PROMPT: Final = "What would you like to try?"
WIDE: Final[ViewportSize] = {"width": 1280, "height": 800}
PHONE: Final[ViewportSize] = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def axe() -> str:
    return axe_source()


def surface_of(title: str) -> str:
    return f'{SURFACE_FRAME}[title="{title} (app view)"]'


def found(
    p: Page, axe: str, screen: str, app: str | None = None
) -> dict[str, list[dict[str, Any]]]:
    """The violations on the page now, and in `app`'s Surface frame when one is named."""
    out = {screen: violations(p, axe)}
    if app is not None:
        ready = 'body[data-state="ready"]'
        frame = ready_frame(p, ready=ready, wait_ms=WAIT_MS, selector=surface_of(app))
        out[f"{screen} (its Surface)"] = violations(frame, axe)
    return out


def first_screen(p: Page) -> None:
    menu = card(p).filter(has_text=MENU_PROMPT)
    expect(menu.locator('[data-action-id="input"]')).to_be_enabled(timeout=WAIT_MS)


def a_form_card(p: Page) -> None:
    card(p).filter(has_text=MENU_PROMPT).locator('[data-action-id="input"]').click()
    form = card(p).locator("form")
    expect(form.first).to_be_visible(timeout=WAIT_MS)


def permissions(p: Page) -> None:
    p.get_by_test_id("permissions-button").click()
    expect(p.get_by_test_id("grant-app")).to_have_count(3, timeout=WAIT_MS)


def close_permissions(p: Page) -> None:
    p.get_by_test_id("permissions-close").click()
    expect(p.get_by_test_id("permissions-page")).to_be_hidden()


def open_app(title: str) -> Any:
    def step(p: Page) -> None:
        p.get_by_test_id("apps-button").click()
        p.get_by_test_id("apps-menu").get_by_role("menuitem", name=title).click()
        expect(p.locator(surface_of(title))).to_be_visible(timeout=WAIT_MS)
        expect(p.locator(SURFACE_FRAME)).to_have_count(1, timeout=WAIT_MS)  # the other went

    return step


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_every_screen_of_the_walk_has_no_wcag_21_aa_violation(
    nursery: trio.Nursery,
    data_dir: Path,
    page: ShellPage,
    axe: str,
    scheme: Literal["light", "dark"],
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=True)
    await page.run(lambda p: p.emulate_media(color_scheme=scheme))
    await page.run(lambda p: p.set_viewport_size(WIDE))
    await page.run(load_shell(runtime.shell_url, wait_ms=WAIT_MS))
    seen: dict[str, list[dict[str, Any]]] = {}
    await page.run(first_screen)
    seen |= await page.run(lambda p: found(p, axe, "first screen, the menu card"))
    await page.run(a_form_card)
    seen |= await page.run(lambda p: found(p, axe, "a form card"))
    await page.run(permissions)
    seen |= await page.run(lambda p: found(p, axe, "the Permissions page"))
    await page.run(lambda p: p.set_viewport_size(PHONE))
    seen |= await page.run(lambda p: found(p, axe, "the Permissions page on a phone"))
    await page.run(close_permissions)
    seen |= await page.run(lambda p: found(p, axe, "the first screen on a phone"))
    await page.run(lambda p: p.set_viewport_size(WIDE))
    await page.run(open_app("App Registry"))
    seen |= await page.run(lambda p: found(p, axe, "the App Registry", "App Registry"))
    await page.run(open_app("Whiteboard"))
    seen |= await page.run(lambda p: found(p, axe, "the Whiteboard", "Whiteboard"))
    assert {screen: v for screen, v in seen.items() if v} == {}
    assert len(seen) == 9  # each screen was looked at, and each Surface's frame
    assert page.errors == []
