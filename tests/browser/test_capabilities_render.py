"""The Shell's capability components in real Chromium against the real hostbridge actor and a
fake gateway (tests/hostbridge/test_capabilities.py `CapabilityBus`): the prompt's answers by
keyboard reach the gateway as the user gave them, prompts queue one at a time and go when the
runtime ends them, `file.open` sends the picked file's bytes, and the permissions page sets a
grant. (The whole runtime: test_capabilities_e2e.py.)"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Page, expect

from lineup.actors.gateway.messages import (
    GrantSetRequest,
    PromptAnswerRequest,
    ProviderDoneRequest,
)
from lineup.hostbridge import HostbridgeActor
from lineup.hostbridge.messages import (
    CapabilityEndedEvent,
    CapabilityPromptEvent,
    ProviderRunEvent,
)
from lineup.tests.hostbridge.test_actor import TOKEN, start_hostbridge
from lineup.tests.hostbridge.test_capabilities import (
    CapabilityBus,
    no_env,
    prompt_view,
    run_view,
)

from .conftest import ShellPage

WAIT_MS: Final = 5_000


async def shell_against_a_fake_gateway(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage
) -> tuple[HostbridgeActor, CapabilityBus]:
    """The real hostbridge with a fake gateway (`CapabilityBus`), its Shell loaded and online."""
    bus = CapabilityBus()
    actor, _bus, port = await start_hostbridge(nursery, tmp_path, bus)

    def load(p: Page) -> None:
        p.goto(f"http://127.0.0.1:{port}/#token={TOKEN}")
        expect(p.get_by_test_id("runtime-state")).to_have_attribute("data-state", "online")

    await page.run(load)
    return actor, bus


def note_shown_prompts(p: Page) -> None:
    """From now on, `window.__shown` lists every prompt the runtime's dialog shows."""
    p.evaluate(
        """() => {
          window.__shown = [];
          const d = document.querySelector('[data-testid="permission-prompt"]');
          new MutationObserver(() => {
            const id = d.getAttribute('data-prompt-id');
            if (id) window.__shown.push(id);
          }).observe(d, {attributes: true, attributeFilter: ["data-prompt-id"]});
        }"""
    )


async def test_prompts_providers_and_the_permissions_page_against_a_fake_gateway(  # noqa: PLR0915
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage
) -> None:
    actor, bus = await shell_against_a_fake_gateway(nursery, tmp_path, page)
    actor.on_capability_prompt(CapabilityPromptEvent(prompt=prompt_view("p1")), no_env())
    actor.on_capability_prompt(
        CapabilityPromptEvent(prompt=prompt_view("p2", rememberable=False, detail="Runtime says")),
        no_env(),
    )

    def first(p: Page) -> None:
        dialog = p.get_by_test_id("permission-prompt")
        expect(dialog).to_have_attribute("data-prompt-id", "p1")
        expect(p.get_by_test_id("permission-deny")).to_be_focused()
        expect(p.get_by_test_id("permission-detail")).to_be_hidden()
        expect(dialog).to_have_attribute("data-armed", "true")  # no answer in its first moments
        p.keyboard.press("Tab")
        p.keyboard.press("Tab")
        expect(p.get_by_test_id("permission-allow-always")).to_be_focused()
        p.keyboard.press("Enter")
        # The next one, at once: not rememberable, with the runtime's line.
        expect(dialog).to_have_attribute("data-prompt-id", "p2")
        expect(p.get_by_test_id("permission-allow-always")).to_be_hidden()
        expect(p.get_by_test_id("permission-detail")).to_have_text("Runtime says")
        expect(p.get_by_test_id("permission-deny")).to_be_focused()

    await page.run(first)
    await bus.until(lambda: any(isinstance(r, PromptAnswerRequest) for r in bus.requests))
    # The runtime ends p2 elsewhere (another Shell answered): the dialog goes.
    actor.on_capability_ended(CapabilityEndedEvent(id="p2", outcome="deny"), no_env())
    await page.run(lambda p: expect(p.get_by_test_id("permission-prompt")).to_be_hidden())

    run = run_view("r1", "file.open", input={"media_types": ["text/csv"]})
    actor.on_capability_run(ProviderRunEvent(run=run), no_env())
    picked = tmp_path / "table.csv"
    picked.write_bytes(b"a,b\n1,2\n")

    def pick(p: Page) -> None:
        expect(p.get_by_test_id("file-open")).to_be_visible()
        expect(p.get_by_test_id("file-open-heading")).to_have_text(
            "Test Surface asks you to open a file"
        )
        p.set_input_files('[data-testid="file-open-input"]', str(picked))
        expect(p.get_by_test_id("file-open")).to_be_hidden()

    await page.run(pick)
    await bus.until(lambda: any(isinstance(r, ProviderDoneRequest) for r in bus.requests))

    def permissions(p: Page) -> None:
        p.get_by_test_id("permissions-button").click()
        expect(p.get_by_test_id("permissions-heading")).to_be_focused()
        row = p.get_by_test_id("grant-row")
        expect(row).to_have_attribute("data-policy", "ask")
        expect(row.get_by_test_id("grant-revoke")).to_have_count(0)  # nothing granted
        row.get_by_test_id("grant-block").click()
        expect(row).to_have_attribute("data-policy", "deny")
        p.keyboard.press("Escape")
        expect(p.get_by_test_id("permissions-page")).to_be_hidden()
        expect(p.get_by_test_id("permissions-button")).to_be_focused()

    await page.run(permissions)
    answers = [
        (r.prompt_id, r.decision) for r in bus.requests if isinstance(r, PromptAnswerRequest)
    ]
    assert answers == [("p1", "allow_always")]
    [done] = [r for r in bus.requests if isinstance(r, ProviderDoneRequest)]
    assert done.run_id == "r1" and done.status == "completed" and done.file is not None
    assert (done.file.name, done.file.media_type) == ("table.csv", "text/csv")
    assert base64.b64decode(done.file.content_b64) == b"a,b\n1,2\n"
    [grant] = [r for r in bus.requests if isinstance(r, GrantSetRequest)]
    assert (grant.app_scope, grant.capability, grant.policy) == (
        "surfacetest", "notification.show", "deny"
    )  # fmt: skip


