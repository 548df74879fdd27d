"""Refusals in the chat as sentences, and `/tools` cut at a word, in real Chromium against
`lineup run`'s embedded default with its demo Agent (issue 28, item 10).

The chat read "refused: `tool_input_invalid`, at `/task_id`" and "`tool_not_advertised`", and
`/tools` cut descriptions mid-word. The user now writes `/call` with a bad input and with a
tool no app offers: each answer says what happened in words, and the code (and the field) is
only in the details line under it. `/tools` lists every tool with its description whole, or
cut after a whole word with an ellipsis. A call that goes through says its receipts in words.
Browser waits are Playwright's auto-waiting `expect`; no sleeps.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Locator, Page, expect

from lineup.tests.support.browser import load_shell
from lineup.tests.support.runtime import start_runtime

from .conftest import ShellPage

WAIT_MS: Final = 15_000  # a real runtime and the demo Agent's long poll
MINIAPPS: Final = Path(__file__).resolve().parents[2] / "miniapps"
TOOL_LINE: Final = re.compile(r"^(?P<method>[a-z][\w.-]*) \([a-z]+\): (?P<said>.*) — input:")


def agent_says(p: Page, text: str) -> Locator:
    return p.locator('[data-testid="message"][data-author="agent"]').filter(has_text=text)


def write(text: str) -> Callable[[Page], None]:
    def run(p: Page) -> None:
        composer = p.get_by_test_id("composer-input")
        composer.fill(text)
        composer.press("Enter")

    return run


def refused_in_words(p: Page) -> None:
    answer = agent_says(p, "whiteboard.open was refused")
    expect(answer).to_have_count(1, timeout=WAIT_MS)
    body = answer.get_by_test_id("message-body")
    expect(body).to_contain_text("The input does not fit what the tool expects.")
    lead, details = body.locator("p").all_inner_texts()[:2]
    assert "tool_input_invalid" not in lead and "refused:" not in lead
    assert details.startswith("Details: tool_input_invalid, at ")

    unknown = agent_says(p, "nowhere.tool was refused")
    expect(unknown).to_have_count(1, timeout=WAIT_MS)
    lead, details = unknown.get_by_test_id("message-body").locator("p").all_inner_texts()[:2]
    assert lead == "nowhere.tool was refused. No app on this LineUp offers that tool."
    assert details == "Details: tool_not_advertised"


def receipts_in_words(p: Page) -> None:
    for said in ("accepted", "starting its app", "its app is ready"):
        line = agent_says(p, f"task-dashboard.open: {said}.")
        expect(line).to_have_count(1, timeout=WAIT_MS)
    messages = p.locator('[data-testid="message"][data-author="agent"]')
    for status in ("activation_ready", "activation\\_ready"):
        expect(messages.filter(has_text=status)).to_have_count(0)


def bundled_descriptions() -> dict[str, str]:
    """The bundled apps' tools' descriptions, whole, as their manifests declare them."""
    found: dict[str, str] = {}
    for manifest in MINIAPPS.glob("*/manifest.json"):
        for tool in json.loads(manifest.read_text()).get("tools", []):
            found[tool["method"]] = " ".join(str(tool.get("description", "")).split())
    return found


def tools_listed(p: Page) -> list[str]:
    answer = agent_says(p, "tools (inventory revision")
    expect(answer).to_have_count(1, timeout=WAIT_MS)
    return answer.get_by_test_id("message-body").locator("li").all_inner_texts()


async def test_refusals_read_as_sentences_and_tools_are_cut_at_a_word(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=True)
    await page.run(load_shell(runtime.shell_url, wait_ms=WAIT_MS))
    await page.run(write('/call whiteboard.open {"title": "x"}'))
    await page.run(write("/call nowhere.tool {}"))
    await page.run(refused_in_words)

    await page.run(write("/tools"))
    lines = await page.run(tools_listed)
    whole = bundled_descriptions()
    checked = 0
    for line in lines:
        found = TOOL_LINE.match(line)
        assert found is not None, line
        method, said = found["method"], found["said"]
        if method not in whole:
            continue  # the runtime's own tools (interaction.*): their text is not in a manifest
        full = whole[method]
        if said == full:
            continue
        # Cut: after a whole word of the description, with an ellipsis.
        assert said.endswith("…"), line
        kept = said.removesuffix("…")
        assert full.startswith(kept) and full[len(kept.rstrip(" ,;:.-")) :][:1] in " ,;:.-", line
        checked += 1
    assert checked >= 2  # whiteboard.open's and app-registry.open's are longer than a line

    # A call that goes through: its receipts in words, never the wire's statuses.
    await page.run(write('/call task-dashboard.open {"task_id": "t-1", "title": "Tea"}'))
    await page.run(receipts_in_words)
    assert page.errors == []
