"""A hostile Surface against the runtime's own UI, in real Chromium through the whole runtime
(issue 27, findings 1 and 2).

The Surface (tests/support/capability_surface_app, with hostile code run in its frame) focuses
itself and an input of its own every 20 ms. While the runtime's question overlay is shown above
it, or its permission prompt is up, the keys the user types reach the runtime's field or
buttons: the Surface that takes focus meanwhile is stopped at once (no browser API keeps a
frame from taking focus), and the user may show it again. And the prompt
takes no answer in its first moments (`ARM_MS`), so a page that asks on the user's first
keydown does not get the Tab+Enter (or the double click's second click) that follows as "Allow
once": Playwright's clock holds that moment still, so the keys land in it on any machine.
Browser waits are Playwright's; no sleeps.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, Final

import trio
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect

from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.browser import capability_surface_opened, ready_frame
from lineup.tests.support.capability_surface_app import CapabilitySurfaceApp
from lineup.tests.support.runtime import CONVERSATION

from .conftest import ShellPage

WAIT_MS: Final = 10_000
SCOPE: Final = CapabilitySurfaceApp.app_info.app_scope
INSTANCE: Final = f"{SCOPE}:c-open"
ARM_MS: Final = 500  # the prompt's (permission_prompt.js)

surface_frame = partial(ready_frame, ready='body[data-ready="1"]', wait_ms=WAIT_MS)

# Run in the Surface's frame: an input of its own, every key it receives logged, and focus
# taken every 20 ms (the frame's window, then its input).
STEAL_FOCUS: Final = """() => {
  const input = document.createElement('input');
  input.setAttribute('aria-label', 'bait');
  document.body.append(input);
  window.__keys = [];
  window.addEventListener('keydown', (e) => window.__keys.push(e.key), true);
  window.setInterval(() => { window.focus(); input.focus(); }, 20);
}"""


async def open_app(nursery: trio.Nursery, data_dir: Path, page: ShellPage) -> tuple[AgentView, str]:
    """The runtime with the test app, the Shell loaded, and the app's Surface in front."""
    _, (agent, revision, _) = await capability_surface_opened(
        nursery, data_dir, page, wait_ms=WAIT_MS
    )
    await page.run(surface_frame)
    return agent, revision


async def in_frame(page: ShellPage, script: str, arg: Any = None) -> Any:
    return await page.run(lambda p: surface_frame(p).evaluate(script, arg))


async def test_a_surface_that_steals_focus_gets_no_key_typed_into_the_runtimes_question(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    agent, revision = await open_app(nursery, data_dir, page)
    await in_frame(page, STEAL_FOCUS)
    await page.run(  # the Surface has the keyboard now
        lambda p: expect(p.get_by_test_id("surface-frame")).to_be_focused(timeout=WAIT_MS)
    )
    question = {
        "title": "Unlock",
        "prompt": "Your PIN?",
        "fields": [{"id": "pin", "label": "PIN", "type": "text", "required": True}],
        "app_session_context": {"app_session_id": f"lu:app_session:{INSTANCE}"},
    }
    with trio.fail_after(WAIT_MS / 1000):
        await agent.client.call_tool(
            CONVERSATION, "interaction.input", question, revision, call_id="c-pin"
        )

    def type_the_pin(p: Page) -> None:
        overlay = p.get_by_test_id("interaction-overlay")
        expect(overlay).to_be_visible(timeout=WAIT_MS)
        field = overlay.get_by_label("PIN")
        field.click()
        # The Surface takes the keyboard back within 20 ms, and is stopped for it. (Keys typed
        # in the few ms between its grab and the Shell hearing of it could still reach a
        # frame the browser runs in a process of its own: docs/surfaces-and-capabilities.md.)
        expect(p.get_by_test_id("surface-stopped")).to_be_visible()
        p.keyboard.type("4711pin", delay=60)  # three of its grabs would fall between keys
        expect(field).to_have_value("4711pin")  # every key, none to the Surface
        expect(field).to_be_focused()
        expect(p.get_by_test_id("surface-frame")).to_have_count(0)
        # The user may show it again: a new frame, its page loaded afresh.
        p.get_by_test_id("overlay-later").click()  # the question folded: the app is usable
        p.get_by_test_id("surface-again").click()
        surface_frame(p)

    await page.run(type_the_pin)


async def test_a_surface_that_steals_focus_gets_no_key_pressed_at_the_permission_prompt(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    await open_app(nursery, data_dir, page)
    await in_frame(page, STEAL_FOCUS)
    await in_frame(page, "() => window.requestCapability('notification.show', 'Hi', {title: 'x'})")

    def tab_then_escape(p: Page) -> None:
        dialog = p.get_by_test_id("permission-prompt")
        expect(dialog).to_be_visible(timeout=WAIT_MS)
        expect(p.get_by_test_id("surface-stopped")).to_be_visible(timeout=WAIT_MS)
        expect(p.get_by_test_id("permission-deny")).to_be_focused()  # given back
        expect(dialog).to_have_attribute("data-armed", "true", timeout=WAIT_MS)
        for _ in range(2):
            p.keyboard.press("Tab", delay=60)
        expect(p.get_by_test_id("permission-allow-always")).to_be_focused()
        p.keyboard.press("Escape")
        expect(dialog).to_be_hidden()

    await page.run(tab_then_escape)


async def test_the_prompt_takes_no_answer_in_its_first_moments(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    await page.run(lambda p: p.clock.install())  # real time flows until paused
    await open_app(nursery, data_dir, page)
    # The page asks on the user's first key, counting on the Tab+Enter that follows.
    await in_frame(
        page,
        """() => window.addEventListener('keydown', () =>
             window.requestCapability('notification.show', 'Hi', {title: 'x'}), {once: true})""",
    )

    def keys_right_after_it_appears(p: Page) -> None:
        p.get_by_test_id("surface-frame").focus()
        pause_soon(p)  # the moment the prompt appears lasts while the keys arrive
        p.keyboard.press("a")
        dialog = p.get_by_test_id("permission-prompt")
        expect(dialog).to_be_visible(timeout=WAIT_MS)
        expect(dialog).to_have_attribute("data-armed", "false")
        p.keyboard.press("Tab")
        p.keyboard.press("Enter")
        p.mouse.dblclick(*center(p, "permission-allow-once"))
        expect(dialog).to_be_visible()  # nothing answered it
        p.clock.run_for(ARM_MS)
        expect(dialog).to_have_attribute("data-armed", "true")
        p.clock.resume()
        p.get_by_test_id("permission-deny").focus()
        p.keyboard.press("Escape")
        expect(dialog).to_be_hidden()

    await page.run(keys_right_after_it_appears)
    reply = await page.run(
        lambda p: surface_frame(p).wait_for_function("() => window.__results[0]").json_value()
    )
    assert reply["result"]["status"] == "cancelled_by_user"


def pause_soon(p: Page) -> None:
    """Stop the page's time a moment from now. Playwright pauses only at a time still to come,
    and on a loaded machine the moment read may be gone when the pause arrives: then a later
    one (timers due meanwhile run, as they would have)."""
    for ahead in (0.1, 0.5, 2.0):  # seconds, Playwright's unit
        try:
            p.clock.pause_at(p.evaluate("Date.now()") / 1000 + ahead)
        except PlaywrightError as exc:
            if "to the past" not in exc.message:
                raise
        else:
            return
    raise AssertionError("the page's clock could not be paused")


def center(p: Page, test_id: str) -> tuple[float, float]:
    box = p.get_by_test_id(test_id).bounding_box()
    assert box is not None
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
