"""A Surface's question through the real tree (the hostbridge, the router, focus, the store and
the test app's own process): a Shell's `surface.request` `lineup/ui/request` is recorded as the
app's own question of that instance, shown to every Shell as such, answered by the user, told to
the app (which hears of a question it did not ask and goes on), and a retry asks nothing new."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from lineup.tests.support.runtime import CONVERSATION, shell_and_agent
from lineup.tests.support.shell import ShellClient

from .test_surfaces import INSTANCE, SID, WAIT, runtime_with_surface_app, wait_view

CONFIRM = {"kind": "confirm", "title": "Keep", "prompt": "Keep these notes?"}


def ask(request_id: str, method: str = "lineup/ui/request", **params: Any) -> dict[str, Any]:
    return {
        "type": "surface.request",
        "request_id": request_id,
        "instance_id": INSTANCE,
        "surface_id": SID,
        "method": method,
        "params": params,
    }


async def reply_to(shell: ShellClient, request_id: str, nth: int = 1) -> dict[str, Any]:
    """The `nth` reply to `request_id` this Shell got."""

    def found(sh: ShellClient) -> dict[str, Any] | None:
        replies = [
            f
            for f in sh.frames
            if f.get("type") == "shell.surface.reply" and f.get("request_id") == request_id
        ]
        return replies[nth - 1] if len(replies) >= nth else None

    with trio.fail_after(WAIT):
        await shell.wait_until(lambda sh: found(sh) is not None)
    frame = found(shell)
    assert frame is not None
    return frame


async def shown(shell: ShellClient, interaction_id: str, state: str) -> dict[str, Any]:
    def found(sh: ShellClient) -> dict[str, Any] | None:
        return next(
            (
                v
                for f in reversed(sh.frames)
                if f.get("type") == "shell.interactions"
                for v in f["interactions"]
                if v["interaction_id"] == interaction_id and v["state"] == state
            ),
            None,
        )

    with trio.fail_after(WAIT):
        await shell.wait_until(lambda sh: found(sh) is not None)
    view = found(shell)
    assert view is not None
    return view


async def test_a_surfaces_question_is_its_apps_own_answered_in_the_shell_and_told_to_the_app(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await runtime_with_surface_app(nursery, data_dir)
    shell, agent, revision = await shell_and_agent(nursery, runtime)
    await agent.client.call_tool(
        CONVERSATION, "surfacer.open", {"mode": "open"}, revision, call_id="s-open"
    )
    await agent.terminal("s-open")
    await wait_view(shell, lambda v: v.get("kind") == "lineup.surface")

    await shell.send(ask("s1-page-1", request=CONFIRM))
    answered = await reply_to(shell, "s1-page-1")
    assert answered["error"] is None
    interaction_id = answered["result"]["interaction_id"]
    card = await shown(shell, interaction_id, "presented")
    assert (card["source"], card["owner_scope"], card["instance_id"], card["call_id"]) == (
        "miniapp",
        "surfacer",
        INSTANCE,
        None,
    )
    assert card["request"]["title"] == "Keep"

    await shell.send(ask("s1-page-1", request=CONFIRM))  # the same request again
    again = await reply_to(shell, "s1-page-1", nth=2)
    assert again["result"] == {"interaction_id": interaction_id}

    await shell.send(
        {
            "type": "interaction.answer",
            "interaction_id": interaction_id,
            "answer": {"approved": True},
        }
    )
    done = await shown(shell, interaction_id, "completed")  # completed: the app was told
    assert done["result"] == {"approved": True}

    # The app heard of a question it did not ask and goes on: its Surface's events still land.
    await shell.send(ask("s1-page-2", "lineup/event", name="note.add", data={"text": "after"}))
    event = await reply_to(shell, "s1-page-2")
    assert event["error"] is None
    await wait_view(shell, lambda v: v.get("state", {}).get("seen") == 1)

    # A request that is no standard one is refused by the hostbridge, nothing recorded.
    await shell.send(ask("s1-page-3", request={"kind": "confirm", "title": "x"}))
    bad = await reply_to(shell, "s1-page-3")
    assert bad["error"] == {"code": "bridge_params_invalid"}
    cards = {
        v["interaction_id"]
        for f in shell.frames
        if f.get("type") == "shell.interactions"
        for v in f["interactions"]
    }
    assert cards == {interaction_id}
