"""A standard interaction as the Shell's WebSocket sees it, through the real runtime: the card
arrives, the user's answer frame goes in, and the card then follows the record to `completed`
(the AppServer has the result), as the Agent gets its one result. Also for a call id as long as
the wire allows, whose outbox rows' ids hold its hash, not the id itself (issue 29)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
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


@pytest.mark.parametrize("call_id", ["c-shell", "c-" + "x" * 198], ids=["short", "200-chars"])
async def test_the_shells_card_follows_its_answer_to_completed(
    nursery: trio.Nursery, data_dir: Path, call_id: str
) -> None:
    s = await scene(nursery, data_dir)
    shell = await connect_shell(nursery, s.runtime.shell_url)
    asked = await s.ask("interaction.confirm", CONFIRM, call_id)
    with trio.fail_after(WAIT):
        await shell.wait_until(state_of(call_id, "presented"))
    for _ in range(2):  # a double click: the runtime takes the first
        await shell.send(
            {
                "type": "interaction.answer",
                "interaction_id": asked.interaction_id,
                "answer": {"approved": True},
            }
        )
    result = await s.agent.terminal(call_id)
    assert result["payload"]["result"] == {"approved": True}
    with trio.fail_after(WAIT):
        await shell.wait_until(state_of(call_id, "completed"))
    final = card(shell, call_id)
    assert final is not None and final["result"] == {"approved": True}
    assert len(await s.finals_of(call_id)) == 1
