"""The `submitted` state (seed 000 §7.2, seed 003 §3.2): a MiniApp's accepted result is recorded
`submitted` with its result and its terminal outbox row in one transaction, and the call becomes
`completed` only in the transaction of the AppServer's acknowledgement of that row; a permanent
refusal of the row fails the call with the refusal's code. Nothing else moves a submitted call."""

from __future__ import annotations

from typing import Any

from lineup.actors.kernel import ErrorCode
from lineup.actors.store.messages import (
    AuditQueryReply,
    AuditQueryRequest,
    OutboxAckReply,
    OutboxAckRequest,
    OutboxFailReply,
    OutboxFailRequest,
    ToolCallFinishReply,
    ToolCallFinishRequest,
    ToolCallOutcome,
)
from lineup.tests.actors.store._harness import StoreHarness, independent_rows, refusal
from lineup.tests.actors.store.test_tool_calls import (
    RESULT,
    SCOPE,
    get,
    must_get,
    outbox,
    running,
    wire,
)


def decide(
    to_state: ToolCallOutcome = "submitted", call_id: str = "call-1", **fields: Any
) -> ToolCallFinishRequest:
    values: dict[str, Any] = (
        {"result": {"ok": True}, "wire": wire(RESULT, call_id)}
        if to_state in ("submitted", "completed")
        else {"code": "app_closed", "wire": wire("lineup.v1.tool.error", call_id)}
    )
    return ToolCallFinishRequest(
        call_id=call_id, to_state=to_state, outbox_id=f"final:{call_id}", **(values | fields)
    )


async def test_a_result_makes_the_call_submitted_with_its_result_and_one_terminal_row(
    store: StoreHarness,
) -> None:
    await running(store)

    reply = await store.ask(decide(expected_app_scope=SCOPE), ToolCallFinishReply)

    assert (reply.changed, reply.call.state, reply.call.result) == (True, "submitted", {"ok": True})
    assert await outbox(store) == [("final:call-1", RESULT)]
    assert independent_rows(
        store.db_path, "SELECT role, status FROM tool_call_outbox WHERE outbox_id = 'final:call-1'"
    ) == [("terminal", "submitted")]


async def test_the_outbox_ack_of_its_result_completes_the_call_in_the_same_transaction(
    store: StoreHarness,
) -> None:
    await running(store)
    await store.ask(decide(), ToolCallFinishReply)

    acked = await store.ask(OutboxAckRequest(outbox_id="final:call-1"), OutboxAckReply)

    call = await must_get(store)
    assert acked.acked is True
    assert (call.state, call.result, call.error_code) == ("completed", {"ok": True}, None)
    assert await outbox(store) == []
    events = (await store.ask(AuditQueryRequest(limit=100), AuditQueryReply)).records
    assert [r.event for r in events if r.subject_id == "call-1"][-2:] == [
        "tool_call.submitted",
        "tool_call.completed",
    ]
    again = await store.ask(OutboxAckRequest(outbox_id="final:call-1"), OutboxAckReply)
    assert again.acked is False
    assert await must_get(store) == call  # a repeated ack changes nothing


async def test_an_ack_of_another_row_of_the_call_leaves_it_submitted(store: StoreHarness) -> None:
    await running(store)
    from lineup.actors.store.messages import ToolCallReceiptReply, ToolCallReceiptRequest

    await store.ask(
        ToolCallReceiptRequest(
            call_id="call-1", status="accepted", outbox_id="receipt:call-1:accepted",
            wire=wire("lineup.v1.tool.receipt"),
        ),
        ToolCallReceiptReply,
    )  # fmt: skip
    await store.ask(decide(), ToolCallFinishReply)

    await store.ask(OutboxAckRequest(outbox_id="receipt:call-1:accepted"), OutboxAckReply)

    assert (await must_get(store)).state == "submitted"


async def test_a_permanent_refusal_of_the_result_fails_the_call_with_the_refusal_code(
    store: StoreHarness,
) -> None:
    await running(store)
    await store.ask(decide(), ToolCallFinishReply)

    failed = await store.ask(
        OutboxFailRequest(outbox_id="final:call-1", code="appserver_refused"), OutboxFailReply
    )

    call = await must_get(store)
    assert failed.changed is True
    assert (call.state, call.error_code, call.result) == ("failed", "appserver_refused", None)
    # An ack arriving after all (the AppServer had it) cannot make a final call anything else.
    await store.ask(OutboxAckRequest(outbox_id="final:call-1"), OutboxAckReply)
    assert (await must_get(store)).state == "failed"


async def test_nothing_but_its_outbox_row_moves_a_submitted_call(store: StoreHarness) -> None:
    await running(store)
    first = await store.ask(decide(), ToolCallFinishReply)

    others: list[ToolCallOutcome] = ["submitted", "completed", "failed", "cancelled", "expired"]
    for other in others:
        request = decide(other).model_copy(update={"outbox_id": f"other:{other}"})
        assert await refusal(store, request) is ErrorCode.CALL_ALREADY_FINAL, other
    again = await store.ask(decide(), ToolCallFinishReply)  # the same submit, retried

    assert (again.changed, again.call) == (False, first.call)
    assert await get(store) == first.call
    assert await outbox(store) == [("final:call-1", RESULT)]
