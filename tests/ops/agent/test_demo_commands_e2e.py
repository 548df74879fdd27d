"""The embedded demo Agent's chat commands through the real runtime: a user writes `/tools` in
the chat and reads the inventory, `/call` a tool and reads its receipts and its result, `/call`
it wrongly and reads the refusal's code, and a restarted demo Agent, which replays the whole
conversation, calls nothing twice (issue 17: "a newcomer tries any tool from the chat").

The user writes at the Shell's real socket and reads the chat there; the tool is
`tests/support/picture_app.py`'s, configured beside the catalogue's as `--dev-app` would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

import trio

from lineup.actors.kernel import ActorKind
from lineup.actors.router.messages import InteractionsListReply, InteractionsListRequest
from lineup.tests.support.picture_app import Picture
from lineup.tests.support.runtime import kill_and_wait_restarted, start_runtime_with_app
from lineup.tests.support.shell import ShellClient, connect_shell, tree_text
from lineup.tests.support.tree import attach

WAIT: Final = 60.0
POLL: Final = 0.05  # between two looks at the router's list, inside a bounded wait
MENU_PROMPT: Final = "What would you like to try?"


def _agent_texts(shell: ShellClient) -> list[str]:
    return [tree_text(i["tree"]) for i in shell.timeline() if i["author"] == "agent"]


async def _said(shell: ShellClient, wanted: str) -> list[str]:
    """The Agent's texts holding `wanted`, once there is one."""
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: any(wanted in t for t in _agent_texts(s)))
    return [t for t in _agent_texts(shell) if wanted in t]


async def test_tools_lists_the_inventory_and_call_shows_receipts_result_and_refusal(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime_with_app(
        nursery, data_dir, Picture, title="Picture", demo_agent=True
    )
    ui = await attach(nursery, runtime.supervisor, ActorKind.HOSTBRIDGE, "probe-ui")
    shell = await connect_shell(nursery, runtime.shell_url)
    with trio.fail_after(WAIT):  # the tour's menu: the demo Agent has the inventory
        while True:
            listed = await ui.request(
                "router", InteractionsListRequest(), expect=InteractionsListReply
            )
            if any(v.request.get("prompt") == MENU_PROMPT for v in listed.interactions):
                break
            await trio.sleep(POLL)

    await shell.say("/tools")
    (tools,) = await _said(shell, "inventory revision")
    assert "picture.draw (launch): Draw a small grey square" in tools
    assert "title string (required)" in tools
    assert "interaction.confirm (interactive)" in tools

    await shell.say('/call picture.draw {"title": "Hello"}')
    (returned,) = await _said(shell, "picture.draw returned:")
    for receipt in ("accepted", "starting its app", "its app is ready"):
        assert (await _said(shell, f"picture.draw: {receipt}.")) == [f"picture.draw: {receipt}."]
    assert await _said(shell, "picture.draw progress: drawing")
    document = json.loads(returned.removeprefix("picture.draw returned:"))
    assert (document["title"], document["width"], document["height"]) == ("Hello", 4, 4)
    assert document["png_base64"].startswith("iVBOR")  # abbreviated, as a PNG's base64 starts

    await shell.say('/call picture.draw {"title": ""}')
    (refused,) = await _said(shell, "was refused")
    assert refused.startswith("picture.draw was refused. The input does not fit what the tool")
    assert "Details: tool_input_invalid" in refused  # the code only for the curious

    await shell.say("/call picture.draw {oops")
    assert await _said(shell, "That input is not JSON")

    # A restarted demo Agent replays the conversation from the start: every key derives from
    # the message it answers, so nothing is said or called twice. Once it answers a message
    # written after the restart, it has replayed everything before.
    await kill_and_wait_restarted(runtime, "demo-agent")
    await shell.say("/call")
    await _said(shell, "Which tool?")
    assert len(await _said(shell, "picture.draw returned:")) == 1
    assert len(await _said(shell, "picture.draw: accepted.")) == 1
    assert len(await _said(shell, "was refused")) == 1
    assert len(await _said(shell, "inventory revision")) == 1
