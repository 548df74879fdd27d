"""A call of a tool linked to its app's Surface (issue 30): the router tells focus each step
the Surface shows — given to its instance, its result, its failure, its end — once committed,
over a real store, with focus scripted (it records what it is asked to show). A tool linked to
no Surface tells focus nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

import pytest
import trio

from lineup.actors.focus.messages import (
    FindInstanceRequest,
    InstanceReply,
    InventoryReply,
    InventoryRequest,
    SurfaceToolStepReply,
    SurfaceToolStepRequest,
)
from lineup.actors.kernel import ActorKind, Envelope, Identity, Message
from lineup.actors.router._app_calls import AppCalls
from lineup.sdk import protocol as sdk
from lineup.sdk.manifest import MIN_TIMEOUT_MS, ToolDescriptor, ToolUi
from lineup.tests.actors.store._harness import WAIT, StoreHarness, router_peer, start_store

from .test_tool_instance_end import APP, INSTANCE, OBJECT, SCOPE, agent_calls, ended, pipeline_of

RESULT: Final = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "additionalProperties": False,
}
UI: Final = ToolUi(entrypoint="page")
INVENTORY: Final = InventoryReply(
    revision="inv-1",
    tools=(
        ToolDescriptor(
            method=f"{SCOPE}.shown", handling="direct", input_schema=OBJECT,
            output_schema=RESULT, title="Shown", ui=UI,
        ),
        ToolDescriptor(
            method=f"{SCOPE}.brief", handling="direct", input_schema=OBJECT,
            output_schema=OBJECT, timeout_ms=MIN_TIMEOUT_MS, ui=UI,
        ),
        ToolDescriptor(
            method=f"{SCOPE}.direct", handling="direct", input_schema=OBJECT, output_schema=OBJECT
        ),
    ),
    disabled_tools=(),
)  # fmt: skip


class Shown(list[SurfaceToolStepRequest]):
    """What focus was asked to show, in order; `changed` is set (and replaced) at each."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = trio.Event()

    def add(self, step: SurfaceToolStepRequest) -> None:
        self.append(step)
        self.changed.set()
        self.changed = trio.Event()


async def with_focus(nursery: trio.Nursery, tmp_path: Path) -> tuple[StoreHarness, Shown]:
    """A store with a live instance, and a focus that finds it and records what it is asked
    to show on its Surface."""
    store = await start_store(nursery, tmp_path / "data")
    await store.put_live_instances(SCOPE, INSTANCE)
    shown = Shown()

    async def focus(env: Envelope) -> Message | None:
        if isinstance(env.body, FindInstanceRequest):
            return InstanceReply(instance_id=INSTANCE, app_scope=SCOPE, state="foreground")
        if isinstance(env.body, InventoryRequest):
            return INVENTORY
        if isinstance(env.body, SurfaceToolStepRequest):
            shown.add(env.body)
            return SurfaceToolStepReply(shown=True)
        return None

    await router_peer(nursery, store, Identity(ActorKind.FOCUS, "focus"), focus)
    return store, shown


async def steps(shown: Shown, count: int) -> list[SurfaceToolStepRequest]:
    with trio.fail_after(WAIT):
        while len(shown) < count:
            await shown.changed.wait()
    return list(shown)


@pytest.mark.parametrize("fails", [False, True])
async def test_a_ui_linked_calls_input_then_its_result_or_failure_reach_its_surface(
    nursery: trio.Nursery, tmp_path: Path, fails: bool
) -> None:
    store, shown = await with_focus(nursery, tmp_path)
    pipeline = pipeline_of(store.router)
    await nursery.start(pipeline.run)
    app = AppCalls(pipeline.calls)

    await agent_calls(pipeline, f"{SCOPE}.shown")
    [given] = await steps(shown, 1)
    assert (given.step, given.instance_id, given.entrypoint) == ("input", INSTANCE, "page")
    assert given.tool_input == {}
    assert given.tool_info is not None and given.tool_info["id"] == "call-1"
    assert given.tool_info["tool"]["name"] == f"{SCOPE}.shown"
    assert given.tool_info["tool"]["title"] == "Shown"
    await app.accept_call(APP, sdk.ToolAcceptRequest(call_id="call-1"))
    if fails:
        await app.fail(APP, sdk.ToolFailRequest(call_id="call-1", code="handler_failed"))
    else:
        await app.complete(APP, sdk.ToolCompleteRequest(call_id="call-1", result={"n": 7}))

    _, outcome = await steps(shown, 2)
    assert (outcome.step, outcome.call_id) == ("result", "call-1")
    assert outcome.result is not None
    if fails:
        assert outcome.result == {
            "content": [{"type": "text", "text": "handler_failed"}],
            "isError": True,
        }
    else:
        assert outcome.result["structuredContent"] == {"n": 7}
        assert json.loads(outcome.result["content"][0]["text"]) == {"n": 7}
        assert outcome.result["isError"] is False


async def test_a_ui_linked_call_that_expires_is_shown_cancelled_with_its_code(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    store, shown = await with_focus(nursery, tmp_path)
    pipeline = pipeline_of(store.router)
    await nursery.start(pipeline.run)

    await agent_calls(pipeline, f"{SCOPE}.brief")

    assert await ended(store) == ("expired", "operation_expired")
    given, end = await steps(shown, 2)
    assert given.step == "input"
    assert (end.step, end.reason) == ("cancelled", "operation_expired")


async def test_a_call_of_a_tool_linked_to_no_surface_shows_nothing(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    store, shown = await with_focus(nursery, tmp_path)
    pipeline = pipeline_of(store.router)
    await nursery.start(pipeline.run)
    app = AppCalls(pipeline.calls)

    await agent_calls(pipeline, f"{SCOPE}.direct")
    await app.accept_call(APP, sdk.ToolAcceptRequest(call_id="call-1"))
    await app.complete(APP, sdk.ToolCompleteRequest(call_id="call-1", result={}))

    assert shown == []


async def test_a_ui_linked_call_whose_instance_closed_is_shown_cancelled_app_closed(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    store, shown = await with_focus(nursery, tmp_path)
    pipeline = pipeline_of(store.router)
    await nursery.start(pipeline.run)
    app = AppCalls(pipeline.calls)
    await agent_calls(pipeline, f"{SCOPE}.shown")
    await app.accept_call(APP, sdk.ToolAcceptRequest(call_id="call-1"))

    await store.end_instance(SCOPE, INSTANCE)  # the user closed the app
    assert await pipeline.calls.converge(INSTANCE, SCOPE, failed=False) == ("call-1",)

    given, end = await steps(shown, 2)
    assert given.step == "input"
    assert (end.step, end.reason) == ("cancelled", "app_closed")
