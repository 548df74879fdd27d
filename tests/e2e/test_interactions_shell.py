"""A standard interaction as the Shell's WebSocket sees it, through the real runtime: the card
arrives, the user's answer frame goes in, and the card then follows the record to `completed`
(the AppServer has the result), as the Agent gets its one result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from lineup.tests.support.interactions import CONFIRM, WAIT, scene
from lineup.tests.support.shell import ShellClient, connect_shell


def card(shell: ShellClient, call_id: str) -> dict[str, Any] | None:
    """The newest view of the card of the Agent's call `call_id` the Shell was sent."""
    found = None
    for frame in shell.frames:
        if frame.get("type") == "shell.interactions":
            for view in frame["interactions"]:
                if view.get("call_id") == call_id:
                    found = view
    return found


def state_of(call_id: str, state: str) -> Any:
    return lambda shell: (card(shell, call_id) or {}).get("state") == state


async def test_the_shells_card_follows_its_answer_to_completed(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    shell = await connect_shell(nursery, s.runtime.shell_url)
    asked = await s.ask("interaction.confirm", CONFIRM, "c-shell")
    with trio.fail_after(WAIT):
        await shell.wait_until(state_of("c-shell", "presented"))
    for _ in range(2):  # a double click: the runtime takes the first
        await shell.send(
            {
                "type": "interaction.answer",
                "interaction_id": asked.interaction_id,
                "answer": {"approved": True},
            }
        )
    result = await s.agent.terminal("c-shell")
    assert result["payload"]["result"] == {"approved": True}
    with trio.fail_after(WAIT):
        await shell.wait_until(state_of("c-shell", "completed"))
    final = card(shell, "c-shell")
    assert final is not None and final["result"] == {"approved": True}
    assert len(await s.finals_of("c-shell")) == 1
