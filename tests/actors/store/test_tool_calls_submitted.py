"""The `submitted` state (seed 000 §7.2, seed 003 §3.2): a MiniApp's accepted result is recorded
`submitted` with its result and its terminal outbox row in one step, and the call becomes
`completed` only in the transaction of the AppServer's acknowledgement of that row; a permanent
refusal of the row fails the call with the refusal's code. Nothing else moves a submitted call."""

from __future__ import annotations

import pytest

from lineup.actors.kernel import ErrorCode
from lineup.actors.store.messages import (
    AuditQueryReply,
    AuditQueryRequest,
    OutboxAckReply,
    OutboxAckRequest,
    OutboxFailReply,
    OutboxFailRequest,
    ToolCallStepReply,
)
from lineup.facts.tool_calls import ROWS
from lineup.tests.actors.store._harness import StoreHarness, independent_rows, refusal
from lineup.tests.actors.store.test_tool_calls import (
    INSTANCE,
    LATER,
    RECEIPT,
    RESULT,
    SCOPE,
    get,
    must_get,
    outbox,
    row_id,
    running,
    step,
    written,
)

FINAL_ROW = row_id("terminal")


@pytest.fixture
async def store(store: StoreHarness) -> StoreHarness:
    await store.put_live_instances(SCOPE, INSTANCE)
    return store


async def test_a_result_makes_the_call_submitted_with_its_result_and_one_terminal_row(
    store: StoreHarness,
) -> None:
    await running(store)

    reply = await store.ask(step("submit", expected_app_scope=SCOPE), ToolCallStepReply)

    assert (reply.before, reply.changed, reply.call.state, reply.call.result) == (
        "running", True, "submitted", {"ok": True},
    )  # fmt: skip
    assert await outbox(store) == [(row_id("accepted"), RECEIPT), (FINAL_ROW, RESULT)]
    assert independent_rows(
        store.db_path, f"SELECT role, status FROM tool_call_outbox WHERE outbox_id = '{FINAL_ROW}'"
    ) == [("terminal", "submitted")]


async def test_the_outbox_ack_of_its_result_completes_the_call_in_the_same_transaction(
    store: StoreHarness,
) -> None:
    await running(store)
    await store.ask(step("submit"), ToolCallStepReply)

    acked = await store.ask(OutboxAckRequest(outbox_id=FINAL_ROW), OutboxAckReply)

    call = await must_get(store)
    assert acked.acked is True
    assert (call.state, call.result, call.error_code) == ("completed", {"ok": True}, None)
    assert await outbox(store) == [(row_id("accepted"), RECEIPT)]
    assert independent_rows(
        store.db_path, f"SELECT status FROM tool_call_outbox WHERE outbox_id = '{FINAL_ROW}'"
    ) == [("completed",)]
    events = (await store.ask(AuditQueryRequest(limit=100), AuditQueryReply)).records
    assert [(r.event, r.actor) for r in events if r.subject_id == "call-1"][-2:] == [
        ("tool_call.submitted", "router"),
        ("tool_call.completed", "transport"),
    ]
    again = await store.ask(OutboxAckRequest(outbox_id=FINAL_ROW), OutboxAckReply)
    assert again.acked is False
    assert await must_get(store) == call  # a repeated ack changes nothing


async def test_an_ack_of_another_row_of_the_call_leaves_it_submitted(store: StoreHarness) -> None:
    await running(store)
    await store.ask(step("submit"), ToolCallStepReply)

    await store.ask(OutboxAckRequest(outbox_id=row_id("accepted")), OutboxAckReply)

    assert (await must_get(store)).state == "submitted"


async def test_a_permanent_refusal_of_the_result_fails_the_call_with_the_refusal_code(
    store: StoreHarness,
) -> None:
    await running(store)
    await store.ask(step("submit"), ToolCallStepReply)

    failed = await store.ask(
        OutboxFailRequest(outbox_id=FINAL_ROW, code="appserver_refused"), OutboxFailReply
    )

    call = await must_get(store)
    assert failed.changed is True
    assert (call.state, call.error_code, call.result) == ("failed", "appserver_refused", None)
    # An ack arriving after all (the AppServer had it) cannot make a final call anything else.
    await store.ask(OutboxAckRequest(outbox_id=FINAL_ROW), OutboxAckReply)
    assert (await must_get(store)).state == "failed"


async def test_an_ack_of_an_ending_leaves_the_call_as_it_ended(store: StoreHarness) -> None:
    await running(store)
    ended = await store.ask(step("close", code="app_closed"), ToolCallStepReply)

    await store.ask(OutboxAckRequest(outbox_id=FINAL_ROW), OutboxAckReply)

    assert await get(store) == ended.call


async def test_nothing_but_its_outbox_row_moves_a_submitted_call(store: StoreHarness) -> None:
    await running(store)
    first = await store.ask(step("submit"), ToolCallStepReply)
    before = await written(store)

    for event in LATER:  # any other event, even another submit
        fresh = {row: f"other:{row}" for row in ROWS[event]}
        assert await refusal(store, step(event, ids=fresh)) is ErrorCode.CALL_ALREADY_FINAL, event
    again = await store.ask(step("submit"), ToolCallStepReply)  # the same submit, retried

    assert (again.changed, again.call) == (False, first.call)
    assert await get(store) == first.call
    assert await written(store) == before
