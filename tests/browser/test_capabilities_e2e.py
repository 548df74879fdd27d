"""The capability gateway's Shell side through the whole runtime in real Chromium (issue 14).

The test app (tests/support/capability_surface_app) opens its Surface; from inside the frame
its own page asks for capabilities over the bridge (`window.requestCapability`), and the
runtime's own permission prompt comes up in the Shell's DOM. The prompt is answered by keyboard
(Tab/Enter, and Escape); a Surface that covers the page, reaches for the Shell's DOM and posts
forged answers while it is up changes nothing (the dialog is on top, and the answer is the
user's click); `file.open` gives the app a new artifact of the picked file's bytes and never a
path; and revoking an "Always allow" on the permissions page makes the next request prompt
again. Browser waits are Playwright's `expect`/`wait_for_function`; no sleeps.
"""

from __future__ import annotations

import hashlib
import json
from functools import partial
from pathlib import Path
from typing import Any, Final

import trio
from playwright.sync_api import Page, expect

from lineup.actors.kernel import ActorKind, AuditRecord
from lineup.tests.support.browser import capability_surface_opened, ready_frame
from lineup.tests.support.runtime import Runtime
from lineup.tests.support.tree import attach, audit_rows

from .conftest import ShellPage
from .test_capabilities_render import note_shown_prompts

WAIT_MS: Final = 10_000
TITLE: Final = "Cap Tester"
PURPOSE: Final = "<b>Tell you</b> when your board is saved"
BUTTONS: Final = ("permission-deny", "permission-allow-once", "permission-allow-always")


async def open_app(nursery: trio.Nursery, data_dir: Path, page: ShellPage) -> Runtime:
    """The runtime with the test app, the Shell loaded, and the app's Surface in front."""
    runtime, _ = await capability_surface_opened(nursery, data_dir, page, wait_ms=WAIT_MS)
    await page.run(surface_frame)
    return runtime


surface_frame = partial(ready_frame, ready='body[data-ready="1"]', wait_ms=WAIT_MS)


async def ask(page: ShellPage, capability: str, input_: dict[str, Any] | None = None) -> None:
    """The Surface's own page asks (its reply lands in the frame's `__results`)."""
    await page.run(
        lambda p: surface_frame(p).evaluate(
            "([c, why, i]) => window.requestCapability(c, why, i)", [capability, PURPOSE, input_]
        )
    )


async def result(page: ShellPage, n: int) -> dict[str, Any]:
    """The Surface's `n`th capability result (the JSON-RPC result: a CapabilityResult)."""

    def wait(p: Page) -> dict[str, Any]:
        frame = surface_frame(p)
        frame.wait_for_function("(n) => window.__results.length >= n", arg=n, timeout=WAIT_MS)
        reply: dict[str, Any] = frame.evaluate("(n) => window.__results[n - 1]", n)
        return reply

    reply = await page.run(wait)
    assert "error" not in reply, reply
    got: dict[str, Any] = reply["result"]
    return got


def prompt_up(p: Page, capability: str) -> None:
    dialog = p.get_by_test_id("permission-prompt")
    expect(dialog).to_be_visible(timeout=WAIT_MS)
    expect(dialog).to_have_attribute("data-capability", capability)


