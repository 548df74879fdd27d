"""The tool descriptor's call models and focus options through the real runtime (issue 29,
items 4 and 6): the Agent sees each tool's full descriptor in the inventory; a query never
launches an app nor changes focus; an interactive call brings its app in front for the user; an
operation reports progress; a `foreground` handling brings its instance forward; and a launch
whose tool says `restore_previous_focus: false` gives the front to the chat, not back to the
app before it, when it closes. The shipped tool of the `foreground` handling is the
whiteboard's `show`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.models_app import Models
from lineup.tests.support.runtime import (
    CONVERSATION,
    kill_and_wait_restarted,
    shell_and_agent,
    start_runtime_with_app,
)
from lineup.tests.support.shell import ShellClient

WAIT = 20.0
RESULT = "lineup.v1.tool.result"
ERROR = "lineup.v1.tool.error"
PROGRESS = "lineup.v1.tool.progress"


def apps(shell: ShellClient) -> dict[str, Any]:
    frames = [f for f in shell.frames if f.get("type") == "shell.apps"]
    return frames[-1] if frames else {}


def foreground(shell: ShellClient) -> str | None:
    return apps(shell).get("foreground")


def live(shell: ShellClient) -> set[str]:
    return {i["instance_id"] for i in apps(shell).get("instances", ())}


class Scene:
    def __init__(self, shell: ShellClient, agent: AgentView, revision: str) -> None:
        self.shell, self.agent, self.revision = shell, agent, revision

    async def call(self, tool: str, call_id: str) -> dict[str, Any]:
        """Call `tool` (empty input) and answer its one terminal message."""
        return await self.call_with(tool, call_id, {})

    async def call_with(self, tool: str, call_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
        await self.agent.client.call_tool(
            CONVERSATION, tool, arguments, self.revision, call_id=call_id
        )
        return await self.agent.terminal(call_id)

    async def in_front(self, instance_id: str) -> None:
        with trio.fail_after(WAIT):
            await self.shell.wait_until(lambda s: foreground(s) == instance_id)

    async def close(self, instance_id: str) -> None:
        await self.shell.send({"type": "ui.intent", "intent": "close", "instance_id": instance_id})
        with trio.fail_after(WAIT):
            await self.shell.wait_until(lambda s: instance_id not in live(s))


async def scene(nursery: trio.Nursery, data_dir: Path) -> Scene:
    runtime = await start_runtime_with_app(nursery, data_dir, Models, title="Models")
    s = Scene(*await shell_and_agent(nursery, runtime))
    await s.in_front("chat")  # the Shell has its first app list
    return s


async def test_the_agent_sees_every_tool_with_its_call_model_launch_strategy_and_one_id(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    inventory = await s.agent.pull("lineup.v1.client.inventory")
    tools = {t["id"]: t for t in inventory["payload"]["tools"]}
    peek = tools["models.peek"]
    assert {k: peek[k] for k in ("app_scope", "method", "call_model", "launch", "idempotent")} == {
        "app_scope": "models",
        "method": "models.peek",
        "call_model": "query",
        "launch": "never",
        "idempotent": True,
    }
    assert (peek["title"], peek["risk"]) == ("Peek", "low")
    # Today's descriptors get the values their handling means.
    assert {t: tools[t]["call_model"] for t in ("models.open", "models.export", "models.ask")} == {
        "models.open": "command",
        "models.export": "operation",
        "models.ask": "interactive",
    }
    assert tools["task-dashboard.open"]["launch"] == "foreground"
    assert tools["interaction.confirm"]["app_scope"] == "interaction"


async def test_a_query_never_launches_an_app_nor_moves_focus(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    # Where a command would start an instance of its app (a `direct` one, in the background),
    # a query is refused: its launch strategy is `never`.
    inventory = await s.agent.pull("lineup.v1.client.inventory")
    launch = {t["id"]: t["launch"] for t in inventory["payload"]["tools"]}
    assert (launch["models.peek"], launch["models.note"]) == ("never", "background")
    refused = await s.call("models.peek", "peek-1")
    assert (refused["type"], refused["payload"]["code"]) == (ERROR, "app_instance_not_found")
    await s.agent.settle()
    assert live(s.shell) == {"chat"}  # no instance was started for it

    opened = (await s.call("models.open", "open-1"))["payload"]["result"]["instance_id"]
    await s.in_front(opened)
    await s.shell.send({"type": "ui.intent", "intent": "focus", "instance_id": "chat"})
    await s.in_front("chat")
    answered = await s.call("models.peek", "peek-2")
    assert answered["payload"]["result"] == {"instance_id": opened}
    await s.agent.settle()
    assert foreground(s.shell) == "chat"  # answered from behind, never brought forward


async def test_an_interactive_call_brings_its_app_in_front_for_the_user(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    opened = (await s.call("models.open", "open-1"))["payload"]["result"]["instance_id"]
    await s.shell.send({"type": "ui.intent", "intent": "focus", "instance_id": "chat"})
    await s.in_front("chat")
    answered = await s.call("models.ask", "ask-1")
    assert answered["payload"]["result"] == {"instance_id": opened}
    await s.in_front(opened)


async def test_a_foreground_handling_brings_its_instance_forward(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    opened = (await s.call("models.open", "open-1"))["payload"]["result"]["instance_id"]
    await s.shell.send({"type": "ui.intent", "intent": "focus", "instance_id": "chat"})
    await s.in_front("chat")
    answered = await s.call("models.front", "front-1")
    assert answered["payload"]["result"] == {"instance_id": opened}
    await s.in_front(opened)


async def test_an_operation_reports_progress_before_its_result(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    done = await s.call("models.export", "export-1")
    assert done["type"] == RESULT
    await s.agent.settle()
    kinds = [(m["type"], m["payload"].get("progress")) for m in s.agent.of_call("export-1")]
    assert kinds.index((PROGRESS, {"state": "running"})) < kinds.index((RESULT, None))
    # A command reports no progress of the runtime's own.
    await s.call("models.open", "open-1")
    await s.agent.settle()
    assert not s.agent.of_call("open-1", PROGRESS)


async def test_closing_an_app_a_tool_opened_restores_the_previous_app_unless_the_tool_says_not(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    first = (await s.call("models.open", "open-1"))["payload"]["result"]["instance_id"]
    await s.in_front(first)

    kept = (await s.call("models.open", "open-2"))["payload"]["result"]["instance_id"]
    await s.in_front(kept)
    await s.close(kept)
    await s.in_front(first)  # restore_previous_focus: true (the default)

    visit = (await s.call("models.visit", "visit-1"))["payload"]["result"]["instance_id"]
    await s.in_front(visit)
    await s.close(visit)
    await s.in_front("chat")  # restore_previous_focus: false: not back to `first`
    assert first in live(s.shell)


async def test_the_whiteboards_show_brings_its_open_board_forward_and_never_opens_one(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    # `whiteboard.show` is a shipped tool of the `foreground` handling.
    s = await scene(nursery, data_dir)
    refused = await s.call_with("whiteboard.show", "show-0", {"board_id": "b1"})
    assert (refused["type"], refused["payload"]["code"]) == (ERROR, "app_instance_not_found")
    assert live(s.shell) == {"chat"}  # no board was opened for it

    await s.agent.client.call_tool(
        CONVERSATION, "whiteboard.open", {"board_id": "b1", "title": "Plan"}, s.revision,
        call_id="open-1",
    )  # fmt: skip
    await s.agent.pull(PROGRESS, lambda m: m["payload"]["call_id"] == "open-1")
    board = next(i for i in live(s.shell) if i.startswith("whiteboard:"))
    await s.in_front(board)
    await s.shell.send({"type": "ui.intent", "intent": "focus", "instance_id": "chat"})
    await s.in_front("chat")

    shown = await s.call_with("whiteboard.show", "show-1", {"board_id": "b1"})
    assert shown["type"] == RESULT
    assert shown["payload"]["result"]["strokes"] == 0
    await s.in_front(board)


async def test_a_tools_restore_previous_focus_outlives_a_restart_of_focus(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    # Kept on the instance's record (schema 14), not only in focus's memory: a focus SIGKILLed
    # and restarted still gives the front to the chat when that instance closes.
    runtime = await start_runtime_with_app(nursery, data_dir, Models, title="Models")
    s = Scene(*await shell_and_agent(nursery, runtime))
    await s.in_front("chat")
    first = (await s.call("models.open", "open-1"))["payload"]["result"]["instance_id"]
    await s.in_front(first)
    visit = (await s.call("models.visit", "visit-1"))["payload"]["result"]["instance_id"]
    await s.in_front(visit)
    await kill_and_wait_restarted(runtime, "focus")
    await s.in_front(visit)  # the restarted focus has the same stack
    await s.close(visit)
    await s.in_front("chat")
    assert first in live(s.shell)
