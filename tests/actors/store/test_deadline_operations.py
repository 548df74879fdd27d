"""Deadline operations through the real store (`actors/store/deadline_operations/`): a start
writes the operation with its call's one `started` progress, an ending writes the operation's
final state with its call's one terminal row, in one transaction each; ownership, bounds and the
instance in front are checked before anything is written."""

from __future__ import annotations

import time
from typing import Any

import pytest

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store.messages import (
    DeadlineOperationEndReply,
    DeadlineOperationEndRequest,
    DeadlineOperationListReply,
    DeadlineOperationListRequest,
    DeadlineOperationStartReply,
    DeadlineOperationStartRequest,
    InstanceUpsertReply,
    InstanceUpsertRequest,
    ToolCallProgressRequest,
    ToolCallStepReply,
)
from lineup.facts.deadline_operations import FINAL, TABLE, move
from lineup.tests.actors.store._harness import StoreHarness, refusal
from lineup.tests.actors.store.test_tool_calls import (
    ERROR,
    INSTANCE,
    RESULT,
    SCOPE,
    must_get,
    outbox,
    row_id,
    running,
    step,
    walk,
)

PROGRESS = "lineup.v1.tool.progress"
RESULT_OF_OP = {"status": "completed"}


@pytest.fixture
async def store(store: StoreHarness) -> StoreHarness:
    await store.put_live_instances(SCOPE, INSTANCE, "td-2")
    return store


def start(call_id: str = "call-1", **fields: Any) -> DeadlineOperationStartRequest:
    values: dict[str, Any] = {
        "operation_id": f"op-{call_id}", "call_id": call_id, "app_scope": SCOPE,
        "instance_id": INSTANCE, "ends_at": time.time() + 30, "result": RESULT_OF_OP,
        "progress": ToolCallProgressRequest(
            call_id=call_id, progress={"stage": "started"}, outbox_id=f"progress:{call_id}",
            wire={"v": 1, "type": PROGRESS, "payload": {"call_id": call_id}},
            expected_app_scope=SCOPE, expected_instance_id=INSTANCE,
        ),
    }  # fmt: skip
    return DeadlineOperationStartRequest(**(values | fields))


def fire(call_id: str = "call-1") -> DeadlineOperationEndRequest:
    return DeadlineOperationEndRequest(
        call_id=call_id, event="fire", step=step("submit", call_id, result=RESULT_OF_OP)
    )


def interrupt(call_id: str = "call-1", **fields: Any) -> DeadlineOperationEndRequest:
    return DeadlineOperationEndRequest(
        call_id=call_id,
        event="interrupt",
        step=step("cancel", call_id, code="cancelled_by_user"),
        **fields,
    )


def test_the_machine_ends_once_and_never_moves_an_ended_operation() -> None:
    assert move(None, "start") == "running"
    assert {move("running", e) for e in ("fire", "interrupt", "abandon")} == set(FINAL)
    for state in FINAL:
        assert TABLE[state] == {}
        with pytest.raises(LineUpError) as caught:
            move(state, "fire")
        assert caught.value.code is ErrorCode.CALL_ALREADY_FINAL
    with pytest.raises(LineUpError) as again:
        move("running", "start")
    assert again.value.code is ErrorCode.INVALID_ARGUMENTS


async def test_a_start_writes_the_operation_with_the_one_started_progress(
    store: StoreHarness,
) -> None:
    await running(store)

    reply = await store.ask(start(), DeadlineOperationStartReply)
    again = await store.ask(start(operation_id="op-other"), DeadlineOperationStartReply)

    assert (reply.created, reply.operation.state, reply.operation.result) == (
        True, "running", RESULT_OF_OP,
    )  # fmt: skip
    assert (again.created, again.operation.operation_id) == (False, "op-call-1")
    assert (await outbox(store))[-1] == ("progress:call-1", PROGRESS)


async def test_the_deadline_submits_the_operations_result_with_one_terminal_row(
    store: StoreHarness,
) -> None:
    await running(store)
    await store.ask(start(), DeadlineOperationStartReply)

    fired = await store.ask(fire(), DeadlineOperationEndReply)
    twice = await store.ask(fire(), DeadlineOperationEndReply)
    late = await store.ask(interrupt(), DeadlineOperationEndReply)

    assert (fired.changed, fired.operation.state) == (True, "completed")
    assert fired.call is not None and (fired.call.state, fired.call.result) == (
        "submitted", RESULT_OF_OP,
    )  # fmt: skip
    assert (twice.changed, late.changed, late.operation.state) == (False, False, "completed")
    terminal = [row for row in await outbox(store) if row[0] == row_id("terminal")]
    assert terminal == [(row_id("terminal"), RESULT)]


