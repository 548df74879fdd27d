"""The embedded demo Agent's tour through the real runtime: a newcomer at the Shell gets the
menu card, answers it, gets the chosen question, answers that, and reads the answer in the chat
(issue 12: "a newcomer sees a card within a minute of `make run`")."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import trio

from lineup.tests.support.runtime import start_runtime
from lineup.tests.support.shell import ShellClient, connect_shell, tree_text

WAIT: Final = 60.0
MENU_PROMPT: Final = "What would you like to try?"


def _interactions(shell: ShellClient) -> dict[str, dict[str, Any]]:
    views: dict[str, dict[str, Any]] = {}
    for frame in shell.frames:
        if frame.get("type") == "shell.interactions":
            for view in frame["interactions"]:
                views[view["interaction_id"]] = view
    return views


def _open(shell: ShellClient, prompt: str) -> list[dict[str, Any]]:
    return [
        v
        for v in _interactions(shell).values()
        if v["request"].get("prompt") == prompt and v["state"] in ("pending", "presented")
    ]


def _agent_texts(shell: ShellClient) -> list[str]:
    return [tree_text(i.get("tree") or []) for i in shell.timeline() if i.get("author") == "agent"]


async def test_a_newcomer_gets_the_menu_card_and_each_answer_is_said_back(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime(nursery, data_dir)
    shell = await connect_shell(nursery, runtime.shell_url)
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: len(_open(s, MENU_PROMPT)) == 1)
    (menu,) = _open(shell, MENU_PROMPT)
    assert menu["kind"] == "choice" and menu["source"] == "agent_tool"
    assert menu.get("app_session_id") is None
    ids = [a["id"] for a in menu["request"]["actions"]]
    assert ids == ["notice", "choice", "confirm", "input", "dashboard"]

    answer = {"action_ids": ["confirm"]}
    frame = {"type": "interaction.answer", "interaction_id": menu["interaction_id"]}
    await shell.send({**frame, "answer": answer})
    await shell.send({**frame, "answer": {"action_ids": ["notice"]}})  # a second click: lost
    prompt = "Do you like what you have seen so far?"
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: len(_open(s, prompt)) == 1)
    (confirm,) = _open(shell, prompt)
    await shell.send(
        {
            "type": "interaction.answer",
            "interaction_id": confirm["interaction_id"],
            "answer": {"approved": True},
        }
    )
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: "You answered yes." in _agent_texts(s))
        await shell.wait_until(lambda s: len(_open(s, MENU_PROMPT)) == 1)
    assert _interactions(shell)[menu["interaction_id"]]["result"] == answer
    # The second click changed nothing: no notice was asked.
    assert all(v["kind"] != "notice" for v in _interactions(shell).values())
