"""The Agent and the user of an end-to-end test of the standard interactions: the Agent asks
through the AppServer, the user answers as the hostbridge would (`router.ui.interaction.answer`
from a probe of that kind), and the store is read by a probe of the router's kind."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from lineup.actors.kernel import ActorKind, Bus
from lineup.actors.router.messages import (
    InteractionAnswerReply,
    InteractionAnswerRequest,
    InteractionsListReply,
    InteractionsListRequest,
)
from lineup.actors.store.messages import ToolCallGetReply, ToolCallGetRequest
from lineup.hostbridge.messages import InteractionView
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.runtime import CONVERSATION, Runtime, agent_client, start_runtime
from lineup.tests.support.shell import ShellClient
from lineup.tests.support.tree import attach

WAIT = 20.0
POLL = 0.05  # between two looks at another process's state, inside a bounded wait
RECEIPT = "lineup.v1.tool.receipt"
CHOICE = {
    "title": "Lunch",
    "prompt": "What shall we eat?",
    "mode": "single-choice",
    "actions": [{"id": "soup", "label": "Soup"}, {"id": "salad", "label": "Salad"}],
}
CONFIRM = {"title": "Deploy", "prompt": "Deploy now?"}
INPUT = {
    "title": "Name",
    "prompt": "Your name?",
    "fields": [{"id": "name", "label": "Name", "type": "text", "required": True}],
}


@dataclass
class Scene:
    """A running runtime, the Agent (with the current revision), the hostbridge's side of the
    router (`ui`, a probe of that kind) and a reader of the store (`reader`)."""

    runtime: Runtime
    agent: AgentView
    revision: str
    ui: Bus
    reader: Bus

    async def ask(self, tool: str, arguments: dict[str, Any], call_id: str) -> InteractionView:
        """The Agent asks; returns the interaction once recorded (its `accepted` receipt is
        written in the same transaction)."""
        await self.agent.client.call_tool(
            CONVERSATION, tool, arguments, self.revision, call_id=call_id
        )
        receipt = await self.agent.pull(RECEIPT, lambda m: m["payload"]["call_id"] == call_id)
        assert receipt["payload"]["status"] == "accepted"
        return await self.interaction(call_id)

    async def listed(self) -> InteractionsListReply:
        return await self.ui.request(
            "router", InteractionsListRequest(), expect=InteractionsListReply
        )

    async def interaction(
        self, call_id: str, state: str | tuple[str, ...] | None = None
    ) -> InteractionView:
        """The interaction of the Agent's `call_id`, once it is in `state` (any, by default)."""
        wanted = (state,) if isinstance(state, str) else state
        with trio.fail_after(WAIT):
            while True:
                for view in (await self.listed()).interactions:
                    if view.call_id == call_id and (wanted is None or view.state in wanted):
                        return view
                await trio.sleep(POLL)

    async def answer(self, interaction_id: str, answer: dict[str, Any]) -> InteractionAnswerReply:
        return await self.ui.request(
            "router",
            InteractionAnswerRequest(interaction_id=interaction_id, answer=answer),
            expect=InteractionAnswerReply,
        )

    async def finals_of(self, call_id: str) -> list[dict[str, Any]]:
        """Every terminal message the Agent got for `call_id`, once it went quiet."""
        await self.agent.settle()
        return self.agent.of_call(call_id, "lineup.v1.tool.result", "lineup.v1.tool.error")

    async def call_row(self, call_id: str) -> Any:
        reply = await self.reader.request(
            "store", ToolCallGetRequest(call_id=call_id), expect=ToolCallGetReply
        )
        return reply.call


async def scene_on(nursery: trio.Nursery, runtime: Runtime) -> Scene:
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT)
    ui = await attach(nursery, runtime.supervisor, ActorKind.HOSTBRIDGE, "probe-ui")
    reader = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "reader")
    return Scene(runtime, agent, await agent.inventory(), ui, reader)


async def scene(nursery: trio.Nursery, data_dir: Path) -> Scene:
    return await scene_on(nursery, await start_runtime(nursery, data_dir, demo_agent=False))


# ------------------------------------------------------------------ as a Shell sees them


def shell_card(shell: ShellClient, interaction_id: str) -> dict[str, Any] | None:
    """The newest view of the interaction's card the Shell was sent (None: none yet)."""
    found = None
    for frame in shell.frames:
        if frame.get("type") == "shell.interactions":
            for view in frame["interactions"]:
                if view.get("interaction_id") == interaction_id:
                    found = view
    return found


def card_in(interaction_id: str, *states: str) -> Callable[[ShellClient], bool]:
    """For `ShellClient.wait_until`: the Shell shows the card in one of `states`."""
    return lambda shell: (shell_card(shell, interaction_id) or {}).get("state") in states


def drafts_sent(shell: ShellClient, interaction_id: str) -> list[dict[str, Any]]:
    """Every draft of the interaction the Shell was sent (`shell.drafts`), in order."""
    return [
        frame["drafts"][interaction_id]
        for frame in shell.frames
        if frame.get("type") == "shell.drafts" and interaction_id in frame["drafts"]
    ]


def greetings(shell: ShellClient) -> int:
    """How many greetings (`shell.hello`, each the first of its frames) the Shell was sent."""
    return sum(1 for frame in shell.frames if frame.get("type") == "shell.hello")


async def greeted_again(shell: ShellClient) -> None:
    """Ask for a greeting and wait until all of it has come. The hostbridge reads a socket's
    frames in order and queues what it sends in order: the greeting holds what it had once
    every frame sent before was handled, and the hello of a second one asked right after comes
    only after all of it."""
    seen = greetings(shell)
    await shell.send({"type": "shell.ready"})
    await shell.send({"type": "shell.ready"})
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda sh: greetings(sh) >= seen + 2)


def answer_frame(interaction_id: str, answer: dict[str, Any]) -> dict[str, Any]:
    """The frame a card sends when the user answers it."""
    return {"type": "interaction.answer", "interaction_id": interaction_id, "answer": answer}
