"""A Surface's subscriptions through the whole runtime in real Chromium (seed 004 §6: "the same
semantics, restricted"; §5.4; issue 29, item 1): the navigator's Surface
(tests/support/nav_app/web) subscribes to its app's view model with the SDK's bridge client
(`LineUpBridge.state.subscribe`) and hears each new view the runtime pushes; it lists, is
handed (what waited, with `include_pending`, then what comes) and acknowledges its app's Agent
messages (`LineUpBridge.agentMessages`), each once, a display message acknowledged once handed.
Browser waits are Playwright's; no sleeps.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, Final

import trio
from playwright.sync_api import Page

from lineup.ops.agent import AgentClient
from lineup.tests.support.browser import ready_frame
from lineup.tests.support.runtime import AGENT_ID, CONVERSATION

from .conftest import ShellPage
from .test_surface_navigation_e2e import attempt, navigator_in_front

WAIT_MS: Final = 15_000
ME: Final = "navigator:n-open"
BOARD: Final = "whiteboard:nav-navigator-s1"
TEXT: Final = "lineup.v1.text"

panel = partial(ready_frame, ready='body[data-ready="1"]', wait_ms=WAIT_MS)


async def say(agent: AgentClient, message_id: str, markdown: str) -> None:
    """The Agent's text for the navigator's instance (its own: no permission needed)."""
    envelope: dict[str, Any] = {
        "v": 1,
        "id": message_id,
        "type": TEXT,
        "conversation_id": CONVERSATION,
        "app_scope": "navigator",
        "instance_id": ME,
        "sender": {"kind": "agent", "id": AGENT_ID},
        "payload": {"markdown": markdown},
    }
    await agent.send(envelope, idempotency_key=message_id)


def until(page: ShellPage, expression: str) -> Any:
    """Wait in the Surface's own page until `expression` (synchronous: what the page has
    heard) holds; its value."""

    def run(p: Page) -> Any:
        held = panel(p).wait_for_function(f"() => ({expression})", timeout=WAIT_MS)
        return held.json_value()

    return page.run(run)


def asked_until(page: ShellPage, name: str, call: str, holds: str) -> Any:
    """Ask the runtime `call` (a JS function of the bridge) in the Surface's own page, again
    each time an answer comes that `holds` (a JS function of it) refuses, until one holds; that
    answer.

    The predicate stays synchronous, asking when no request is out and judging the last answer:
    Playwright's `wait_for_function` takes a returned promise for a truthy value and ends on
    its first answer, whatever that answer is.
    """
    predicate = f"""() => {{
        const out = (window.__out ??= {{}});
        if (out[{name!r}]) return false;
        const got = window.__got[{name!r}];
        if (got !== undefined && ({holds})(got)) return got;
        out[{name!r}] = true;
        window.attempt({name!r}, {call}).finally(() => {{ out[{name!r}] = false; }});
        return false;
    }}"""

    def run(p: Page) -> Any:
        frame = panel(p)
        frame.evaluate(f"() => {{ delete window.__got[{name!r}]; }}")
        # Polled within the bridge's rate: each poll asks the runtime at most once.
        return frame.wait_for_function(predicate, timeout=WAIT_MS, polling=250).json_value()

    return page.run(run)


async def test_a_surface_hears_its_apps_view_and_its_agent_messages_once_each(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    agent = await navigator_in_front(nursery, data_dir, page)

    # The view model: the first at once, then the runtime's pushes as the app's facts change.
    subscribed = await attempt(
        page,
        "views",
        "(b) => { window.views = []; "
        "return b.state.subscribe((v) => window.views.push(v)).then(() => window.views.length); }",
    )
    assert subscribed == 1
    first = (await until(page, "window.views"))[0]
    assert (first["app_scope"], first["launched"]) == ("navigator", [])
    launched = await attempt(
        page, "launch", "(b) => b.apps.launch('whiteboard', 's1', {display_mode: 'background'})"
    )
    assert launched == {"id": BOARD}
    views = await until(page, "window.views.some((v) => v.launched.length === 1) && window.views")
    assert [i["instance_id"] for i in views[-1]["launched"]] == [BOARD]
    assert all(v["app_scope"] == "navigator" for v in views)  # its own app's view, only

    # Agent messages: one waits in the inbox before the Surface subscribes.
    await say(agent.client, "m-before", "before")
    listed = await asked_until(
        page, "list", "(b) => b.agentMessages.list()", "(got) => got.messages?.length === 1"
    )
    assert [(m["message_id"], m["type"], m["instance_id"]) for m in listed["messages"]] == [
        ("m-before", TEXT, ME)
    ]
    assert listed["cursor"] == listed["messages"][0]["cursor"]
    handed = await attempt(
        page,
        "subscribe",
        "(b) => { window.heard = []; return b.agentMessages.subscribe("
        "{include_pending: true, types: ['lineup.v1.text']}, "
        "(m) => window.heard.push(m.message_id)).then(() => 'ok'); }",
    )
    assert handed == "ok"
    await say(agent.client, "m-live", "live")
    heard = await until(page, "window.heard.length >= 2 && window.heard")
    assert heard == ["m-before", "m-live"]

    # Each handed once, and, display messages, acknowledged once handed: the inbox is empty,
    # and an acknowledgement of one of them is a no-op.
    empty = await asked_until(
        page, "empty", "(b) => b.agentMessages.list()", "(got) => got.messages?.length === 0"
    )
    assert empty["messages"] == []
    again = await attempt(page, "again", "(b) => b.agentMessages.acknowledge('m-before')")
    assert again is False
    refused = await attempt(page, "bad", "(b) => b.agentMessages.list({after: 'nope'})")
    assert refused == "!bridge_params_invalid"
    bad_type = await attempt(
        page,
        "bad_type",
        "(b) => b.agentMessages.subscribe({types: ['lineup.v1.tool.call']}, () => 0)",
    )
    assert bad_type == "!bridge_params_invalid"
    assert await until(page, "window.heard.length") == 2
