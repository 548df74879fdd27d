"""Issue 11, findings 4 and 11, through the real runtime: the chat's timeline reaches the Shell
as items, so large Agent messages never push a frame past a limit and none is hidden, also
after a restart; a view over the byte bound, and a view of a trusted kind from an app that does
not ship that component, are refused with a code and audited, and the runtime keeps serving.

The Shell here is the scripted one (the real WebSocket protocol); tests/browser/
test_chat_pages_e2e.py shows the same in Chromium.
"""

from __future__ import annotations

import json
from pathlib import Path

import trio

from lineup.hostbridge.shell_protocol import MAX_ITEMS_FRAME_BYTES
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.runtime import (
    CONVERSATION,
    agent_client,
    kill_and_wait_restarted,
    start_runtime,
)
from lineup.tests.support.shell import ShellClient, connect_shell, tree_text
from lineup.tests.support.tree import audit_rows

from .test_tools import WAIT, attach_once, scene

LARGE = 250_000  # characters (ASCII: bytes) of each large message; the wire allows 256 KiB


def large(n: int) -> str:
    return f"large {n} " + chr(ord("a") + n) * (LARGE - 8)


async def shows(shell: ShellClient, texts: list[str]) -> None:
    """Wait until the Shell's timeline holds exactly `texts`, in order, each in full."""

    def done(sh: ShellClient) -> bool:
        return [tree_text(i["tree"]) for i in sh.timeline()] == texts

    with trio.fail_after(WAIT * 3):
        await shell.wait_until(done)


async def test_three_large_agent_messages_and_a_short_one_all_show_in_full_also_after_a_restart(
    data_dir: Path,
) -> None:
    texts = [large(0), large(1), large(2), "and a short one"]
    async with trio.open_nursery() as run:
        runtime = await start_runtime(run, data_dir, demo_agent=False)
        shell = await connect_shell(run, runtime.shell_url)
        agent = AgentView(await agent_client(run, runtime.appserver_url))
        for text in texts:
            await agent.client.say(CONVERSATION, text)
        await shows(shell, texts)
        # No frame to the Shell grew with the timeline: a batch within its bound, or one item.
        for frame in shell.frames:
            size = len(json.dumps(frame, ensure_ascii=False).encode())
            one = frame["type"] == "shell.items" and len(frame["items"]) == 1
            assert one or size <= MAX_ITEMS_FRAME_BYTES + 4096, (frame["type"], size)
        children = runtime.supervisor.status().children
        assert all(c.restarts == 0 for c in children), [(c.name, c.restarts) for c in children]
        run.cancel_scope.cancel()

    async with trio.open_nursery() as run:
        runtime = await start_runtime(run, data_dir, demo_agent=False)
        shell = await connect_shell(run, runtime.shell_url)
        await shows(shell, texts)
        # A Shell that connects again gets the same, in the same bounded frames.
        again = await connect_shell(run, runtime.shell_url)
        await shows(again, texts)
        run.cancel_scope.cancel()


async def test_large_messages_show_in_full_after_the_chat_focus_or_hostbridge_restarts(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url))
    texts = [large(0), large(1), large(2), "and a short one"]
    for text in texts:
        await agent.client.say(CONVERSATION, text)
    await shows_and_leaves(nursery, runtime.shell_url, texts)
    for victim in ("miniapp:chat", "focus", "hostbridge"):
        await kill_and_wait_restarted(runtime, victim, wait=WAIT)
        texts.append(f"after {victim} restarted")
        await agent.client.say(CONVERSATION, texts[-1])
        # A Shell that (re)connects now sees everything, each message whole.
        await shows_and_leaves(nursery, runtime.shell_url, texts)


async def shows_and_leaves(nursery: trio.Nursery, shell_url: str, texts: list[str]) -> None:
    """A Shell connects, sees `texts`, and closes its socket (before a hostbridge is killed
    under it, which would leave the socket to the collector)."""
    shell = await connect_shell(nursery, shell_url)
    await shows(shell, texts)
    await shell.ws.aclose()


async def test_a_view_over_64_kib_is_refused_audited_and_the_runtime_keeps_serving(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir, probe=True)
    await s.call("probe.run", {"mode": "large_view"}, "p-large")
    assert (await s.agent.terminal("p-large"))["payload"]["result"] == {"echoed": "large_view"}
    with trio.fail_after(WAIT):
        await s.shell.wait_until(
            lambda sh: any(v.get("codes") == ["invalid_arguments", "ok"] for v in sh.views.values())
        )
    [refused] = await audit_rows(await attach_once(s), bool, event_prefix="focus.view_refused")
    assert (refused.peer, refused.code, refused.message_type) == (
        "miniapp:probe",
        "envelope_too_large",
        "focus.sdk.view.update",
    )
    assert not any("pad" in v for v in s.shell.views.values())
    await s.chat_still_answers("views are bounded in bytes")
    assert all(c.restarts == 0 for c in s.runtime.supervisor.status().children)


async def test_a_configured_app_drawing_with_trusted_components_is_refused_and_audited(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """Finding 11: an app that is not the catalogue's own (here configured, as a development
    or installed app is) may not draw the Task Dashboard's card or the chat's timeline."""
    s = await scene(nursery, data_dir, probe=True)
    await s.call("probe.run", {"mode": "trusted_view"}, "p-trusted")
    assert (await s.agent.terminal("p-trusted"))["payload"]["result"] == {"echoed": "trusted_view"}
    denied = "permission_denied"
    with trio.fail_after(WAIT):
        await s.shell.wait_until(
            lambda sh: any(
                v.get("codes") == [denied, denied, denied, "ok"] for v in sh.views.values()
            )
        )
    rows = await audit_rows(
        await attach_once(s), lambda rows: len(rows) >= 3, event_prefix="focus.view_refused"
    )
    assert sorted((r.peer, r.code, r.message_type) for r in rows) == [
        ("miniapp:probe", denied, "focus.sdk.view.items.put"),
        ("miniapp:probe", denied, "focus.sdk.view.update"),
        ("miniapp:probe", denied, "focus.sdk.view.update"),
    ]
    # Nothing of it reached the Shell: no trusted view from the probe, no forged message.
    probe_views = [v for i, v in s.shell.views.items() if i.startswith("probe")]
    assert probe_views and all(v.get("kind") == "probe" for v in probe_views)
    assert all(i["id"] != "forged" for i in s.shell.timeline())
    await s.chat_still_answers("only the runtime's own apps draw its components")
    assert all(c.restarts == 0 for c in s.runtime.supervisor.status().children)