async def test_prompts_of_different_apps_interleave_and_the_prompt_offers_block(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage
) -> None:
    actor, bus = await shell_against_a_fake_gateway(nursery, tmp_path, page)
    bomber = {"app_scope": "bomber", "app_title": "Bomber"}
    for prompt in (
        prompt_view("a1").model_copy(update=bomber),
        prompt_view("a2").model_copy(update=bomber),
        prompt_view("b1"),  # another app's, asked after the bomber's two
    ):
        actor.on_capability_prompt(CapabilityPromptEvent(prompt=prompt), no_env())
    # The runtime ends a1 (answered in another Shell): told after the three, on the same
    # socket, so this Shell holds all three when it picks the next.
    actor.on_capability_ended(CapabilityEndedEvent(id="a1", outcome="cancel"), no_env())

    def answer(p: Page) -> None:
        dialog = p.get_by_test_id("permission-prompt")
        # The other app's question comes next, not the rest of the bomber's queue.
        expect(dialog).to_have_attribute("data-prompt-id", "b1")
        block = p.get_by_test_id("permission-block")
        expect(block).to_have_accessible_name(
            "Block Test Surface from asking to: Show notifications"
        )
        expect(dialog).to_have_attribute("data-armed", "true")
        for _ in range(3):
            p.keyboard.press("Tab")
        expect(block).to_be_focused()
        p.keyboard.press("Enter")
        expect(dialog).to_have_attribute("data-prompt-id", "a2")
        expect(dialog).to_have_attribute("data-armed", "true")

    await page.run(answer)
    await bus.until(lambda: any(isinstance(r, PromptAnswerRequest) for r in bus.requests))
    answers = [
        (r.prompt_id, r.decision) for r in bus.requests if isinstance(r, PromptAnswerRequest)
    ]
    assert answers == [("b1", "block")]
    # The runtime ends the bomber's other prompt (answered elsewhere): the dialog goes,
    # and the header's Permissions button is in reach by keyboard.
    actor.on_capability_ended(CapabilityEndedEvent(id="a2", outcome="cancel"), no_env())

    def permissions(p: Page) -> None:
        expect(p.get_by_test_id("permission-prompt")).to_be_hidden()
        # Unarmed once gone: a wait for the next prompt's arming cannot pass on this one's.
        expect(p.get_by_test_id("permission-prompt")).to_have_attribute("data-armed", "false")
        p.get_by_test_id("permissions-button").focus()
        p.keyboard.press("Enter")
        expect(p.get_by_test_id("permissions-heading")).to_be_focused()

    await page.run(permissions)


async def test_a_prompt_on_its_way_when_the_user_says_no_is_never_shown(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage
) -> None:
    actor, bus = await shell_against_a_fake_gateway(nursery, tmp_path, page)
    actor.on_capability_prompt(CapabilityPromptEvent(prompt=prompt_view("p1")), no_env())

    def dismiss(p: Page) -> None:
        dialog = p.get_by_test_id("permission-prompt")
        expect(dialog).to_have_attribute("data-prompt-id", "p1")
        note_shown_prompts(p)
        p.keyboard.press("Escape")
        expect(dialog).to_be_hidden()

    await page.run(dismiss)
    await bus.until(lambda: any(isinstance(r, PromptAnswerRequest) for r in bus.requests))
    # The app's next prompt of the capability was on its way before the runtime took the no
    # (which ends it): it arrives after the Escape, before the runtime says p1 ended.
    actor.on_capability_prompt(CapabilityPromptEvent(prompt=prompt_view("p2")), no_env())
    # Another capability of the same app is a question of its own: it is shown.
    other = prompt_view("q1", capability="artifact.save")
    actor.on_capability_prompt(CapabilityPromptEvent(prompt=other), no_env())

    def other_only(p: Page) -> None:
        expect(p.get_by_test_id("permission-prompt")).to_have_attribute("data-prompt-id", "q1")
        p.keyboard.press("Escape")
        expect(p.get_by_test_id("permission-prompt")).to_be_hidden()

    await page.run(other_only)
    for ended in ("p1", "p2", "q1"):
        actor.on_capability_ended(CapabilityEndedEvent(id=ended, outcome="cancel"), no_env())
    # Once the runtime has ended what the no answered, a later prompt is the app's new question.
    actor.on_capability_prompt(CapabilityPromptEvent(prompt=prompt_view("p3")), no_env())

    def later(p: Page) -> None:
        expect(p.get_by_test_id("permission-prompt")).to_have_attribute("data-prompt-id", "p3")
        assert p.evaluate("() => window.__shown") == ["q1", "p3"]

    await page.run(later)
