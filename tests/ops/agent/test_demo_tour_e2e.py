"""The embedded demo Agent's tour through the real runtime: a newcomer gets the menu card,
answers it, gets the chosen question, answers that, and reads the answer in the chat (issue
12: "a newcomer sees a card within a minute of `make run`").

The answers go where the hostbridge sends the Shell's: `router.ui.interaction.answer`, from a
probe of kind hostbridge; the chat's text is read at the Shell's real socket.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import trio

from lineup.actors.kernel import ActorKind, Bus
from lineup.actors.router.messages import (
    InteractionAnswerReply,
    InteractionAnswerRequest,
    InteractionsListReply,
    InteractionsListRequest,
)
from lineup.hostbridge.messages import InteractionView
from lineup.tests.support.runtime import start_runtime
from lineup.tests.support.shell import ShellClient, connect_shell, tree_text
from lineup.tests.support.tree import attach

WAIT: Final = 60.0  # the bound: a card within a minute
POLL: Final = 0.05  # between two looks at the router's list, inside a bounded wait
MENU_PROMPT: Final = "What would you like to try?"
OPEN: Final = ("pending", "presented")


class Ui:
    """The hostbridge's side of the router: the interactions it lists, the answers it sends."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus

    async def listed(self) -> tuple[InteractionView, ...]:
        reply = await self.bus.request(
            "router", InteractionsListRequest(), expect=InteractionsListReply
        )
        return reply.interactions

    async def one(self, wanted: Callable[[InteractionView], bool]) -> InteractionView:
        with trio.fail_after(WAIT):
            while True:
                found = [v for v in await self.listed() if wanted(v)]
                if len(found) == 1:
                    return found[0]
                assert len(found) < 2, found
                await trio.sleep(POLL)

    async def menu(self) -> InteractionView:
        return await self.one(lambda v: v.request.get("prompt") == MENU_PROMPT and v.state in OPEN)

    async def answer(self, view: InteractionView, answer: dict[str, Any]) -> bool:
        reply = await self.bus.request(
            "router",
            InteractionAnswerRequest(interaction_id=view.interaction_id, answer=answer),
            expect=InteractionAnswerReply,
        )
        return reply.changed


def _agent_texts(shell: ShellClient) -> list[str]:
    return [tree_text(i["tree"]) for i in shell.timeline() if i["author"] == "agent"]


async def _start(nursery: trio.Nursery, data_dir: Path) -> tuple[Ui, ShellClient]:
    runtime = await start_runtime(nursery, data_dir)
    ui = Ui(await attach(nursery, runtime.supervisor, ActorKind.HOSTBRIDGE, "probe-ui"))
    return ui, await connect_shell(nursery, runtime.shell_url)


async def test_a_newcomer_gets_the_menu_card_and_each_answer_is_said_back(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    ui, shell = await _start(nursery, data_dir)
    menu = await ui.menu()
    assert (menu.kind, menu.source, menu.app_session_id) == ("choice", "agent_tool", None)
    ids = [a["id"] for a in menu.request["actions"]]
    assert ids == ["notice", "choice", "confirm", "input", "dashboard"]

    assert await ui.answer(menu, {"action_ids": ["confirm"]})
    assert not await ui.answer(menu, {"action_ids": ["notice"]})  # a second click: lost
    prompt = "Do you like what you have seen so far?"
    confirm = await ui.one(lambda v: v.request.get("prompt") == prompt)
    assert await ui.answer(confirm, {"approved": True})
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: "You answered yes." in _agent_texts(s))
    waiting = await ui.menu()
    assert waiting.interaction_id != menu.interaction_id
    listed = {v.interaction_id: v for v in await ui.listed()}
    assert listed[menu.interaction_id].result == {"action_ids": ["confirm"]}
    assert all(v.kind != "notice" for v in listed.values())  # the second click asked nothing

    # "menu" asks it once more, and the menu still open is withdrawn: one card waits.
    await shell.say("menu")
    withdrawn = await ui.one(
        lambda v: v.interaction_id == waiting.interaction_id and v.state == "cancelled"
    )
    assert withdrawn.terminal_code == "interaction_dismissed"
    assert (await ui.menu()).interaction_id not in (menu.interaction_id, waiting.interaction_id)


async def test_the_dashboard_asks_in_its_sub_session_and_the_answer_moves_its_progress(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    ui, shell = await _start(nursery, data_dir)
    assert await ui.answer(await ui.menu(), {"action_ids": ["dashboard"]})
    question = await ui.one(lambda v: v.app_session_id is not None and v.state in OPEN)
    assert question.request["prompt"].startswith("How far along is the task?")
    assert await ui.answer(question, {"action_ids": ["p60"]})

    def progress(s: ShellClient) -> list[Any]:
        return [(v.get("task") or {}).get("progress") for v in s.views.values()]

    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: 60 in progress(s))
    # The answer's short result, in the sub-session: the chat's item names it (for the group).
    session = question.app_session_id

    def results(s: ShellClient) -> list[str]:
        return [tree_text(i["tree"]) for i in s.timeline() if i.get("app_session_id") == session]

    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: bool(results(s)))
    assert results(shell) == ["Progress set to 60 %: the dashboard shows it now."]
    await ui.menu()  # and the menu again, in the main IM
