"""How the router finds the tool an Agent names (issue 29, item 9): by its one id, LineUp's
`<scope>.<name>` or the seeds' `<scope>/<method>`, or (the seeds' way) by the envelope's
`app_scope` and the bare method; a bare method alone names no tool, and an envelope whose scope
is not the tool's app is refused `app_scope_mismatch`. The call is recorded under its one id."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest
import trio

from lineup import wire
from lineup.actors.focus.messages import (
    FindInstanceRequest,
    InstanceReply,
    InventoryReply,
    InventoryRequest,
)
from lineup.actors.kernel import ActorKind, Envelope, Identity, Message
from lineup.actors.router._envelope import admit
from lineup.actors.router._pipeline import ToolPipeline
from lineup.actors.store.messages import ToolCallGetReply, ToolCallGetRequest
from lineup.sdk.manifest import ToolDescriptor
from lineup.tests.actors.router.test_tool_instance_end import OBJECT, pipeline_of
from lineup.tests.actors.store._harness import WAIT, StoreHarness, router_peer, start_store

SCOPE: Final = "sketch"
INSTANCE: Final = "sketch:1"
INVENTORY: Final = InventoryReply(
    revision="inv-1",
    tools=(
        ToolDescriptor(
            method="board.create", handling="direct", input_schema=OBJECT, output_schema=OBJECT
        ).placed(SCOPE),
    ),
    disabled_tools=(),
)


async def router_with_focus(
    nursery: trio.Nursery, tmp_path: Path
) -> tuple[StoreHarness, ToolPipeline]:
    store = await start_store(nursery, tmp_path / "data")
    await store.put_live_instances(SCOPE, INSTANCE)

    async def focus(env: Envelope) -> Message | None:
        if isinstance(env.body, FindInstanceRequest):
            return InstanceReply(instance_id=INSTANCE, app_scope=SCOPE, state="background")
        if isinstance(env.body, InventoryRequest):
            return INVENTORY
        return None

    await router_peer(nursery, store, Identity(ActorKind.FOCUS, "focus"), focus)
    pipeline = pipeline_of(store.router)
    await nursery.start(pipeline.run)
    return store, pipeline


async def calls(pipeline: ToolPipeline, tool: str, app_scope: str | None) -> None:
    payload = wire.ToolCallPayload(
        call_id="call-1", tool=tool, inventory_revision="inv-1", input={}
    )
    envelope = wire.envelope(
        wire.TOOL_CALL, payload, conversation_id="conv-1", sender_kind="agent",
        sender_id="agent-1", message_id="m-1", app_scope=app_scope,
    )  # fmt: skip
    assert isinstance(envelope, wire.ToolCallEnvelope)
    admitted = admit(envelope, conversation_id="conv-1", agent_id="agent-1")
    with trio.fail_after(WAIT):
        assert await pipeline.accept(admitted, envelope) is None


@pytest.mark.parametrize(
    ("tool", "app_scope", "state", "code"),
    [
        ("sketch/board.create", None, "waiting_for_app", None),
        ("sketch/board.create", SCOPE, "waiting_for_app", None),
        ("board.create", SCOPE, "waiting_for_app", None),
        ("board.create", None, "rejected", "tool_not_advertised"),
        ("sketch.board.create", None, "rejected", "tool_not_advertised"),
        ("sketch/board.create", "whiteboard", "rejected", "app_scope_mismatch"),
        ("board.create", "whiteboard", "rejected", "tool_not_advertised"),
    ],
)
async def test_a_tool_is_found_by_its_one_id_or_by_the_envelopes_scope_and_its_method(
    nursery: trio.Nursery,
    tmp_path: Path,
    tool: str,
    app_scope: str | None,
    state: str,
    code: str | None,
) -> None:
    store, pipeline = await router_with_focus(nursery, tmp_path)
    await calls(pipeline, tool, app_scope)
    call = (await store.ask(ToolCallGetRequest(call_id="call-1"), ToolCallGetReply)).call
    assert call is not None
    assert (call.state, call.error_code) == (state, code)
    if code is None:
        assert (call.tool, call.app_scope, call.instance_id) == (
            "sketch/board.create",
            SCOPE,
            INSTANCE,
        )