async def test_the_prompt_is_answered_by_keyboard_and_escape_cancels(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    await open_app(nursery, data_dir, page)
    await ask(page, "notification.show", {"title": "Board saved", "body": "All good"})

    def allow_by_keyboard(p: Page) -> None:
        prompt_up(p, "notification.show")
        dialog = p.get_by_test_id("permission-prompt")
        expect(dialog).to_have_attribute("role", "alertdialog")
        heading = p.get_by_test_id("permission-heading")
        expect(heading).to_have_text(f"{TITLE} asks to: Show notifications")
        assert dialog.get_attribute("aria-labelledby") == heading.get_attribute("id")
        expect(p.get_by_test_id("permission-capability")).to_contain_text("notification.show")
        # The app's purpose is text: its markup is shown, never made.
        expect(p.get_by_test_id("permission-purpose")).to_have_text(f"{TITLE} says: “{PURPOSE}”")
        assert dialog.locator("b").count() == 0
        expect(p.get_by_test_id("permission-expiry")).to_contain_text("Expires in")
        expect(p.get_by_test_id("permission-allow-always")).to_be_visible()
        expect(p.get_by_test_id("permission-deny")).to_be_focused()  # the safe default
        expect(dialog).to_have_attribute("data-armed", "true")  # it takes no answer before
        p.keyboard.press("Tab")
        expect(p.get_by_test_id("permission-allow-once")).to_be_focused()
        p.keyboard.press("Enter")
        expect(dialog).to_be_hidden()

    await page.run(allow_by_keyboard)
    first = await result(page, 1)
    assert (first["status"], first["capability"], first["output"]) == (
        "completed", "notification.show", {}
    )  # fmt: skip

    def toasted(p: Page) -> None:
        toast = p.get_by_test_id("capability-notification")
        expect(toast).to_contain_text("Board saved — All good", timeout=WAIT_MS)

    await page.run(toasted)

    await ask(page, "notification.show", {"title": "Again"})

    def escape(p: Page) -> None:
        prompt_up(p, "notification.show")
        expect(p.get_by_test_id("permission-deny")).to_be_focused()
        p.keyboard.press("Escape")
        expect(p.get_by_test_id("permission-prompt")).to_be_hidden()

    await page.run(escape)
    second = await result(page, 2)
    assert (second["status"], second["code"]) == ("cancelled_by_user", "cancelled_by_user")


async def test_a_surface_cannot_cover_click_or_answer_the_prompt(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    await open_app(nursery, data_dir, page)
    await ask(page, "notification.show", {"title": "Hi"})
    await page.run(lambda p: prompt_up(p, "notification.show"))
    outcome = await page.run(lambda p: surface_frame(p).evaluate("() => window.attack()"))
    assert outcome["cover"] == "drawn"
    assert outcome["parentDom"] == "blocked:SecurityError"
    assert outcome["click"] == "blocked:SecurityError"

    def still_the_users(p: Page) -> None:
        # The forged posts were dropped by the bridge and counted on the Surface.
        expect(p.get_by_test_id("surface")).to_have_attribute("data-bridge-rejections", "2")
        expect(p.get_by_test_id("permission-prompt")).to_be_visible()
        # The dialog is on top: at each of its buttons the top document hits that button.
        for test_id in BUTTONS:
            box = p.get_by_test_id(test_id).bounding_box()
            assert box is not None
            point = [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2]
            hit = p.evaluate(
                "([x, y]) => document.elementFromPoint(x, y)?.getAttribute('data-testid')",
                point,
            )
            assert hit == test_id
        # Nothing answered it: the Surface has no result yet.
        assert surface_frame(p).evaluate("() => window.__results.length") == 0
        p.get_by_test_id("permission-deny").click()
        expect(p.get_by_test_id("permission-prompt")).to_be_hidden()

    await page.run(still_the_users)
    denied = await result(page, 1)
    assert (denied["status"], denied["code"]) == ("permission_denied", "permission_denied")


async def test_file_open_gives_the_app_an_artifact_and_no_path(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime = await open_app(nursery, data_dir, page)
    reader = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "reader")
    folder = data_dir / "private-folder-4711"
    folder.mkdir()
    picked = folder / "my-notes.txt"
    content = b"line one\nline two\n"
    picked.write_bytes(content)

    # Too large for what the app takes: the Shell says so and keeps the picker open.
    await ask(page, "file.open", {"media_types": ["text/plain"], "max_bytes": 4})

    def too_large_then_cancel(p: Page) -> None:
        prompt_up(p, "file.open")
        p.get_by_test_id("permission-allow-once").click()
        dialog = p.get_by_test_id("file-open")
        expect(dialog).to_be_visible(timeout=WAIT_MS)
        expect(p.get_by_test_id("file-open-choose")).to_be_focused()
        p.set_input_files('[data-testid="file-open-input"]', str(picked))
        expect(p.get_by_test_id("file-open-error")).to_be_visible()
        expect(dialog).to_be_visible()
        p.keyboard.press("Escape")
        expect(dialog).to_be_hidden()

    await page.run(too_large_then_cancel)
    cancelled = await result(page, 1)
    assert cancelled["status"] == "cancelled_by_user"

    await ask(page, "file.open", {"media_types": ["text/plain"]})

    def pick(p: Page) -> None:
        prompt_up(p, "file.open")
        p.get_by_test_id("permission-allow-once").click()
        expect(p.get_by_test_id("file-open")).to_be_visible(timeout=WAIT_MS)
        accept = p.get_by_test_id("file-open-input").get_attribute("accept") or ""
        assert accept.split(",") == ["text/plain", ".txt"]
        p.set_input_files('[data-testid="file-open-input"]', str(picked))
        expect(p.get_by_test_id("file-open")).to_be_hidden()

    await page.run(pick)
    opened = await result(page, 2)
    assert opened["status"] == "completed", opened
    got = opened["output"]["artifact"]
    assert got["sha256"] == hashlib.sha256(content).hexdigest()
    assert (got["name"], got["media_type"], got["size"]) == ("my-notes.txt", "text/plain", 18)
    assert got["app_scope"] == "capsurface"
    text = json.dumps(opened)
    assert folder.name not in text and str(data_dir) not in text and "fakepath" not in text

    # The audit has the decisions by id, and no path, name or content.
    def decided(rows: tuple[AuditRecord, ...]) -> bool:
        return any(
            r.subject_id == opened["request_id"] and r.event == "gateway.capability.completed"
            for r in rows
        )

    rows = await audit_rows(reader, decided, event_prefix="gateway.capability")
    dumped = json.dumps([r.model_dump(mode="json") for r in rows])
    for secret in (folder.name, "my-notes", str(data_dir), "line one", "Tell you"):
        assert secret not in dumped


async def test_revoking_a_grant_on_the_permissions_page_makes_the_next_request_prompt(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    await open_app(nursery, data_dir, page)
    await ask(page, "notification.show", {"title": "One"})

    def always(p: Page) -> None:
        prompt_up(p, "notification.show")
        p.get_by_test_id("permission-allow-always").click()
        expect(p.get_by_test_id("permission-prompt")).to_be_hidden()
        # From now on, count every time the prompt opens.
        p.evaluate(
            """() => {
              window.__opens = 0;
              const d = document.querySelector('[data-testid="permission-prompt"]');
              new MutationObserver(() => { if (d.open) window.__opens += 1; })
                .observe(d, {attributes: true, attributeFilter: ["open"]});
            }"""
        )

    await page.run(always)
    assert (await result(page, 1))["status"] == "completed"
    await ask(page, "notification.show", {"title": "Two"})
    assert (await result(page, 2))["status"] == "completed"  # remembered: no prompt
    assert await page.run(lambda p: p.evaluate("() => window.__opens")) == 0

    def revoke(p: Page) -> None:
        p.get_by_test_id("permissions-button").focus()
        p.keyboard.press("Enter")  # keyboard reachable
        expect(p.get_by_test_id("permissions-page")).to_be_visible()
        expect(p.get_by_test_id("permissions-button")).to_have_attribute("aria-expanded", "true")
        row = p.locator(
            '[data-testid="grant-row"][data-app-scope="capsurface"]'
            '[data-capability="notification.show"]'
        )
        expect(row).to_have_attribute("data-policy", "allow", timeout=WAIT_MS)
        expect(row.get_by_test_id("grant-origin")).to_contain_text("Set by you")
        # Every installed app has its section (what it declares): this one titled by its app.
        section = p.locator('[data-testid="grant-app"][data-app-scope="capsurface"]')
        expect(section.get_by_test_id("grant-app-title")).to_have_text(TITLE)
        row.get_by_test_id("grant-revoke").click()
        expect(row).to_have_attribute("data-policy", "ask", timeout=WAIT_MS)
        expect(row.get_by_test_id("grant-revoke")).to_have_count(0)
        p.keyboard.press("Escape")
        expect(p.get_by_test_id("permissions-page")).to_be_hidden()

    await page.run(revoke)
    await ask(page, "notification.show", {"title": "Three"})

    def prompts_again(p: Page) -> None:
        prompt_up(p, "notification.show")
        assert p.evaluate("() => window.__opens") == 1
        p.get_by_test_id("permission-deny").click()

    await page.run(prompts_again)
    third = await result(page, 3)
    assert (third["status"], third["code"]) == ("permission_denied", "permission_denied")


# Run in the Surface's frame: 40 requests at once, and another as each one is answered (until
# `cap` in all), as the prompt bomb of issue 27 did.
BOMB: Final = """(cap) => {
  const again = () => window.requestCapability('notification.show', 'Bomb', {title: 'x'});
  const push = window.__results.push.bind(window.__results);
  let asked = 40;
  window.__results.push = (reply) => {
    const n = push(reply);
    if (asked < cap) { asked += 1; again(); }
    return n;
  };
  for (let i = 0; i < 40; i++) again();
}"""


async def test_a_prompt_bomb_is_dismissed_once_and_blocked_on_the_permissions_page(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    await open_app(nursery, data_dir, page)
    await page.run(lambda p: surface_frame(p).evaluate(BOMB, 200))

    def dismiss_then_block(p: Page) -> None:
        prompt_up(p, "notification.show")
        dialog = p.get_by_test_id("permission-prompt")
        expect(p.get_by_test_id("permission-deny")).to_be_focused()
        note_shown_prompts(p)  # from now on, every other prompt the dialog shows
        p.keyboard.press("Escape")
        # The app's other waiting prompts went with it, and it is not asked again at once: the
        # Shell is not modal, and the Permissions page is a key away.
        expect(dialog).to_be_hidden()
        frame = surface_frame(p)
        frame.wait_for_function("() => window.__results.length >= 200", timeout=WAIT_MS)
        expect(dialog).to_be_hidden()
        p.get_by_test_id("permissions-button").focus()
        p.keyboard.press("Enter")
        row = p.locator(
            '[data-testid="grant-row"][data-app-scope="capsurface"]'
            '[data-capability="notification.show"]'
        )
        expect(row).to_have_attribute("data-policy", "ask", timeout=WAIT_MS)
        row.get_by_test_id("grant-block").focus()
        p.keyboard.press("Enter")
        expect(row).to_have_attribute("data-policy", "deny", timeout=WAIT_MS)
        p.keyboard.press("Escape")
        # The app's other waiting prompts were never shown, not even for a moment.
        assert p.evaluate("() => window.__shown") == []

    await page.run(dismiss_then_block)
    replies = await page.run(lambda p: surface_frame(p).evaluate("() => window.__results"))
    outcomes = {(r["result"]["status"], r["result"]["code"]) for r in replies if "result" in r}
    assert outcomes <= {("failed", "rate_limited"), ("cancelled_by_user", "cancelled_by_user")}
    await ask(page, "notification.show", {"title": "After the block"})
    blocked = await result(page, 201)
    assert (blocked["status"], blocked["code"]) == ("policy_denied", "policy_denied")
    await page.run(lambda p: expect(p.get_by_test_id("permission-prompt")).to_be_hidden())


async def test_block_on_the_prompt_refuses_the_apps_next_request_without_a_prompt(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    await open_app(nursery, data_dir, page)
    await ask(page, "notification.show", {"title": "One"})

    def block_by_keyboard(p: Page) -> None:
        prompt_up(p, "notification.show")
        dialog = p.get_by_test_id("permission-prompt")
        expect(dialog).to_have_attribute("data-armed", "true")
        for _ in range(3):
            p.keyboard.press("Tab")
        expect(p.get_by_test_id("permission-block")).to_be_focused()
        p.keyboard.press("Enter")
        expect(dialog).to_be_hidden()
        p.evaluate(
            """() => {
              window.__opens = 0;
              const d = document.querySelector('[data-testid="permission-prompt"]');
              new MutationObserver(() => { if (d.open) window.__opens += 1; })
                .observe(d, {attributes: true, attributeFilter: ["open"]});
            }"""
        )

    await page.run(block_by_keyboard)
    first = await result(page, 1)
    assert (first["status"], first["code"]) == ("permission_denied", "permission_denied")
    await ask(page, "notification.show", {"title": "Two"})
    second = await result(page, 2)
    assert (second["status"], second["code"]) == ("policy_denied", "policy_denied")
    assert await page.run(lambda p: p.evaluate("() => window.__opens")) == 0

    def blocked_on_the_page(p: Page) -> None:
        p.get_by_test_id("permissions-button").click()
        row = p.locator(
            '[data-testid="grant-row"][data-app-scope="capsurface"]'
            '[data-capability="notification.show"]'
        )
        expect(row).to_have_attribute("data-policy", "deny", timeout=WAIT_MS)
        expect(row.get_by_test_id("grant-origin")).to_contain_text("Set by you")

    await page.run(blocked_on_the_page)
