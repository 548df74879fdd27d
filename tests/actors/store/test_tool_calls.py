"""Tool call steps through the real bus (`actors/store/tool_calls/operations.py`): births,
moves, repeats, ownership, and the one terminal state with its one outbox row. Each step is ONE
request that writes the call's state, all its rows and one audit row. Atomicity and the
model-based property test are in `test_tool_calls_atomic.py`, the `submitted` state and its
settling by the outbox in `test_tool_calls_submitted.py`."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pydantic
import pytest
import trio
import trio.testing

from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.actors.store.messages import (
    AuditQueryReply,
    AuditQueryRequest,
    AuditRecord,
    OutboxAckReply,
    OutboxAckRequest,
    OutboxPendingReply,
    OutboxPendingRequest,
    OutboxRowIn,
    ToolCallFacts,
    ToolCallGetReply,
    ToolCallGetRequest,
    ToolCallListReply,
    ToolCallListRequest,
    ToolCallProgressReply,
    ToolCallProgressRequest,
    ToolCallRow,
    ToolCallState,
    ToolCallStepReply,
    ToolCallStepRequest,
)
from lineup.facts.tool_calls import CODED, ROWS, Row, ToolCallEvent
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
ERROR = "lineup.v1.tool.error"
RECEIPT = "lineup.v1.tool.receipt"
BINDS: frozenset[ToolCallEvent] = frozenset({"hold", "hand_over", "activated"})


@pytest.fixture
async def store(store: StoreHarness) -> StoreHarness:
    """The store, with the instances these tests give calls to recorded live."""
    await store.put_live_instances(SCOPE, INSTANCE, "td-2")
    return store


def facts(**fields: Any) -> ToolCallFacts:
    values: dict[str, Any] = {
        "tool": "task-dashboard.open", "inventory_revision": "inv-7", "app_scope": SCOPE,
        "conversation_id": "conv-1", "handling": "launch", "input": {"title": "plan"},
        "timeout_ms": 60_000,
    }  # fmt: skip
    return ToolCallFacts(**(values | fields))


def wire(kind: str, call_id: str = "call-1", **payload: Any) -> dict[str, Any]:
    return {"v": 1, "type": kind, "payload": {"call_id": call_id, **payload}}


def row_id(row: Row, call_id: str = "call-1") -> str:
    """The outbox id of a call's row, as the router names them."""
    return f"final:{call_id}" if row == "terminal" else f"receipt:{call_id}:{row}"


def rows_of(
    event: ToolCallEvent, call_id: str = "call-1", *, ids: dict[Row, str] | None = None
) -> tuple[OutboxRowIn, ...]:
    """The rows `event` writes (`ROWS[event]`), with their usual ids unless `ids` says else."""
    made = []
    for row in ROWS[event]:
        if row == "terminal":
            body = wire(RESULT if event == "submit" else ERROR, call_id)
        else:
            body = wire(RECEIPT, call_id, status=row)
        outbox_id = (ids or {}).get(row, row_id(row, call_id))
        made.append(OutboxRowIn(row=row, outbox_id=outbox_id, wire=body))
    return tuple(made)


def step(
    event: ToolCallEvent,
    call_id: str = "call-1",
    *,
    ids: dict[Row, str] | None = None,
    **fields: Any,
) -> ToolCallStepRequest:
    """A well-formed step: the rows of its event, an instance for an event that binds one, a
    result for `submit`, a code for an ending."""
    values: dict[str, Any] = {}
    if event in BINDS:
        values["instance_id"] = INSTANCE
    if event == "submit":
        values["result"] = {"ok": True}
    if event in CODED:
        values["code"] = "handler_failed"
    return ToolCallStepRequest(
        call_id=call_id, event=event, rows=rows_of(event, call_id, ids=ids), **(values | fields)
    )


def birth(
    event: ToolCallEvent = "admit", call_id: str = "call-1", **fields: Any
) -> ToolCallStepRequest:
    return step(event, call_id, **({"new": facts()} | fields))


async def walk(store: StoreHarness, call_id: str, *events: ToolCallEvent) -> ToolCallRow:
    """Bear the call by the first event, then move it by the others."""
    reply = await store.ask(birth(events[0], call_id), ToolCallStepReply)
    for event in events[1:]:
        reply = await store.ask(step(event, call_id), ToolCallStepReply)
    return reply.call


async def running(store: StoreHarness, call_id: str = "call-1") -> ToolCallRow:
    return await walk(store, call_id, "hand_over", "take")


async def get(store: StoreHarness, call_id: str = "call-1") -> ToolCallRow | None:
    return (await store.ask(ToolCallGetRequest(call_id=call_id), ToolCallGetReply)).call


async def must_get(store: StoreHarness, call_id: str = "call-1") -> ToolCallRow:
    call = await get(store, call_id)
    assert call is not None
    return call


