"""A `direct` call to an app with no live instance, tried as a new user would (issue 29, items
10 and 9): a signed one-tool app, its tool named the seeds' way (`board.create`) and its
features by the seeds' names, is installed with the real `lineup app install`; the Agent calls
its tool at once, by the id the inventory gives it. The runtime starts an instance in the
background (no change of focus), with the launch's receipts, and the app answers. Only a call
naming an instance that does not exist is refused `app_instance_not_found`. Real processes:
the runtime's tree, the CLI, the Agent over HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from lineup.actors.kernel import ActorKind
from lineup.actors.store.messages import InstanceListReply, InstanceListRequest
from lineup.sdk.bundle import SigningKey, pack
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.bundles import manifest_for, start_delivery, trust
from lineup.tests.support.process import run_app
from lineup.tests.support.runtime import CONVERSATION, agent_client
from lineup.tests.support.tree import attach

KEY = SigningKey(b"\x1d" * 32)
SCOPE = "sketch"
TOOL = f"{SCOPE}/board.create"  # the seeds' method, with its app: one id
WAIT = 30.0

_SOURCE = '''"""A new user's first app: one direct tool, named as seed 004 names it."""

from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppInfo, MiniApp, ToolCall, tool


class Board(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = Field(max_length=40)


class Created(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    board: str = Field(max_length=40)
    instance_id: str = Field(max_length=200)


class Sketch(MiniApp):
    app_info = AppInfo(
        app_scope="sketch",
        version="1.0",
        kind="installed",
        required_features=("app.lifecycle.v1", "app.session-data.v1"),
        optional_features=("artifact.create.v1",),
    )

    @tool("board.create", handling="direct", input=Board, output=Created, timeout_ms=20_000)
    async def create(self, call: ToolCall[Board]) -> Created:
        return Created(board=call.input.name, instance_id=call.instance_id)
'''


def bundle(folder: Path) -> Path:
    package = folder / "sketchapp"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(_SOURCE)
    path = folder / "sketch-1.0.lineup"
    path.write_bytes(pack(package, manifest_for(package), KEY, min_host_version="0.1"))
    return path


async def test_a_direct_call_to_a_just_installed_app_starts_it_in_the_background_and_runs(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path
) -> None:
    trust(data_dir, KEY.public)
    path = bundle(tmp_path / "src")
    runtime = await start_delivery(nursery, data_dir)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT)
    store = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "probe-store")
    await agent.inventory()

    installed = await run_app("install", str(path), data_dir=data_dir)
    assert installed.returncode == 0, installed.stderr
    revision = await agent.revision_with("board.create")
    inventory = await agent.pull(
        "lineup.v1.client.inventory", lambda m: str(m["payload"]["revision"]) == revision
    )
    (told,) = [t for t in inventory["payload"]["tools"] if t["method"] == "board.create"]
    assert {k: told[k] for k in ("id", "app_scope", "contract_version", "launch")} == {
        "id": TOOL,
        "app_scope": SCOPE,
        "contract_version": "1",
        "launch": "background",
    }

    await agent.client.call_tool(CONVERSATION, TOOL, {"name": "plan"}, revision, call_id="c-1")
    result = await agent.terminal("c-1")
    assert result["type"] == "lineup.v1.tool.result", result
    instance = result["payload"]["result"]["instance_id"]
    assert result["payload"]["result"] == {"board": "plan", "instance_id": instance}
    receipts = [m["payload"]["status"] for m in agent.of_call("c-1", "lineup.v1.tool.receipt")]
    assert receipts == ["accepted", "starting", "activation_ready"]
    stack = await stack_of(store)
    assert stack["chat"] == "foreground"  # started behind the chat: no change of focus
    assert stack[instance] == "background"

    # A second call reuses the live instance: nothing more is started.
    await agent.client.call_tool(CONVERSATION, TOOL, {"name": "next"}, revision, call_id="c-2")
    again = await agent.terminal("c-2")
    assert again["payload"]["result"]["instance_id"] == instance
    assert [m["payload"]["status"] for m in agent.of_call("c-2", "lineup.v1.tool.receipt")] == [
        "accepted"
    ]

    # Only a call naming an instance that does not exist is refused so.
    await agent.client.call_tool(
        CONVERSATION, TOOL, {"name": "x"}, revision, call_id="c-3", instance_id="sketch:nope"
    )
    refused = await agent.terminal("c-3")
    assert (refused["type"], refused["payload"]["code"]) == (
        "lineup.v1.tool.error",
        "app_instance_not_found",
    )


async def stack_of(bus: Any) -> dict[str, str]:
    with trio.fail_after(WAIT):
        reply = await bus.request("store", InstanceListRequest(), expect=InstanceListReply)
    return {row.instance_id: row.state for row in reply.instances}
