"""Tool call records through the real bus (`actors/store/_tool_calls.py`): recording, legal
moves, ownership, and the one terminal state with its one outbox row. Atomicity and the
model-based property test are in `test_tool_calls_atomic.py`."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pydantic
import pytest
import trio
import trio.testing

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store.messages import (
    AuditQueryReply,
    AuditQueryRequest,
    OutboxPendingReply,
    OutboxPendingRequest,
    ToolCallFinalState,
    ToolCallFinishReply,
    ToolCallFinishRequest,
    ToolCallGetReply,
    ToolCallGetRequest,
    ToolCallListReply,
    ToolCallListRequest,
    ToolCallProgressReply,
    ToolCallProgressRequest,
    ToolCallReceiptReply,
    ToolCallReceiptRequest,
    ToolCallRecordReply,
    ToolCallRecordRequest,
    ToolCallRow,
    ToolCallStep,
    ToolCallTransitionReply,
    ToolCallTransitionRequest,
)
from lineup.tests.actors.store._harness import (
    StoreHarness,
    independent_rows,
    refusal,
    start_store,
)

SCOPE = "task-dashboard"
INSTANCE = "td-1"
SECRET = "hunter2-tool-input"
RESULT = "lineup.v1.tool.result"


def record(call_id: str = "call-1", **fields: Any) -> ToolCallRecordRequest:
    values: dict[str, Any] = {
        "call_id": call_id, "tool": "task-dashboard.open", "inventory_revision": "inv-7",
        "app_scope": SCOPE, "conversation_id": "conv-1", "handling": "launch",
        "input": {"title": "plan"}, "timeout_ms": 60_000,
    }  # fmt: skip
    return ToolCallRecordRequest(**(values | fields))


def wire(kind: str, call_id: str = "call-1", **payload: Any) -> dict[str, Any]:
    return {"v": 1, "type": kind, "payload": {"call_id": call_id, **payload}}


def finish(
    call_id: str = "call-1", to_state: ToolCallFinalState = "completed", *,
    outbox_id: str | None = None, **fields: Any,
) -> ToolCallFinishRequest:  # fmt: skip
    values: dict[str, Any] = (
        {"result": {"ok": True}} if to_state == "completed" else {"code": "handler_failed"}
    )
    values["wire"] = wire(RESULT if to_state == "completed" else "lineup.v1.tool.error", call_id)
    return ToolCallFinishRequest(
        call_id=call_id, to_state=to_state, outbox_id=outbox_id or f"{call_id}/final",
        **(values | fields),
    )  # fmt: skip


def progress(
    call_id: str = "call-1", outbox_id: str = "p-1", **fields: Any
) -> ToolCallProgressRequest:
    values: dict[str, Any] = {
        "expected_app_scope": SCOPE, "expected_instance_id": INSTANCE, "progress": {"done": 1},
        "wire": wire("lineup.v1.tool.progress", call_id),
    }  # fmt: skip
    return ToolCallProgressRequest(call_id=call_id, outbox_id=outbox_id, **(values | fields))


async def move(store: StoreHarness, call_id: str, *steps: ToolCallStep) -> ToolCallRow:
    call = None
    for to_state in steps:
        instance = INSTANCE if to_state == "running" else None
        request = ToolCallTransitionRequest(call_id=call_id, to_state=to_state,
                                            instance_id=instance)  # fmt: skip
        call = (await store.ask(request, ToolCallTransitionReply)).call
    assert call is not None
    return call


async def running(store: StoreHarness, call_id: str = "call-1") -> ToolCallRow:
    await store.ask(record(call_id), ToolCallRecordReply)
    return await move(store, call_id, "routing", "waiting_for_app", "running")


async def get(store: StoreHarness, call_id: str = "call-1") -> ToolCallRow | None:
    return (await store.ask(ToolCallGetRequest(call_id=call_id), ToolCallGetReply)).call


async def must_get(store: StoreHarness, call_id: str = "call-1") -> ToolCallRow:
    call = await get(store, call_id)
    assert call is not None
    return call


async def outbox(store: StoreHarness) -> list[tuple[str, str]]:
    rows = (await store.ask(OutboxPendingRequest(), OutboxPendingReply)).rows
    return [(row.outbox_id, row.kind) for row in rows]


# ---------------------------------------------------------------------------------- record


async def test_a_recorded_call_keeps_every_field_of_the_record_and_its_deadline(
    store: StoreHarness,
) -> None:
    reply = await store.ask(record(instance_id=INSTANCE), ToolCallRecordReply)

    call = reply.call
    assert reply.created is True
    assert (call.call_id, call.tool, call.inventory_revision, call.app_scope, call.instance_id,
            call.conversation_id, call.handling, call.state, call.input) == (
        "call-1", "task-dashboard.open", "inv-7", SCOPE, INSTANCE, "conv-1", "launch",
        "received", {"title": "plan"},
    )  # fmt: skip
    assert (call.result, call.error_code, call.progress, call.timeout_ms) == (None, None, None,
                                                                             60_000)  # fmt: skip
    assert call.created_at == call.updated_at
    assert call.deadline_at == pytest.approx(call.created_at + 60)
    assert await get(store) == call


async def test_recording_the_same_call_twice_writes_one_row_and_returns_the_first(
    store: StoreHarness,
) -> None:
    first = await store.ask(record(), ToolCallRecordReply)
    again = await store.ask(record(input={"title": "other"}), ToolCallRecordReply)

    assert (first.created, again.created) == (True, False)
    assert again.call == first.call
    assert independent_rows(store.db_path, "SELECT count(*) FROM tool_calls") == [(1,)]


async def test_a_refused_call_is_recorded_rejected_with_its_rejection_queued_once(
    store: StoreHarness,
) -> None:
    refused = record(state="rejected", code="tool_not_advertised", outbox_id="r-1",
                     wire=wire("lineup.v1.tool.receipt", status="rejected"))  # fmt: skip

    first = await store.ask(refused, ToolCallRecordReply)
    again = await store.ask(refused, ToolCallRecordReply)

    assert (first.call.state, first.call.error_code) == ("rejected", "tool_not_advertised")
    assert (first.created, again.created) == (True, False)
    assert await outbox(store) == [("r-1", "lineup.v1.tool.receipt")]
    assert await refusal(store, finish(to_state="rejected", code="x")) is (
        ErrorCode.CALL_ALREADY_FINAL
    )


def test_a_record_is_rejected_with_a_code_or_received_without_one() -> None:
    with pytest.raises(pydantic.ValidationError):
        record(state="rejected")
    with pytest.raises(pydantic.ValidationError):
        record(code="tool_not_advertised")
    with pytest.raises(pydantic.ValidationError):  # only a rejected record carries its row
        record(outbox_id="o-1", wire=wire(RESULT))
    with pytest.raises(pydantic.ValidationError):
        record(state="rejected", code="x", outbox_id="o-1")


@pytest.mark.parametrize("value", [{"x": "y" * (256 * 1024)}, {"x": [[[[[[[[[[[[[[[[[[[[[
    [[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}])  # fmt: skip
async def test_an_input_too_large_or_too_deep_is_refused_and_nothing_is_recorded(
    store: StoreHarness, value: dict[str, Any]
) -> None:
    assert await refusal(store, record(input=value)) is ErrorCode.INVALID_ARGUMENTS
    assert await get(store) is None


# ---------------------------------------------------------------------------------- transitions


async def test_a_call_moves_forward_and_each_reply_shows_where_it_is(store: StoreHarness) -> None:
    created = (await store.ask(record(), ToolCallRecordReply)).call
    states = []
    for to_state in ("routing", "waiting_for_app", "running", "submitted"):
        reply = await store.ask(
            ToolCallTransitionRequest(call_id="call-1", to_state=to_state), ToolCallTransitionReply
        )
        assert reply.changed is True
        states.append(reply.call.state)

    assert states == ["routing", "waiting_for_app", "running", "submitted"]
    assert reply.call.updated_at >= created.updated_at


async def test_repeating_a_transition_changes_nothing(store: StoreHarness) -> None:
    await store.ask(record(), ToolCallRecordReply)
    routed = await move(store, "call-1", "routing")

    again = await store.ask(
        ToolCallTransitionRequest(call_id="call-1", to_state="routing"), ToolCallTransitionReply
    )

    assert (again.changed, again.call) == (False, routed)


async def test_a_transition_binds_the_call_to_its_instance_once(store: StoreHarness) -> None:
    await store.ask(record(), ToolCallRecordReply)
    await move(store, "call-1", "routing", "waiting_for_app")

    bound = await store.ask(ToolCallTransitionRequest(
        call_id="call-1", to_state="waiting_for_app", instance_id=INSTANCE,
    ), ToolCallTransitionReply)  # fmt: skip
    other = ToolCallTransitionRequest(call_id="call-1", to_state="running", instance_id="td-2")

    assert (bound.changed, bound.call.state, bound.call.instance_id) == (
        True, "waiting_for_app", INSTANCE,
    )  # fmt: skip
    assert await refusal(store, other) is ErrorCode.INVALID_ARGUMENTS
    assert (await get(store)) == bound.call


async def test_a_transition_records_progress_without_queueing_anything(
    store: StoreHarness,
) -> None:
    await running(store)

    reply = await store.ask(ToolCallTransitionRequest(
        call_id="call-1", to_state="running", progress={"step": 2},
    ), ToolCallTransitionReply)  # fmt: skip

    assert (reply.changed, reply.call.progress) == (True, {"step": 2})
    assert await outbox(store) == []


@pytest.mark.parametrize(("steps", "to_state"), [
    ((), "waiting_for_app"), ((), "running"), ((), "submitted"),
    (("routing",), "submitted"), (("routing", "running"), "routing"),
    (("routing", "running", "submitted"), "running"),
    (("routing", "running"), "waiting_for_app"),
])  # fmt: skip
async def test_an_illegal_transition_is_refused_with_invalid_arguments_and_changes_nothing(
    store: StoreHarness, steps: tuple[ToolCallStep, ...], to_state: ToolCallStep
) -> None:
    await store.ask(record(), ToolCallRecordReply)
    before = await move(store, "call-1", *steps) if steps else await get(store)

    request = ToolCallTransitionRequest(call_id="call-1", to_state=to_state)
    assert await refusal(store, request) is ErrorCode.INVALID_ARGUMENTS
    assert await get(store) == before


async def test_every_transition_of_a_final_call_is_refused_with_call_already_final(
    store: StoreHarness,
) -> None:
    finals: list[ToolCallFinalState] = ["completed", "failed", "cancelled", "expired", "rejected"]
    for final in finals:
        call_id = f"call-{final}"
        await store.ask(record(call_id), ToolCallRecordReply)
        await move(store, call_id, "routing", "running")
        if final == "rejected":
            await store.ask(record(f"{call_id}-r", state="rejected", code="x"),
                            ToolCallRecordReply)  # fmt: skip
            call_id = f"{call_id}-r"
        else:
            await store.ask(finish(call_id, final), ToolCallFinishReply)
        before = await get(store, call_id)
        for to_state in ("routing", "waiting_for_app", "running", "submitted"):
            request = ToolCallTransitionRequest(call_id=call_id, to_state=to_state)
            assert await refusal(store, request) is ErrorCode.CALL_ALREADY_FINAL, (final, to_state)
        assert await get(store, call_id) == before


async def test_a_transition_of_an_unknown_call_is_refused_with_invalid_arguments(
    store: StoreHarness,
) -> None:
    request = ToolCallTransitionRequest(call_id="nope", to_state="routing")
    assert await refusal(store, request) is ErrorCode.INVALID_ARGUMENTS


def test_a_transition_cannot_name_a_final_state() -> None:
    with pytest.raises(pydantic.ValidationError):
        ToolCallTransitionRequest.model_validate(
            {"type": "store.tool_call.transition", "call_id": "c", "to_state": "completed"}
        )


# ---------------------------------------------------------------------------------- ownership


async def test_a_call_is_moved_only_by_its_own_scope_and_instance(store: StoreHarness) -> None:
    await running(store)
    other_scope = {"expected_app_scope": "whiteboard"}
    other_instance = {"expected_app_scope": SCOPE, "expected_instance_id": "td-2"}

    for fields, code in ((other_scope, ErrorCode.APP_SCOPE_MISMATCH),
                         (other_instance, ErrorCode.APP_INSTANCE_NOT_FOUND)):  # fmt: skip
        requests = [
            ToolCallTransitionRequest(call_id="call-1", to_state="submitted", **fields),
            finish(**fields),
            progress(**fields),
        ]
        for request in requests:
            assert await refusal(store, request) is code, request

    assert (await must_get(store)).state == "running"
    assert await outbox(store) == []


async def test_a_foreign_caller_learns_nothing_about_a_final_call(store: StoreHarness) -> None:
    await running(store)
    await store.ask(finish(), ToolCallFinishReply)

    assert await refusal(store, finish(expected_app_scope="whiteboard")) is (
        ErrorCode.APP_SCOPE_MISMATCH
    )


async def test_the_expected_owner_may_move_its_call(store: StoreHarness) -> None:
    await running(store)
    reply = await store.ask(ToolCallTransitionRequest(
        call_id="call-1", to_state="submitted", expected_app_scope=SCOPE,
        expected_instance_id=INSTANCE,
    ), ToolCallTransitionReply)  # fmt: skip
    assert reply.call.state == "submitted"


# ---------------------------------------------------------------------------------- finish


async def test_finishing_a_call_stores_its_result_and_queues_one_terminal_row(
    store: StoreHarness,
) -> None:
    await running(store)

    reply = await store.ask(finish(), ToolCallFinishReply)

    assert (reply.changed, reply.call.state, reply.call.result) == (True, "completed", {"ok": True})
    assert reply.call.error_code is None
    pending = (await store.ask(OutboxPendingRequest(), OutboxPendingReply)).rows
    assert [(row.outbox_id, row.conversation_id, row.kind) for row in pending] == [
        ("call-1/final", "conv-1", RESULT)
    ]
    assert pending[0].body == wire(RESULT)


@pytest.mark.parametrize("final", ["failed", "cancelled", "expired"])
async def test_a_call_that_ends_otherwise_keeps_its_code_and_no_result(
    store: StoreHarness, final: ToolCallFinalState
) -> None:
    await running(store)

    reply = await store.ask(finish(to_state=final, code="app_closed"), ToolCallFinishReply)

    assert (reply.call.state, reply.call.error_code, reply.call.result) == (
        final, "app_closed", None,
    )  # fmt: skip


async def test_a_retried_finish_writes_nothing_and_answers_unchanged(store: StoreHarness) -> None:
    await running(store)
    first = await store.ask(finish(), ToolCallFinishReply)

    again = await store.ask(finish(), ToolCallFinishReply)

    assert (again.changed, again.call) == (False, first.call)
    assert await outbox(store) == [("call-1/final", RESULT)]


@pytest.mark.parametrize("second", [
    finish(to_state="failed", outbox_id="call-1/other"),
    finish(to_state="completed", outbox_id="call-1/other"),
    finish(to_state="cancelled", code="app_closed"),  # the same outbox id, another state
])  # fmt: skip
async def test_a_second_terminal_is_refused_with_call_already_final_and_writes_nothing(
    store: StoreHarness, second: ToolCallFinishRequest
) -> None:
    await running(store)
    first = await store.ask(finish(), ToolCallFinishReply)

    assert await refusal(store, second) is ErrorCode.CALL_ALREADY_FINAL
    assert await get(store) == first.call
    assert await outbox(store) == [("call-1/final", RESULT)]


async def test_concurrent_finishes_of_one_call_end_it_once_with_one_row(
    store: StoreHarness,
) -> None:
    await running(store)
    outcomes: list[bool | ErrorCode] = []
    finals: list[ToolCallFinalState] = ["completed", "failed", "cancelled", "expired"]

    async def one(i: int) -> None:
        try:
            reply = await store.ask(finish(to_state=finals[i % 4], outbox_id=f"o-{i}"),
                                    ToolCallFinishReply)  # fmt: skip
            outcomes.append(reply.changed)
        except LineUpError as exc:
            outcomes.append(exc.code)

    async with trio.open_nursery() as nursery:
        for i in range(40):
            nursery.start_soon(one, i)

    assert outcomes.count(True) == 1
    assert outcomes.count(ErrorCode.CALL_ALREADY_FINAL) == 39
    assert len(await outbox(store)) == 1
    assert independent_rows(store.db_path, "SELECT count(*) FROM tool_call_outbox") == [(1,)]


@pytest.mark.parametrize(("steps", "final"), [
    ((), "completed"), (("routing",), "completed"), (("routing", "waiting_for_app"), "completed"),
    (("routing", "running"), "rejected"), (("routing", "running", "submitted"), "cancelled"),
    (("routing", "running", "submitted"), "expired"),
])  # fmt: skip
async def test_a_finish_the_call_cannot_reach_from_where_it_is_is_refused_with_invalid_arguments(
    store: StoreHarness, steps: tuple[ToolCallStep, ...], final: ToolCallFinalState
) -> None:
    await store.ask(record(), ToolCallRecordReply)
    if steps:
        await move(store, "call-1", *steps)
    before = await get(store)

    assert await refusal(store, finish(to_state=final)) is ErrorCode.INVALID_ARGUMENTS
    assert await get(store) == before
    assert await outbox(store) == []


async def test_a_finish_whose_outbox_id_is_taken_is_refused_and_the_call_stays_running(
    store: StoreHarness,
) -> None:
    await running(store)
    await store.ask(ToolCallReceiptRequest(call_id="call-1", status="accepted", outbox_id="taken",
                                           wire=wire("lineup.v1.tool.receipt")),
                    ToolCallReceiptReply)  # fmt: skip

    assert await refusal(store, finish(outbox_id="taken")) is ErrorCode.INVALID_ARGUMENTS
    assert (await must_get(store)).state == "running"


def test_a_finish_carries_a_result_when_completed_and_a_code_otherwise() -> None:
    with pytest.raises(pydantic.ValidationError):
        finish(result=None)
    with pytest.raises(pydantic.ValidationError):
        finish(code="x")
    with pytest.raises(pydantic.ValidationError):
        finish(to_state="failed", code=None)
    with pytest.raises(pydantic.ValidationError):
        finish(to_state="failed", result={"ok": False})
    with pytest.raises(pydantic.ValidationError):
        finish(wire={"payload": {}})  # no wire type


async def test_a_finish_retried_after_a_restart_still_writes_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    async with trio.open_nursery() as nursery:
        store = await start_store(nursery, data_dir)
        await running(store)
        first = await store.ask(finish(), ToolCallFinishReply)
        nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        store = await start_store(nursery, data_dir)
        again = await store.ask(finish(), ToolCallFinishReply)
        other = await refusal(store, finish(to_state="failed", outbox_id="o-2"))
        rows = await outbox(store)
        nursery.cancel_scope.cancel()

    assert (again.changed, again.call) == (False, first.call)
    assert other is ErrorCode.CALL_ALREADY_FINAL
    assert rows == [("call-1/final", RESULT)]


# ---------------------------------------------------------------------------------- progress


async def test_progress_is_recorded_and_queued_once_per_outbox_id(store: StoreHarness) -> None:
    await running(store)

    first = await store.ask(progress(), ToolCallProgressReply)
    again = await store.ask(progress(), ToolCallProgressReply)
    later = await store.ask(progress(outbox_id="p-2"), ToolCallProgressReply)

    assert (first.created, again.created, later.created) == (True, False, True)
    assert await outbox(store) == [("p-1", "lineup.v1.tool.progress"),
                                   ("p-2", "lineup.v1.tool.progress")]  # fmt: skip
    assert (await must_get(store)).progress == {"done": 1}


async def test_progress_on_a_final_call_is_refused_but_its_retry_is_answered(
    store: StoreHarness,
) -> None:
    await running(store)
    await store.ask(progress(), ToolCallProgressReply)
    await store.ask(finish(), ToolCallFinishReply)

    assert await refusal(store, progress(outbox_id="p-late")) is ErrorCode.CALL_ALREADY_FINAL
    assert (await store.ask(progress(), ToolCallProgressReply)).created is False
    assert [outbox_id for outbox_id, _ in await outbox(store)] == ["p-1", "call-1/final"]


# ---------------------------------------------------------------------------------- receipts


def receipt(
    status: str = "accepted", outbox_id: str = "rc-1", call_id: str = "call-1"
) -> ToolCallReceiptRequest:
    return ToolCallReceiptRequest.model_validate({
        "type": "store.tool_call.receipt", "call_id": call_id, "status": status,
        "outbox_id": outbox_id, "wire": wire("lineup.v1.tool.receipt", call_id, status=status),
    })  # fmt: skip


async def test_receipts_are_queued_once_per_outbox_id_in_any_state(store: StoreHarness) -> None:
    await store.ask(record(), ToolCallRecordReply)

    accepted = await store.ask(receipt(), ToolCallReceiptReply)
    again = await store.ask(receipt(), ToolCallReceiptReply)
    await move(store, "call-1", "routing", "running")
    await store.ask(finish(to_state="cancelled", code="app_closed"), ToolCallFinishReply)
    late = await store.ask(receipt("activation_cancelled", "rc-2"), ToolCallReceiptReply)

    assert (accepted.created, again.created, late.created) == (True, False, True)
    assert [outbox_id for outbox_id, _ in await outbox(store)] == ["rc-1", "call-1/final", "rc-2"]
    assert (await must_get(store)).state == "cancelled"


@pytest.mark.parametrize("request_", [
    receipt(call_id="unknown"),
    receipt(outbox_id="p-1"),  # already a progress row of this call
    receipt(status="starting"),  # the same outbox id as the accepted receipt, another status
])  # fmt: skip
async def test_a_receipt_for_an_unknown_call_or_a_used_outbox_id_is_refused(
    store: StoreHarness, request_: ToolCallReceiptRequest
) -> None:
    await running(store)
    await store.ask(progress(), ToolCallProgressReply)
    await store.ask(receipt(), ToolCallReceiptReply)

    assert await refusal(store, request_) is ErrorCode.INVALID_ARGUMENTS


# ---------------------------------------------------------------------------------- get, list


async def test_getting_a_call_never_recorded_answers_none(store: StoreHarness) -> None:
    assert await get(store, "never") is None


async def test_the_call_list_filters_by_scope_instance_and_finality(store: StoreHarness) -> None:
    await running(store, "a")  # task-dashboard, td-1, running
    await running(store, "b")
    await store.ask(finish("b"), ToolCallFinishReply)
    await store.ask(record("c"), ToolCallRecordReply)  # received, no instance yet
    await store.ask(record("d", app_scope="whiteboard"), ToolCallRecordReply)

    async def ids(**filters: Any) -> list[str]:
        reply = await store.ask(ToolCallListRequest(**filters), ToolCallListReply)
        return [call.call_id for call in reply.calls]

    assert await ids() == ["a", "b", "c", "d"]
    assert await ids(app_scope=SCOPE) == ["a", "b", "c"]
    assert await ids(instance_id=INSTANCE) == ["a", "b"]
    assert await ids(non_final_only=True) == ["a", "c", "d"]
    assert await ids(app_scope=SCOPE, instance_id=INSTANCE, non_final_only=True) == ["a"]
    assert await ids(app_scope="nobody") == []


async def test_the_call_list_pages_by_seq_and_stops_at_the_reply_byte_budget(
    store: StoreHarness,
) -> None:
    big = {"text": "x" * (200 * 1024)}
    for i in range(4):
        await store.ask(record(f"c{i}", input=big), ToolCallRecordReply)

    seen: list[str] = []
    pages = 0
    after = 0
    while True:
        page = await store.ask(ToolCallListRequest(after_seq=after), ToolCallListReply)
        if not page.calls:
            break
        pages += 1
        seen += [call.call_id for call in page.calls]
        after = page.calls[-1].seq
    limited = await store.ask(ToolCallListRequest(limit=1), ToolCallListReply)

    assert seen == ["c0", "c1", "c2", "c3"]
    assert pages > 1
    assert [call.call_id for call in limited.calls] == ["c0"]


# ---------------------------------------------------------------------------------- audit


async def test_tool_call_changes_are_audited_without_input_result_or_progress(
    store: StoreHarness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    await store.ask(record(input={"secret": SECRET}), ToolCallRecordReply)
    await move(store, "call-1", "routing", "running")
    await store.ask(progress(progress={"secret": SECRET}), ToolCallProgressReply)
    await store.ask(finish(result={"secret": SECRET}), ToolCallFinishReply)
    assert await refusal(store, finish(to_state="failed", outbox_id="o-2")) is (
        ErrorCode.CALL_ALREADY_FINAL
    )

    await trio.testing.wait_all_tasks_blocked()
    found = await store.ask(AuditQueryRequest(event_prefix="tool_call."), AuditQueryReply)

    assert [(r.event, r.actor, r.peer, r.subject_id, r.message_type) for r in found.records] == [
        ("tool_call.received", "router", SCOPE, "call-1", None),
        ("tool_call.routing", "router", SCOPE, "call-1", None),
        ("tool_call.running", "router", SCOPE, "call-1", None),
        ("tool_call.completed", "router", SCOPE, "call-1", RESULT),
    ]
    for row in independent_rows(store.db_path, "SELECT * FROM audit"):
        assert not any(SECRET in str(value) for value in row)
    assert SECRET not in caplog.text