async def outbox(store: StoreHarness) -> list[tuple[str, str]]:
    rows = (await store.ask(OutboxPendingRequest(), OutboxPendingReply)).rows
    return [(row.outbox_id, row.kind) for row in rows]


async def audit(store: StoreHarness, call_id: str = "call-1") -> list[AuditRecord]:
    found = await store.ask(AuditQueryRequest(event_prefix="tool_call.", limit=1000),
                            AuditQueryReply)  # fmt: skip
    return [record for record in found.records if record.subject_id == call_id]


def links(store: StoreHarness) -> list[tuple[object, ...]]:
    return independent_rows(
        store.db_path, "SELECT outbox_id, call_id, role, status FROM tool_call_outbox ORDER BY 1"
    )


async def written(store: StoreHarness) -> tuple[object, ...]:
    """Everything a tool call request may write, to compare before and after."""
    return (
        independent_rows(store.db_path, "SELECT * FROM tool_calls ORDER BY seq"),
        independent_rows(store.db_path, "SELECT outbox_id, kind, body FROM outbox ORDER BY seq"),
        links(store),
        independent_rows(store.db_path, "SELECT count(*) FROM audit"),
    )


# ---------------------------------------------------------------------------------- births


async def test_a_call_born_keeps_every_fact_and_its_deadline(store: StoreHarness) -> None:
    reply = await store.ask(birth("hand_over"), ToolCallStepReply)

    call = reply.call
    assert (reply.before, reply.changed, reply.created) == (None, True, True)
    assert (call.call_id, call.tool, call.inventory_revision, call.app_scope, call.instance_id,
            call.conversation_id, call.handling, call.state, call.input) == (
        "call-1", "task-dashboard.open", "inv-7", SCOPE, INSTANCE, "conv-1", "launch",
        "waiting_for_app", {"title": "plan"},
    )  # fmt: skip
    assert (call.result, call.error_code, call.progress, call.timeout_ms) == (None, None, None,
                                                                             60_000)  # fmt: skip
    assert call.created_at == call.updated_at
    assert call.deadline_at == pytest.approx(call.created_at + 60)
    assert await get(store) == call


async def test_a_hand_over_birth_writes_the_call_its_accepted_receipt_and_one_audit_row(
    store: StoreHarness,
) -> None:
    await store.ask(birth("hand_over"), ToolCallStepReply)

    pending = (await store.ask(OutboxPendingRequest(), OutboxPendingReply)).rows
    assert [(row.outbox_id, row.conversation_id, row.kind) for row in pending] == [
        ("receipt:call-1:accepted", "conv-1", RECEIPT)
    ]
    assert pending[0].body == wire(RECEIPT, status="accepted")
    assert links(store) == [("receipt:call-1:accepted", "call-1", "receipt", "accepted")]
    assert [(r.event, r.message_type) for r in await audit(store)] == [
        ("tool_call.waiting_for_app", RECEIPT)
    ]


@pytest.mark.parametrize(("event", "state", "row"), [
    ("admit", "received", "accepted"), ("hold", "routing", "accepted"),
    ("hand_over", "waiting_for_app", "accepted"), ("refuse", "rejected", "terminal"),
])  # fmt: skip
async def test_each_birth_records_the_call_in_its_state_with_its_one_row(
    store: StoreHarness, event: ToolCallEvent, state: ToolCallState, row: Row
) -> None:
    reply = await store.ask(birth(event), ToolCallStepReply)

    assert (reply.call.state, reply.created) == (state, True)
    assert reply.call.instance_id == (INSTANCE if event in BINDS else None)
    assert reply.call.error_code == ("handler_failed" if event == "refuse" else None)
    status = "rejected" if row == "terminal" else row
    assert links(store) == [(row_id(row), "call-1", "receipt" if row != "terminal" else row,
                             status)]  # fmt: skip
    assert [r.event for r in await audit(store)] == [f"tool_call.{state}"]


@pytest.mark.parametrize("again", ["admit", "hold", "hand_over", "refuse"])
async def test_a_birth_of_a_call_that_exists_writes_nothing_and_answers_created_false(
    store: StoreHarness, again: ToolCallEvent
) -> None:
    first = await store.ask(birth(), ToolCallStepReply)
    before = await written(store)

    other = birth(again, new=facts(input={"title": "other"}, app_scope=SCOPE))
    reply = await store.ask(other, ToolCallStepReply)

    assert (reply.created, reply.changed, reply.before, reply.call) == (
        False, False, "received", first.call,
    )  # fmt: skip
    assert await written(store) == before


