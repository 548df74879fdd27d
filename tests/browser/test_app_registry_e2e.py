"""The App Registry in real Chromium against the real runtime: install from a file, disable,
remove — each asked by the App Registry as a capability and allowed by the user in the
runtime's own prompt (a `<dialog>` of the Shell's DOM, over the Surface's iframe).

The test builds and signs a tiny installed app (`tests/support/bundles.py`) and trusts its key
in the runtime's data dir before the start; the Agent opens the App Registry
(`app-registry.open`); the user clicks "Install from file…" in its Surface, allows the
file picker, chooses the `.lineup` file in the Shell's picker, and allows the install. The app
is then listed and its tool is in the Agent's inventory; Disable (allowed) lists it disabled
and takes its tool out; Remove (allowed) takes it off the list and deletes its verified cache
and its private data dir. Browser waits are Playwright's auto-waiting `expect`; waits on the
AppServer run under `fail_after`. No sleeps.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import trio
from playwright.sync_api import FrameLocator, Locator, Page, expect

from lineup.sdk.bundle import SigningKey
from lineup.supervisor._sandbox import app_data_dir
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.browser import greeted_in_the_shell
from lineup.tests.support.bundles import build_bundle, trust
from lineup.tests.support.runtime import CONVERSATION

from .conftest import ShellPage

WAIT_MS: Final = 15_000  # a real runtime: processes, an HTTP AppServer, a long-polling Agent
WAIT_S: Final = WAIT_MS / 1000
GREETING: Final = "Show me my apps"
FRAME: Final = '[data-testid="surface-frame"]'
SCOPE: Final = "deliver"
TOOL: Final = "deliver.echo"
INVENTORY: Final = "lineup.v1.client.inventory"


def registry(p: Page) -> FrameLocator:
    return p.frame_locator(FRAME)


def row(p: Page, scope: str) -> Locator:
    return registry(p).locator(f'tr[data-app="{scope}"]')


async def registry_opened(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage, **options: Any
) -> tuple[AgentView, str]:
    """A Shell greeted by the Agent, which then opened the App Registry (`app-registry.open`,
    answered); the Agent and the revision it called with. `options` go to the runtime."""
    _, agent, revision = await greeted_in_the_shell(
        nursery, data_dir, page, GREETING, wait_ms=WAIT_MS, **options
    )
    with trio.fail_after(WAIT_S):
        await agent.client.call_tool(
            CONVERSATION, "app-registry.open", {}, revision, call_id="open-1"
        )
    await agent.terminal("open-1")
    return agent, revision


def registry_in_front(p: Page) -> None:
    expect(p.locator(FRAME)).to_have_count(1, timeout=WAIT_MS)
    body = registry(p).locator("body")
    expect(body).to_have_attribute("data-state", "ready", timeout=WAIT_MS)
    expect(p.get_by_test_id("chat")).to_be_hidden(timeout=WAIT_MS)
    # The runtime's own apps are listed; the App Registry offers no Disable or Remove of itself.
    for scope in ("chat", "app-registry", "task-dashboard", "whiteboard"):
        expect(row(p, scope)).to_have_count(1, timeout=WAIT_MS)
    expect(row(p, "app-registry").get_by_role("button", name="Disable App Registry")).to_have_count(
        0
    )
    expect(row(p, "chat").get_by_role("button", name="Remove Chat")).to_have_count(0)
    expect(row(p, SCOPE)).to_have_count(0)


def allow_once(p: Page, capability: str) -> None:
    """The runtime's prompt for `capability` is up, in the Shell; the user allows it once."""
    prompt = p.get_by_test_id("permission-prompt")
    expect(prompt).to_be_visible(timeout=WAIT_MS)
    expect(prompt.get_by_test_id("permission-capability")).to_contain_text(
        capability, timeout=WAIT_MS
    )
    # Focus starts on Deny, the safe default.
    expect(prompt.get_by_test_id("permission-deny")).to_be_focused(timeout=WAIT_MS)
    prompt.get_by_test_id("permission-allow-once").click(timeout=WAIT_MS)
    expect(prompt).to_be_hidden(timeout=WAIT_MS)


