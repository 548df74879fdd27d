"""The Surface's share of its app's SDK (seed 004 §6: "the same semantics, restricted"; issue
29, item 1) through the whole runtime in real Chromium: the navigator's Surface
(tests/support/nav_app/web) uses the SDK's bridge client (`LineUpBridge.state`, `.apps`,
`.actions`) from inside its sandboxed frame, for its own app and instance. It reads its app's
view model, lists the apps it may open, launches one behind (the Shell's app list shows it),
is refused what the app would be refused, each with its code, and brings what it launched to
the front, which the Shell shows. Browser waits are Playwright's; no sleeps.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, Final

import trio
from playwright.sync_api import Page, expect

from lineup.tests.e2e.test_navigation import start_navigator
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.browser import called_from_the_shell, ready_frame

from .conftest import ShellPage

WAIT_MS: Final = 15_000
ME: Final = "navigator:n-open"
BOARD: Final = "whiteboard:nav-navigator-s1"

panel = partial(ready_frame, ready='body[data-ready="1"]', wait_ms=WAIT_MS)


async def attempt(page: ShellPage, name: str, call: str) -> Any:
    """Run `call` (a JS function of the bridge) in the Surface's own page; what it got (a
    value, or `!code` for a refusal)."""

    def run(p: Page) -> Any:
        frame = panel(p)
        frame.evaluate(f"() => window.attempt({name!r}, {call})")
        return frame.evaluate(f"() => window.__got[{name!r}]")

    return await page.run(run)


def tab(p: Page, instance_id: str) -> Any:
    return p.locator(f'[data-testid="app-tab"][data-instance-id="{instance_id}"]')


async def navigator_in_front(nursery: trio.Nursery, data_dir: Path, page: ShellPage) -> AgentView:
    """The runtime with the navigator, the Shell loaded, and the Agent's `navigator.run` of a
    Surface ended (`ME` in front); the Agent."""
    runtime = await start_navigator(nursery, data_dir)
    called = await called_from_the_shell(
        nursery,
        runtime,
        page,
        "navigator.run",
        {"mode": "surface"},
        call_id="n-open",
        wait_ms=WAIT_MS,
    )
    return called.agent


async def test_a_surface_navigates_and_dispatches_for_its_own_app_through_the_bridge(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    await navigator_in_front(nursery, data_dir, page)

    state = await attempt(page, "state", "(b) => b.state.snapshot()")
    assert (state["app_scope"], state["in_front"], state["launched"]) == ("navigator", True, [])
    assert [(i["instance_id"], i["state"]) for i in state["instances"]] == [(ME, "foreground")]

    listed = await attempt(page, "list", "(b) => b.apps.listAvailable()")
    scopes = [a["app_scope"] for a in listed]
    assert scopes[0] == "chat" and {"navigator", "whiteboard", "task-dashboard"} <= set(scopes)

    launched = await attempt(
        page, "launch", "(b) => b.apps.launch('whiteboard', 's1', {display_mode: 'background'})"
    )
    assert launched == {"id": BOARD}

    def shown_behind(p: Page) -> None:
        expect(tab(p, BOARD)).to_have_attribute("data-state", "background", timeout=WAIT_MS)
        expect(tab(p, ME)).to_have_attribute("aria-current", "page")

    await page.run(shown_behind)
    state = await attempt(page, "state_after", "(b) => b.state.snapshot()")
    assert [
        (i["instance_id"], i["entrypoint"], i["parent_instance_id"]) for i in state["launched"]
    ] == [(BOARD, "board", ME)]

    # Refused as the app's own requests are, each with its code.
    refusals = {
        "no_entrypoint": "(b) => b.apps.launch('whiteboard', 's2', {entrypoint: 'nope'})",
        "no_app": "(b) => b.apps.launch('no-such-app', 's3')",
        "close_chat": "(b) => b.apps.close('chat')",
        "focus_unknown": "(b) => b.apps.focus('task-dashboard:nobody')",
        "no_action": "(b) => b.actions.dispatch({kind: 'agent.envelope', payload: {}})",
        "half_action": "(b) => b.actions.dispatch({kind: 'apps.launch'})",
    }
    got = {name: await attempt(page, name, call) for name, call in refusals.items()}
    assert got == {
        "no_entrypoint": "!entrypoint_not_found",
        "no_app": "!app_not_installed",
        "close_chat": "!lifecycle_denied",
        "focus_unknown": "!app_instance_not_found",
        "no_action": "!bridge_params_invalid",  # no such action: the Shell's bridge refuses it
        "half_action": "!bridge_params_invalid",  # a known kind, malformed: focus refuses it
    }

    # What it launched, it brings to the front: the Shell shows the board in front. (Not
    # awaited in the frame: the navigator's frame may go as the board comes.)
    await page.run(
        lambda p: panel(p).evaluate(
            f"() => {{ window.attempt('focus', (b) => b.apps.focus({BOARD!r})); }}"
        )
    )

    def board_in_front(p: Page) -> None:
        expect(tab(p, BOARD)).to_have_attribute("aria-current", "page", timeout=WAIT_MS)
        expect(tab(p, ME)).to_have_attribute("data-state", "background")

    await page.run(board_in_front)
