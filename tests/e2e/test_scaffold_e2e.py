"""A package `lineup app new` wrote, run as it is with `lineup run --dev-app`: the Agent calls
its tool through the real tree, and its `card` view reaches the Shell (the runtime's generic
component, which focus takes from a development app as from any other)."""

from __future__ import annotations

from pathlib import Path

import trio

from lineup.sdk import card
from lineup.sdk._scaffold import scaffold
from lineup.tests.support.runtime import CONVERSATION, shell_and_agent, start_runtime

WAIT = 20.0


async def test_a_scaffolded_dev_app_answers_the_agent_and_shows_its_card_in_the_shell(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    folder = scaffold("hello-world", data_dir / "apps")[0].parent
    runtime = await start_runtime(nursery, data_dir / "rt", demo_agent=False, dev_apps=(folder,))
    assert runtime.supervisor.info["dev_apps"] == "hello-world"
    shell, agent, revision = await shell_and_agent(nursery, runtime)
    await agent.client.call_tool(
        CONVERSATION, "hello-world.hello", {"name": "Ada"}, revision, call_id="hello-1"
    )
    result = await agent.terminal("hello-1")
    assert result["payload"]["result"] == {"greeting": "Hello, Ada!"}
    expected = card(title="Hello, Ada!", text="It works.", fields={"Name": "Ada"})
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda sh: expected in sh.views.values())
    (instance_id,) = [i for i, view in shell.views.items() if view == expected]
    with trio.fail_after(WAIT):
        await shell.wait_until(
            lambda sh: any(
                f.get("type") == "shell.apps" and f.get("foreground") == instance_id
                for f in sh.frames
            )
        )