async def test_an_interruption_cancels_the_call_by_the_user_and_the_deadline_finds_it_ended(
    store: StoreHarness,
) -> None:
    await running(store)
    await store.ask(start(), DeadlineOperationStartReply)

    stopped = await store.ask(interrupt(app_scope=SCOPE), DeadlineOperationEndReply)
    fired = await store.ask(fire(), DeadlineOperationEndReply)

    assert stopped.operation.state == "interrupted"
    call = await must_get(store)
    assert (call.state, call.error_code) == ("cancelled", "cancelled_by_user")
    assert (fired.changed, fired.operation.state) == (False, "interrupted")
    assert [row for row in await outbox(store) if row[0] == row_id("terminal")] == [
        (row_id("terminal"), ERROR)
    ]


async def test_an_operation_whose_call_ended_another_way_is_abandoned_writing_nothing_more(
    store: StoreHarness,
) -> None:
    await running(store)
    await store.ask(start(), DeadlineOperationStartReply)

    # The call closed (its app did): the operation is abandoned in that same step, not when
    # its `ends_at` comes (issue 29: a period was shown running until then).
    closed = await store.ask(step("close", code="app_closed"), ToolCallStepReply)
    assert closed.operation_ended
    listed = await store.ask(
        DeadlineOperationListRequest(call_id="call-1"), DeadlineOperationListReply
    )
    assert [op.state for op in listed.operations] == ["abandoned"]
    before = await outbox(store)

    fired = await store.ask(fire(), DeadlineOperationEndReply)

    assert (fired.changed, fired.operation.state, fired.call) == (False, "abandoned", None)
    assert await outbox(store) == before
    assert (await must_get(store)).error_code == "app_closed"


async def test_a_start_is_refused_with_its_code_and_writes_nothing(store: StoreHarness) -> None:
    await running(store)
    await walk(store, "call-2", "hand_over")  # handed over, never taken
    now = time.time()

    assert await refusal(store, start(app_scope="whiteboard")) is ErrorCode.APP_SCOPE_MISMATCH
    assert await refusal(store, start(instance_id="td-2")) is ErrorCode.APP_INSTANCE_NOT_FOUND
    assert await refusal(store, start("call-2")) is ErrorCode.INVALID_ARGUMENTS
    assert await refusal(store, start(ends_at=now - 1)) is ErrorCode.INVALID_ARGUMENTS
    assert await refusal(store, start(ends_at=now + 3600)) is ErrorCode.INVALID_ARGUMENTS
    assert await refusal(store, interrupt(app_scope="whiteboard")) is ErrorCode.INVALID_ARGUMENTS
    await store.ask(
        InstanceUpsertRequest(
            instance_id=INSTANCE, app_scope=SCOPE, state="background",
            app_session_id=f"session-{INSTANCE}",
        ),
        InstanceUpsertReply,
    )  # fmt: skip
    assert await refusal(store, start()) is ErrorCode.FOREGROUND_REQUIRED
    listed = await store.ask(DeadlineOperationListRequest(), DeadlineOperationListReply)
    assert listed.operations == ()
    assert not [row for row in await outbox(store) if row[1] == PROGRESS]


async def test_another_apps_interruption_is_refused(store: StoreHarness) -> None:
    await running(store)
    await store.ask(start(), DeadlineOperationStartReply)

    assert await refusal(store, interrupt(app_scope="whiteboard")) is (ErrorCode.APP_SCOPE_MISMATCH)
    listed = await store.ask(
        DeadlineOperationListRequest(running_only=True), DeadlineOperationListReply
    )
    assert [o.state for o in listed.operations] == ["running"]


async def test_the_app_cannot_end_a_call_its_operation_owns(store: StoreHarness) -> None:
    await running(store)
    await store.ask(start(), DeadlineOperationStartReply)

    for event in ("submit", "fail", "cancel"):
        refused = await refusal(store, step(event, expected_app_scope=SCOPE))
        assert refused is ErrorCode.PERMISSION_DENIED
    assert (await must_get(store)).state == "running"


async def test_an_operation_started_as_its_call_was_interrupted_ends_interrupted(
    store: StoreHarness,
) -> None:
    # The router found no operation and cancelled the call by the user; the start came first:
    # that step ends the operation `interrupted`, and the router's interruption finds it so.
    await running(store)
    await store.ask(start(), DeadlineOperationStartReply)
    cancelled = await store.ask(step("cancel", code="cancelled_by_user"), ToolCallStepReply)
    assert cancelled.operation_ended

    ended = await store.ask(interrupt(), DeadlineOperationEndReply)

    assert (ended.changed, ended.operation.state, ended.call) == (False, "interrupted", None)
    assert [row for row in await outbox(store) if row[0] == row_id("terminal")] == [
        (row_id("terminal"), ERROR)
    ]