def install_from_file(bundle: Path) -> Callable[[Page], None]:
    def run(p: Page) -> None:
        registry(p).get_by_role("button", name="Install from file…").click(timeout=WAIT_MS)
        allow_once(p, "file.open")
        picker = p.get_by_test_id("file-open")
        expect(picker).to_be_visible(timeout=WAIT_MS)
        picker.get_by_test_id("file-open-input").set_input_files(str(bundle), timeout=WAIT_MS)
        expect(picker).to_be_hidden(timeout=WAIT_MS)
        allow_once(p, "app.install")
        expect(row(p, SCOPE)).to_have_count(1, timeout=WAIT_MS)
        expect(row(p, SCOPE)).to_have_attribute("data-enabled", "true", timeout=WAIT_MS)
        expect(row(p, SCOPE)).to_contain_text("1.0", timeout=WAIT_MS)
        status = registry(p).locator("#status")
        expect(status).to_have_text(f"Installed {SCOPE} 1.0.", timeout=WAIT_MS)
        expect(status).not_to_contain_text(bundle.name)  # never a file's name, nor a path

    return run


def act(action: str, capability: str, done: re.Pattern[str]) -> Callable[[Page], None]:
    def run(p: Page) -> None:
        row(p, SCOPE).get_by_role("button", name=f"{action} {SCOPE}").click(timeout=WAIT_MS)
        allow_once(p, capability)
        expect(registry(p).locator("#status")).to_have_text(done, timeout=WAIT_MS)

    return run


def listed_disabled(p: Page) -> None:
    expect(row(p, SCOPE)).to_have_attribute("data-enabled", "false", timeout=WAIT_MS)
    # Disabled: Enable and Remove are offered, Disable no more.
    expect(row(p, SCOPE).get_by_role("button", name=f"Enable {SCOPE}")).to_have_count(1)
    expect(row(p, SCOPE).get_by_role("button", name=f"Disable {SCOPE}")).to_have_count(0)


def gone(p: Page) -> None:
    expect(row(p, SCOPE)).to_have_count(0, timeout=WAIT_MS)
    expect(row(p, "whiteboard")).to_have_count(1)
    assert p.evaluate("window.__cspViolations") == []


async def tools_at(agent: AgentView, present: bool) -> str:
    """The newest inventory revision at the Agent once it has (or no longer has) the tool."""

    def matches(message: dict[str, Any]) -> bool:
        tools = {t["method"] for t in message["payload"]["tools"]}
        return (TOOL in tools) is present

    seen = {id(m) for m in agent.seen if m["type"] == INVENTORY}
    told = await agent.pull(INVENTORY, lambda m: id(m) not in seen and matches(m))
    return str(told["payload"]["revision"])


async def test_the_user_installs_disables_and_removes_an_app_in_the_app_registry(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path, page: ShellPage
) -> None:
    key = SigningKey.generate()
    bundle = tmp_path / f"{SCOPE}-1.0.lineup"
    bundle.write_bytes(build_bundle(tmp_path / "src", key, scope=SCOPE, version="1.0"))
    trust(data_dir, key.public)

    _, agent, revision = await greeted_in_the_shell(
        nursery, data_dir, page, GREETING, wait_ms=WAIT_MS
    )

    # The Agent opens the App Registry; it can change nothing itself (no such tool).
    first = agent.seen[-1]
    tools = {t["method"] for t in first["payload"]["tools"]}
    assert "app-registry.open" in tools
    assert not any(t.startswith("app-registry.") and t != "app-registry.open" for t in tools)
    with trio.fail_after(WAIT_S):
        await agent.client.call_tool(
            CONVERSATION, "app-registry.open", {}, revision, call_id="open-1"
        )
    opened = await agent.terminal("open-1")
    assert opened["payload"]["result"] == {"opened": True}
    await page.run(registry_in_front)

    # Install from file: the picker is allowed, the file chosen, the install allowed.
    await page.run(install_from_file(bundle))
    installed = await tools_at(agent, present=True)
    assert installed != revision
    cache = data_dir / "bundles" / SCOPE
    assert (cache / "1.0" / "bundle.lineup").read_bytes() == bundle.read_bytes()

    # The app's private data (what its process would have written).
    private = app_data_dir(data_dir, SCOPE)
    private.mkdir(parents=True, exist_ok=True)
    (private / "notes.txt").write_text("mine")

    # Disable: allowed in the prompt; listed disabled; its tool leaves the inventory.
    await page.run(act("Disable", "app.manage", re.compile(f"^Disabled {SCOPE}\\b")))
    await page.run(listed_disabled)
    disabled = await tools_at(agent, present=False)
    assert disabled != installed

    # Remove: allowed; gone from the list, its cache and its data dir deleted.
    await page.run(act("Remove", "app.manage", re.compile(f"^Removed {SCOPE}\\b")))
    await page.run(gone)
    assert not cache.exists()
    assert not private.exists()
    assert page.off_loopback() == [], "a request left 127.0.0.1"
    assert page.errors == []