async def test_a_refused_call_is_recorded_rejected_with_its_error_queued_once(
    store: StoreHarness,
) -> None:
    refused = birth("refuse", code="tool_not_advertised")

    first = await store.ask(refused, ToolCallStepReply)
    again = await store.ask(refused, ToolCallStepReply)

    assert (first.call.state, first.call.error_code) == ("rejected", "tool_not_advertised")
    assert (first.created, again.created, again.changed) == (True, False, False)
    assert await outbox(store) == [("final:call-1", ERROR)]
    assert await refusal(store, step("reject", ids={"terminal": "other"})) is (
        ErrorCode.CALL_ALREADY_FINAL
    )


@pytest.mark.parametrize("event", ["hold", "hand_over", "activate", "take", "fail"])
async def test_a_step_of_an_unknown_call_without_its_facts_is_refused_and_records_nothing(
    store: StoreHarness, event: ToolCallEvent
) -> None:
    assert await refusal(store, step(event, "nope")) is ErrorCode.INVALID_ARGUMENTS
    assert await get(store, "nope") is None
    assert await outbox(store) == []


@pytest.mark.parametrize("value", [{"x": "y" * (256 * 1024)}, {"x": [[[[[[[[[[[[[[[[[[[[[
    [[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}])  # fmt: skip
async def test_an_input_too_large_or_too_deep_is_refused_and_nothing_is_recorded(
    store: StoreHarness, value: dict[str, Any]
) -> None:
    before = await written(store)
    assert await refusal(store, birth(new=facts(input=value))) is ErrorCode.INVALID_ARGUMENTS
    assert await get(store) is None
    assert await written(store) == before


async def test_a_birth_whose_outbox_id_is_another_calls_is_refused_and_records_nothing(
    store: StoreHarness,
) -> None:
    await store.ask(birth(), ToolCallStepReply)
    before = await written(store)

    taken = birth("hand_over", "call-2", ids={"accepted": row_id("accepted")})

    assert await refusal(store, taken) is ErrorCode.INVALID_ARGUMENTS
    assert await get(store, "call-2") is None
    assert await written(store) == before


# ---------------------------------------------------------------------------------- the request


def test_a_step_request_is_refused_unless_its_parts_fit_its_event() -> None:
    bad: list[dict[str, Any]] = [
        {"event": "admit", "new": facts(), "rows": ()},  # without its row
        {"event": "admit", "new": facts(), "rows": rows_of("refuse")},  # another event's row
        {"event": "launch_failed", "code": "x", "rows": rows_of("launch_failed")[::-1]},
        {"event": "take", "rows": rows_of("activate")},  # take writes no row
        {"event": "take", "result": {"ok": True}},  # a result goes with submit only
        {"event": "submit", "rows": rows_of("submit")},  # submit without its result
        {"event": "fail", "rows": rows_of("fail")},  # an ending without its code
        {"event": "refuse", "new": facts(), "rows": rows_of("refuse")},
        {"event": "take", "code": "x"},  # a code on an event that carries none
        {"event": "submit", "result": {}, "code": "x", "rows": rows_of("submit")},
        {"event": "settle"},  # only the outbox ack settles a call
        {"event": "settle_refused", "code": "x"},
        {"event": "take", "new": facts()},  # facts on an event that is not a birth
        {"event": "activate", "new": facts(), "rows": rows_of("activate")},
        {"event": "admit", "rows": rows_of("admit")},  # a birth only, without its facts
        {"event": "refuse", "code": "x", "rows": rows_of("refuse")},
        {"event": "hold", "new": facts(), "rows": rows_of("hold")},  # without its instance
        {"event": "hand_over", "rows": rows_of("hand_over")},
        {"event": "activated", "rows": rows_of("activated")},
    ]
    for fields in bad:
        with pytest.raises(pydantic.ValidationError):
            ToolCallStepRequest(call_id="call-1", **fields)
    births: tuple[ToolCallEvent, ...] = ("admit", "hold", "hand_over", "refuse")
    for event in births:  # well-formed steps pass
        birth(event)
    for event in ("hold", "hand_over", "activate", "activated", "take", "submit", "fail"):
        step(event)


def test_an_outbox_row_needs_a_wire_type() -> None:
    with pytest.raises(pydantic.ValidationError):
        OutboxRowIn(row="terminal", outbox_id="o-1", wire={"payload": {}})


# ---------------------------------------------------------------------------------- moves


async def test_a_launch_call_moves_forward_writing_each_of_its_rows_once(
    store: StoreHarness,
) -> None:
    created = await store.ask(birth(), ToolCallStepReply)
    seen = []
    for event in ("activate", "activated", "take", "submit"):
        reply = await store.ask(step(event), ToolCallStepReply)
        seen.append((reply.before, reply.call.state, reply.changed, reply.created))

    assert seen == [
        ("received", "routing", True, False),
        ("routing", "waiting_for_app", True, False),
        ("waiting_for_app", "running", True, False),
        ("running", "submitted", True, False),
    ]
    assert reply.call.instance_id == INSTANCE  # bound by `activated`
    assert reply.call.updated_at >= created.call.updated_at
    assert await outbox(store) == [
        ("receipt:call-1:accepted", RECEIPT), ("receipt:call-1:starting", RECEIPT),
        ("receipt:call-1:activation_ready", RECEIPT), ("final:call-1", RESULT),
    ]  # fmt: skip
    assert [(r.event, r.message_type) for r in await audit(store)] == [
        ("tool_call.received", RECEIPT), ("tool_call.routing", RECEIPT),
        ("tool_call.waiting_for_app", RECEIPT), ("tool_call.running", None),
        ("tool_call.submitted", RESULT),
    ]  # fmt: skip


@pytest.mark.parametrize(("event", "state", "receipt"), [
    ("launch_failed", "failed", "activation_failed"),
    ("launch_cancelled", "cancelled", "activation_cancelled"),
])  # fmt: skip
async def test_a_launch_that_ends_writes_its_receipt_and_the_terminal_row_in_one_step(
    store: StoreHarness, event: ToolCallEvent, state: ToolCallState, receipt: Row
) -> None:
    await walk(store, "call-1", "admit", "activate")

    reply = await store.ask(step(event, code="activation_failed"), ToolCallStepReply)

    assert (reply.call.state, reply.call.error_code, reply.changed) == (
        state, "activation_failed", True,
    )  # fmt: skip
    assert await outbox(store) == [
        ("receipt:call-1:accepted", RECEIPT), ("receipt:call-1:starting", RECEIPT),
        (row_id(receipt), RECEIPT), ("final:call-1", ERROR),
    ]  # fmt: skip
    assert links(store)[0] == ("final:call-1", "call-1", "terminal", state)
    assert [r.event for r in await audit(store)][-1:] == [f"tool_call.{state}"]
    assert len(await audit(store)) == 3  # one per step


@pytest.mark.parametrize("events", [
    ("admit", "admit"),  # the same birth again (with its facts)
    ("admit", "activate", "activate"),
    ("hold", "hold"),  # a held call held again (without its facts)
    ("admit", "activate", "activated", "activated"),
    ("hand_over", "hand_over"),
    ("hand_over", "take", "take"),
    ("hand_over", "take", "submit", "submit"),
    ("hand_over", "take", "fail", "fail"),
    ("admit", "activate", "launch_failed", "launch_failed"),
    ("refuse", "refuse"),
])  # fmt: skip
async def test_a_repeated_step_writes_nothing_and_answers_unchanged(
    store: StoreHarness, events: tuple[ToolCallEvent, ...]
) -> None:
    call = await walk(store, "call-1", *events[:-1])
    before = await written(store)

    last = events[-1]
    again = birth(last) if len(events) == 2 and last in ("admit", "refuse") else step(last)
    reply = await store.ask(again, ToolCallStepReply)

    assert (reply.changed, reply.created, reply.before, reply.call) == (
        False, False, call.state, call,
    )  # fmt: skip
    assert await written(store) == before


@pytest.mark.parametrize("events", [("hold",), ("admit", "hold")])
async def test_a_held_calls_hand_over_does_not_write_accepted_twice(
    store: StoreHarness, events: tuple[ToolCallEvent, ...]
) -> None:
    held = await walk(store, "call-1", *events)

    reply = await store.ask(step("hand_over"), ToolCallStepReply)

    assert (held.state, reply.before, reply.call.state, reply.changed) == (
        "routing", "routing", "waiting_for_app", True,
    )  # fmt: skip
    assert await outbox(store) == [("receipt:call-1:accepted", RECEIPT)]
    assert [r.event for r in await audit(store)][-2:] == [
        "tool_call.routing", "tool_call.waiting_for_app",
    ]  # fmt: skip
    assert len(await audit(store)) == len(events) + 1


async def test_a_step_binds_the_call_to_its_instance_once(store: StoreHarness) -> None:
    await walk(store, "call-1", "admit", "activate")
    bound = await store.ask(step("activated"), ToolCallStepReply)
    before = await written(store)

    other = step("take", instance_id="td-2")

    assert (bound.call.state, bound.call.instance_id) == ("waiting_for_app", INSTANCE)
    assert await refusal(store, other) is ErrorCode.INVALID_ARGUMENTS
    assert await written(store) == before


@pytest.mark.parametrize(("events", "event"), [
    ((), "hand_over"), ((), "hold"), (("admit", "activate"), "activated"),
    (("admit",), "hand_over"),
])  # fmt: skip
async def test_no_call_is_given_to_an_instance_whose_end_is_recorded(
    store: StoreHarness, events: tuple[ToolCallEvent, ...], event: ToolCallEvent
) -> None:
    """A launch's `activated` (or a call's `hand_over`) that comes after its instance's end was
    recorded would leave the call open on nobody: the router has already closed that
    instance's calls, and no instance will ever take it."""
    await store.put_live_instances(SCOPE, "ended")
    await store.end_instance(SCOPE, "ended")
    if events:
        await walk(store, "call-1", *events)
    before = await written(store)

    request = step(event, instance_id="ended")
    if not events:
        request = request.model_copy(update={"new": facts()})

    assert await refusal(store, request) is ErrorCode.APP_INSTANCE_NOT_FOUND
    assert await written(store) == before


async def test_a_call_may_go_to_an_instance_whose_birth_is_still_being_written(
    store: StoreHarness,
) -> None:
    """Focus answers for a new instance while its `starting` row is on its way to the store
    (the router then holds a call for it): only a recorded end refuses a call."""
    held = await store.ask(birth("hold", instance_id="being-born"), ToolCallStepReply)
    assert (held.call.state, held.call.instance_id) == ("routing", "being-born")


async def test_a_repeated_step_is_answered_after_its_instance_ended(store: StoreHarness) -> None:
    await store.put_live_instances(SCOPE, "ended")
    bound = await store.ask(birth("hand_over", instance_id="ended"), ToolCallStepReply)
    await store.end_instance(SCOPE, "ended")

    again = await store.ask(birth("hand_over", instance_id="ended"), ToolCallStepReply)

    assert (again.changed, again.call) == (False, bound.call)


async def test_a_held_call_is_handed_over_only_to_its_own_instance(store: StoreHarness) -> None:
    await walk(store, "call-1", "hold")
    before = await written(store)

    assert await refusal(store, step("hand_over", instance_id="td-2")) is (
        ErrorCode.INVALID_ARGUMENTS
    )
    assert await written(store) == before


@pytest.mark.parametrize(("events", "event"), [
    (("admit",), "take"), (("admit",), "submit"), (("admit",), "activated"),
    (("admit", "activate"), "take"), (("admit", "activate"), "submit"),
    (("hand_over",), "reject"), (("hand_over",), "activate"), (("hand_over",), "submit"),
    (("hand_over", "take"), "hand_over"), (("hand_over", "take"), "activated"),
    (("hand_over", "take"), "reject"), (("hold",), "take"), (("hold",), "activate"),
])  # fmt: skip
async def test_a_step_the_table_lacks_is_refused_with_invalid_arguments_and_writes_nothing(
    store: StoreHarness, events: tuple[ToolCallEvent, ...], event: ToolCallEvent
) -> None:
    await walk(store, "call-1", *events)
    before = await written(store)

    assert await refusal(store, step(event, ids={"terminal": "other"})) is (
        ErrorCode.INVALID_ARGUMENTS
    )
    assert await written(store) == before


# Every event a recorded call may be sent (not `settle*`, which the request model refuses;
# not `admit`/`refuse`, which only bear a call: with its facts, a repeat of its arrival).
LATER: tuple[ToolCallEvent, ...] = (
    "hold", "hand_over", "activate", "activated", "launch_failed", "launch_cancelled", "take",
    "submit", "fail", "cancel", "close", "expire", "reject",
)  # fmt: skip


async def decided(store: StoreHarness, call_id: str, state: ToolCallState) -> None:
    if state == "rejected":
        await store.ask(birth("refuse", call_id), ToolCallStepReply)
        return
    await running(store, call_id)
    by: dict[ToolCallState, ToolCallEvent] = {"completed": "submit", "submitted": "submit",
                                              "failed": "fail", "cancelled": "cancel",
                                              "expired": "expire"}  # fmt: skip
    event = by[state]
    await store.ask(step(event, call_id), ToolCallStepReply)
    if state == "completed":
        await store.ask(OutboxAckRequest(outbox_id=row_id("terminal", call_id)), OutboxAckReply)


@pytest.mark.parametrize(
    "state", ["submitted", "completed", "failed", "cancelled", "expired", "rejected"]
)
async def test_every_step_of_a_decided_call_is_refused_with_call_already_final(
    store: StoreHarness, state: ToolCallState
) -> None:
    await decided(store, "call-1", state)
    assert (await must_get(store)).state == state
    before = await written(store)

    for event in LATER:
        fresh = {row: f"other:{row}" for row in ROWS[event]}
        code = await refusal(store, step(event, ids=fresh))
        assert code is ErrorCode.CALL_ALREADY_FINAL, (state, event)
    assert await written(store) == before


# ---------------------------------------------------------------------------------- ownership


async def test_a_call_is_moved_only_by_its_own_scope_and_instance(store: StoreHarness) -> None:
    await running(store)
    before = await written(store)
    other_scope: dict[str, Any] = {"expected_app_scope": "whiteboard"}
    other_instance: dict[str, Any] = {"expected_app_scope": SCOPE, "expected_instance_id": "td-2"}

    for fields, code in ((other_scope, ErrorCode.APP_SCOPE_MISMATCH),
                         (other_instance, ErrorCode.APP_INSTANCE_NOT_FOUND)):  # fmt: skip
        requests: list[Message] = [
            step(event, **fields) for event in ("take", "submit", "fail", "cancel")
        ]
        requests.append(progress(**fields))
        for request in requests:
            assert await refusal(store, request) is code, request

    assert (await must_get(store)).state == "running"
    assert await written(store) == before


@pytest.mark.parametrize("state", ["submitted", "completed", "failed", "rejected"])
async def test_a_foreign_caller_learns_nothing_about_a_call_not_even_that_it_is_decided(
    store: StoreHarness, state: ToolCallState
) -> None:
    await decided(store, "call-1", state)
    before = await written(store)
    foreign: dict[str, Any] = {"expected_app_scope": "whiteboard"}

    for request in (
        step("fail", ids={"terminal": "other"}, **foreign),
        step("submit", **foreign),  # the owner's retry would be answered, or refused final
        step("take", **foreign),
        birth("hand_over", **foreign),  # another envelope of the call, from the wrong scope
    ):
        assert await refusal(store, request) is ErrorCode.APP_SCOPE_MISMATCH, request
    wrong_instance = step("fail", ids={"terminal": "other"}, expected_instance_id="td-2")
    assert await refusal(store, wrong_instance) is ErrorCode.APP_INSTANCE_NOT_FOUND
    assert await written(store) == before


async def test_the_expected_owner_may_move_its_call(store: StoreHarness) -> None:
    await walk(store, "call-1", "hand_over")
    owner: dict[str, Any] = {"expected_app_scope": SCOPE, "expected_instance_id": INSTANCE}

    taken = await store.ask(step("take", **owner), ToolCallStepReply)
    submitted = await store.ask(step("submit", **owner), ToolCallStepReply)

    assert (taken.call.state, submitted.call.state) == ("running", "submitted")


# ---------------------------------------------------------------------------------- endings


async def test_a_submit_stores_its_result_and_queues_one_terminal_row(store: StoreHarness) -> None:
    await running(store)

    reply = await store.ask(step("submit"), ToolCallStepReply)

    assert (reply.changed, reply.call.state, reply.call.result) == (True, "submitted", {"ok": True})
    assert reply.call.error_code is None
    pending = (await store.ask(OutboxPendingRequest(), OutboxPendingReply)).rows
    assert [(row.outbox_id, row.conversation_id, row.kind) for row in pending][1:] == [
        ("final:call-1", "conv-1", RESULT)
    ]
    assert pending[1].body == wire(RESULT)


@pytest.mark.parametrize(("event", "final"), [
    ("fail", "failed"), ("cancel", "cancelled"), ("close", "cancelled"), ("expire", "expired"),
])  # fmt: skip
async def test_a_call_that_ends_otherwise_keeps_its_code_and_no_result(
    store: StoreHarness, event: ToolCallEvent, final: ToolCallState
) -> None:
    await running(store)

    reply = await store.ask(step(event, code="app_closed"), ToolCallStepReply)

    assert (reply.call.state, reply.call.error_code, reply.call.result) == (
        final, "app_closed", None,
    )  # fmt: skip
    assert links(store)[0] == ("final:call-1", "call-1", "terminal", final)
    assert (await outbox(store))[1:] == [("final:call-1", ERROR)]


@pytest.mark.parametrize("second", [
    step("fail", ids={"terminal": "final:other"}),
    step("submit", ids={"terminal": "final:other"}),
    step("cancel", code="app_closed"),  # the same outbox id, another state
    step("close", code="app_closed"),
    step("expire"),
])  # fmt: skip
async def test_a_second_ending_is_refused_with_call_already_final_and_writes_nothing(
    store: StoreHarness, second: ToolCallStepRequest
) -> None:
    await running(store)
    first = await store.ask(step("fail"), ToolCallStepReply)
    before = await written(store)

    assert await refusal(store, second) is ErrorCode.CALL_ALREADY_FINAL
    assert await get(store) == first.call
    assert await written(store) == before


async def test_concurrent_endings_of_one_call_end_it_once_with_one_row(
    store: StoreHarness,
) -> None:
    await running(store)
    outcomes: list[bool | ErrorCode] = []
    endings: list[ToolCallEvent] = ["submit", "fail", "cancel", "close", "expire"]

    async def one(i: int) -> None:
        request = step(endings[i % len(endings)], ids={"terminal": f"o-{i}"})
        try:
            outcomes.append((await store.ask(request, ToolCallStepReply)).changed)
        except LineUpError as exc:
            outcomes.append(exc.code)

    async with trio.open_nursery() as nursery:
        for i in range(40):
            nursery.start_soon(one, i)

    assert outcomes.count(True) == 1
    assert outcomes.count(ErrorCode.CALL_ALREADY_FINAL) == 39
    assert len(await outbox(store)) == 2  # its accepted receipt, its terminal row
    terminal = "SELECT count(*) FROM tool_call_outbox WHERE role = 'terminal'"
    assert independent_rows(store.db_path, terminal) == [(1,)]
    assert len(await audit(store)) == 3


async def test_a_step_whose_outbox_id_is_taken_is_refused_whole_and_writes_nothing(
    store: StoreHarness,
) -> None:
    await running(store)
    await running(store, "call-2")
    await store.ask(progress(), ToolCallProgressReply)
    await walk(store, "call-3", "admit", "activate")
    before = await written(store)

    for request in (
        step("submit", ids={"terminal": "p-1"}),  # this call's progress row
        step("fail", ids={"terminal": row_id("accepted")}),  # this call's receipt
        step("fail", ids={"terminal": row_id("accepted", "call-2")}),  # another call's
        # the second of two rows taken: the first, new, is not written either
        step("launch_failed", "call-3", ids={"terminal": row_id("accepted", "call-2")}),
        step("launch_failed", "call-3", ids={"terminal": row_id("activation_failed", "call-3")}),
        # a receipt id of this call, for another receipt
        step("activated", "call-3", ids={"activation_ready": row_id("starting", "call-3")}),
    ):
        assert await refusal(store, request) is ErrorCode.INVALID_ARGUMENTS, request
    assert await written(store) == before
    assert (await must_get(store, "call-3")).state == "routing"


async def test_a_repeat_is_answered_after_a_restart_and_a_second_ending_still_refused(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    async with trio.open_nursery() as nursery:
        store = await start_store(nursery, data_dir)
        await store.put_live_instances(SCOPE, INSTANCE)
        await running(store)
        first = await store.ask(step("submit"), ToolCallStepReply)
        nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        store = await start_store(nursery, data_dir)
        again = await store.ask(step("submit"), ToolCallStepReply)
        born = await store.ask(birth("hand_over"), ToolCallStepReply)
        other = await refusal(store, step("fail", ids={"terminal": "o-2"}))
        rows = await outbox(store)
        nursery.cancel_scope.cancel()

    assert (again.changed, again.call) == (False, first.call)
    assert (born.created, born.changed) == (False, False)
    assert other is ErrorCode.CALL_ALREADY_FINAL
    assert rows == [("receipt:call-1:accepted", RECEIPT), ("final:call-1", RESULT)]


# ---------------------------------------------------------------------------------- progress


def progress(
    call_id: str = "call-1", outbox_id: str = "p-1", **fields: Any
) -> ToolCallProgressRequest:
    values: dict[str, Any] = {
        "expected_app_scope": SCOPE, "expected_instance_id": INSTANCE, "progress": {"done": 1},
        "wire": wire("lineup.v1.tool.progress", call_id),
    }  # fmt: skip
    return ToolCallProgressRequest(call_id=call_id, outbox_id=outbox_id, **(values | fields))


async def test_progress_is_recorded_and_queued_once_per_outbox_id(store: StoreHarness) -> None:
    await running(store)

    first = await store.ask(progress(), ToolCallProgressReply)
    again = await store.ask(progress(), ToolCallProgressReply)
    later = await store.ask(progress(outbox_id="p-2"), ToolCallProgressReply)

    assert (first.created, again.created, later.created) == (True, False, True)
    assert (await outbox(store))[1:] == [("p-1", "lineup.v1.tool.progress"),
                                         ("p-2", "lineup.v1.tool.progress")]  # fmt: skip
    assert (await must_get(store)).progress == {"done": 1}
    assert len(await audit(store)) == 2  # progress is not audited: it decides nothing


async def test_progress_on_a_final_call_is_refused_but_its_retry_is_answered(
    store: StoreHarness,
) -> None:
    await running(store)
    await store.ask(progress(), ToolCallProgressReply)
    await store.ask(step("fail"), ToolCallStepReply)

    assert await refusal(store, progress(outbox_id="p-late")) is ErrorCode.CALL_ALREADY_FINAL
    assert (await store.ask(progress(), ToolCallProgressReply)).created is False
    assert [outbox_id for outbox_id, _ in await outbox(store)] == [
        "receipt:call-1:accepted", "p-1", "final:call-1",
    ]  # fmt: skip


async def test_progress_whose_outbox_id_is_a_step_row_is_refused(store: StoreHarness) -> None:
    await running(store)
    before = await written(store)

    assert await refusal(store, progress(outbox_id=row_id("accepted"))) is (
        ErrorCode.INVALID_ARGUMENTS
    )
    assert await written(store) == before


# ---------------------------------------------------------------------------------- get, list


async def test_getting_a_call_never_recorded_answers_none(store: StoreHarness) -> None:
    assert await get(store, "never") is None


async def test_the_call_list_filters_by_scope_instance_and_finality(store: StoreHarness) -> None:
    await running(store, "a")  # task-dashboard, td-1, running
    await running(store, "b")
    await store.ask(step("fail", "b"), ToolCallStepReply)
    await store.ask(birth("admit", "c"), ToolCallStepReply)  # received, no instance yet
    await store.ask(birth("admit", "d", new=facts(app_scope="whiteboard")), ToolCallStepReply)

    async def ids(**filters: Any) -> list[str]:
        reply = await store.ask(ToolCallListRequest(**filters), ToolCallListReply)
        return [call.call_id for call in reply.calls]

    assert await ids() == ["a", "b", "c", "d"]
    assert await ids(app_scope=SCOPE) == ["a", "b", "c"]
    assert await ids(instance_id=INSTANCE) == ["a", "b"]
    assert await ids(non_final_only=True) == ["a", "c", "d"]
    assert await ids(app_scope=SCOPE, instance_id=INSTANCE, non_final_only=True) == ["a"]
    assert await ids(app_scope="nobody") == []


async def test_the_call_list_leaves_decided_calls_out_on_request(store: StoreHarness) -> None:
    await running(store, "a")
    await running(store, "b")
    await store.ask(step("submit", "b"), ToolCallStepReply)  # decided, not final
    await store.ask(birth("admit", "c"), ToolCallStepReply)

    async def ids(**filters: Any) -> list[str]:
        reply = await store.ask(ToolCallListRequest(**filters), ToolCallListReply)
        return [call.call_id for call in reply.calls]

    assert await ids(non_final_only=True) == ["a", "b", "c"]
    assert await ids(undecided_only=True) == ["a", "c"]
    assert await ids(instance_id=INSTANCE, undecided_only=True) == ["a"]


async def test_the_call_list_pages_by_seq_and_stops_at_the_reply_byte_budget(
    store: StoreHarness,
) -> None:
    big = {"text": "x" * (200 * 1024)}
    for i in range(4):
        await store.ask(birth("admit", f"c{i}", new=facts(input=big)), ToolCallStepReply)

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


async def test_tool_call_steps_are_audited_once_each_without_input_result_or_progress(
    store: StoreHarness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    await store.ask(birth(new=facts(input={"secret": SECRET})), ToolCallStepReply)
    for event in ("activate", "activated", "take"):
        await store.ask(step(event), ToolCallStepReply)
    await store.ask(step("take"), ToolCallStepReply)  # a repeat: not audited
    await store.ask(progress(progress={"secret": SECRET}), ToolCallProgressReply)
    await store.ask(step("submit", result={"secret": SECRET}), ToolCallStepReply)
    assert await refusal(store, step("fail", ids={"terminal": "o-2"})) is (
        ErrorCode.CALL_ALREADY_FINAL
    )

    await trio.testing.wait_all_tasks_blocked()
    found = await audit(store)

    assert [(r.event, r.actor, r.peer, r.subject_id, r.code, r.message_type)
            for r in found] == [
        ("tool_call.received", "router", SCOPE, "call-1", None, RECEIPT),
        ("tool_call.routing", "router", SCOPE, "call-1", None, RECEIPT),
        ("tool_call.waiting_for_app", "router", SCOPE, "call-1", None, RECEIPT),
        ("tool_call.running", "router", SCOPE, "call-1", None, None),
        ("tool_call.submitted", "router", SCOPE, "call-1", None, RESULT),
    ]  # fmt: skip
    for row in independent_rows(store.db_path, "SELECT * FROM audit"):
        assert not any(SECRET in str(value) for value in row)
    assert SECRET not in caplog.text


async def test_an_endings_code_is_audited(store: StoreHarness) -> None:
    await running(store)
    await store.ask(step("close", code="app_closed"), ToolCallStepReply)

    last = (await audit(store))[-1]
    assert (last.event, last.code, last.message_type) == ("tool_call.cancelled", "app_closed",
                                                          ERROR)  # fmt: skip


@pytest.mark.parametrize(
    "events",
    [
        ("hand_over", "take", "submit"),
        ("admit", "activate", "activated", "take", "fail"),
        ("hold", "hand_over", "close"),
        ("refuse",),
    ],
)
async def test_each_steps_reply_is_the_call_exactly_as_it_is_stored(
    store: StoreHarness, events: tuple[ToolCallEvent, ...]
) -> None:
    reply = await store.ask(birth(events[0]), ToolCallStepReply)
    assert reply.call == await must_get(store)
    for event in events[1:]:
        reply = await store.ask(step(event), ToolCallStepReply)
        assert reply.changed
        assert reply.call == await must_get(store)  # built from what was written, not read
