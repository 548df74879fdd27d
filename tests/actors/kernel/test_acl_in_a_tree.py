"""The ACL (actors/kernel/acl.py) between real processes: a supervised store refuses a store
request its sender's kind is not granted, before the request reaches the store's handlers,
and audits the refusal."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from lineup.actors.kernel import ActorKind, ErrorCode, LineUpError
from lineup.actors.store.messages import (
    OutboxRowIn,
    ToolCallFacts,
    ToolCallGetReply,
    ToolCallGetRequest,
    ToolCallStepReply,
    ToolCallStepRequest,
)
from lineup.supervisor import runtime_specs
from lineup.tests.support.tree import attach, audit_rows, start_tree

WAIT = 10  # seconds a step against a freshly spawned store may take before it counts as hung

CALL = "call-acl-1"
ADMIT = ToolCallStepRequest(
    call_id=CALL,
    event="admit",
    new=ToolCallFacts(
        tool="task-dashboard.open",
        inventory_revision="inv-1",
        app_scope="task-dashboard",
        conversation_id="conv-1",
        handling="launch",
        input={},
        timeout_ms=60_000,
    ),
    rows=(
        OutboxRowIn(
            row="accepted",
            outbox_id=f"receipt:{CALL}:accepted",
            wire={"v": 1, "type": "lineup.v1.tool.receipt", "payload": {"call_id": CALL}},
        ),
    ),
)
CLOSE = ToolCallStepRequest(
    call_id=CALL,
    event="close",
    code="app_closed",
    rows=(
        OutboxRowIn(
            row="terminal",
            outbox_id=f"final:{CALL}",
            wire={"v": 1, "type": "lineup.v1.tool.error", "payload": {"call_id": CALL}},
        ),
    ),
)


async def test_the_hostbridge_ending_a_tool_call_is_refused_acl_denied_and_audited(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    store_only = [spec for spec in runtime_specs() if spec.name == "store"]
    supervisor = await start_tree(nursery, store_only, data_dir)
    router = await attach(nursery, supervisor, ActorKind.ROUTER, "probe-router")
    shell_side = await attach(nursery, supervisor, ActorKind.HOSTBRIDGE, "probe-ui")
    with trio.fail_after(WAIT):
        await router.request("store", ADMIT, expect=ToolCallStepReply)

        with pytest.raises(LineUpError) as refused:
            await shell_side.request("store", CLOSE, expect=ToolCallStepReply)
        assert refused.value.code is ErrorCode.ACL_DENIED
        # Refused unheard: the call is as the router left it.
        got = await router.request(
            "store", ToolCallGetRequest(call_id=CALL), expect=ToolCallGetReply
        )
        assert got.call is not None
        assert got.call.state == "received"

    rows = await audit_rows(
        router,
        lambda rows: any(r.peer == "probe-ui" for r in rows),
        event_prefix="bus.acl_denied",
    )
    [row] = [r for r in rows if r.peer == "probe-ui"]
    assert (row.actor, row.code, row.message_type) == (
        "store",
        ErrorCode.ACL_DENIED.value,
        CLOSE.TYPE,
    )

    # The same request from the router, which owns tool calls, is served.
    with trio.fail_after(WAIT):
        done = await router.request("store", CLOSE, expect=ToolCallStepReply)
    assert (done.call.state, done.changed) == ("cancelled", True)
