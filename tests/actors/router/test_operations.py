"""Deadline operations through the router's service and a real store (`_operations`), focus
scripted: the runtime ends an operation's call at `ends_at` with the result the app gave at its
start, also when that time passed while no router ran; the user's interruption ends it
`cancelled_by_user`, and one of a call whose launch is still under way does not wait for that
launch; the app can neither end such a call itself nor touch another app's."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Final

import pytest
import trio
import trio.testing

from lineup.actors.focus.messages import (
    FindInstanceRequest,
    InstanceReply,
    InventoryReply,
    InventoryRequest,
    LaunchRequest,
)
from lineup.actors.kernel import (
    ActorKind,
    Envelope,
    ErrorCode,
    Identity,
    LineUpError,
    Message,
)
from lineup.actors.router._app_calls import AppCalls
from lineup.actors.router._inventory import Inventory
from lineup.actors.router._operations import DeadlineOperations
from lineup.actors.router._pipeline import ToolPipeline
from lineup.actors.router._tools import ToolCalls
from lineup.actors.store.messages import (
    OutboxPendingReply,
    OutboxPendingRequest,
    ToolCallGetReply,
    ToolCallGetRequest,
    ToolCallRow,
)
from lineup.sdk import protocol as sdk
from lineup.sdk.manifest import ToolDescriptor
from lineup.tests.actors.router.test_tool_instance_end import _session, agent_calls
from lineup.tests.actors.store._harness import WAIT, StoreHarness, router_peer, start_store

SCOPE: Final = "probe"
INSTANCE: Final = "probe:1"
APP: Final = Identity(ActorKind.MINIAPP, f"miniapp:{SCOPE}")
OTHER_APP: Final = Identity(ActorKind.MINIAPP, "miniapp:other")
RESULT: Final = {"status": "completed"}
OUTPUT: Final = {
    "type": "object",
    "properties": {"status": {"type": "string", "enum": ["completed"]}},
    "required": ["status"],
    "additionalProperties": False,
}
OBJECT: Final = {"type": "object", "properties": {}, "additionalProperties": False}
INVENTORY: Final = InventoryReply(
    revision="inv-1",
    tools=(
        ToolDescriptor(
            method=f"{SCOPE}.timed", handling="direct", input_schema=OBJECT, output_schema=OUTPUT
        ),
        ToolDescriptor(
            method=f"{SCOPE}.launch", handling="launch", input_schema=OBJECT, output_schema=OUTPUT
        ),
    ),
    disabled_tools=(),
)


class Router:
    """The router's services these tests drive, over a real store, with focus scripted: the
    instance is in front, and a launch never finishes (its app starts slowly) and says so."""

    def __init__(self, store: StoreHarness) -> None:
        self.store = store
        inventory = Inventory(store.router, _session)
        self.calls = ToolCalls(store.router, store.router.me, _session, inventory)
        self.pipeline = ToolPipeline(self.calls, inventory)
        self.app_calls = AppCalls(self.calls)
        self.operations = DeadlineOperations(self.calls)
        self.launch_under_way = trio.Event()
        self.launch_done = trio.Event()  # set: focus's instance is ready at last
        self.ended: list[sdk.OperationInfo] = []  # what the app was told, in order
        self._told = trio.Event()

    async def app(self, env: Envelope) -> Message | None:
        """The app's side of its channel: it notes each operation's end it is told."""
        if isinstance(env.body, sdk.OperationEndedEvent):
            self.ended.append(env.body.operation)
            self._told.set()
        return None

    async def told_ended(self) -> sdk.OperationInfo:
        """The next operation end the app is told of."""
        with trio.fail_after(WAIT):
            while not self.ended:
                await self._told.wait()
                self._told = trio.Event()
        return self.ended.pop(0)

    async def focus(self, env: Envelope) -> Message | None:
        if isinstance(env.body, LaunchRequest):
            self.launch_under_way.set()
            await self.launch_done.wait()
            return InstanceReply(instance_id=INSTANCE, app_scope=SCOPE, state="foreground")
        if isinstance(env.body, FindInstanceRequest):
            return InstanceReply(instance_id=INSTANCE, app_scope=SCOPE, state="foreground")
        if isinstance(env.body, InventoryRequest):
            return INVENTORY
        return None

    async def running_call(self, call_id: str = "call-1") -> None:
        """An Agent's call handed to the app, which takes it (as `ToolAcceptRequest` does)."""
        await agent_calls(self.pipeline, f"{SCOPE}.timed", call_id)
        await self.app_calls.accept_call(APP, sdk.ToolAcceptRequest(call_id=call_id))

    async def call(self, call_id: str = "call-1") -> ToolCallRow:
        reply = await self.store.ask(ToolCallGetRequest(call_id=call_id), ToolCallGetReply)
        assert reply.call is not None
        return reply.call

    async def outbox(self) -> list[tuple[str, str]]:
        rows = (await self.store.ask(OutboxPendingRequest(), OutboxPendingReply)).rows
        return [(row.outbox_id, row.kind) for row in rows]


@pytest.fixture
async def router(nursery: trio.Nursery, tmp_path: Path) -> Router:
    store = await start_store(nursery, tmp_path / "data")
    await store.put_live_instances(SCOPE, INSTANCE)
    router = Router(store)
    await router_peer(nursery, store, Identity(ActorKind.FOCUS, "focus"), router.focus)
    await router_peer(nursery, store, APP, router.app)
    await nursery.start(router.pipeline.run)
    return router


def start(ends_in: float, call_id: str = "call-1", **fields: object) -> sdk.OperationStartRequest:
    values: dict[str, object] = {
        "call_id": call_id, "ends_at": time.time() + ends_in, "result": RESULT
    }  # fmt: skip
    return sdk.OperationStartRequest.model_validate(values | fields)


def terminal_rows(outbox: list[tuple[str, str]]) -> list[str]:
    return [kind for outbox_id, kind in outbox if outbox_id.startswith("lu:final:")]


async def test_the_runtime_submits_the_operations_result_at_ends_at_once(
    nursery: trio.Nursery, router: Router
) -> None:
    await nursery.start(router.operations.run)
    await router.running_call()

    reply = await router.operations.start(APP, start(0.3))
    again = await router.operations.start(APP, start(60))

    assert (reply.created, reply.operation.state) == (True, "running")
    assert (again.created, again.operation.ends_at) == (False, reply.operation.ends_at)
    progress = [kind for _, kind in await router.outbox() if kind == "lineup.v1.tool.progress"]
    assert progress == ["lineup.v1.tool.progress"]  # the one `started`, written with it
    told = await router.told_ended()
    call = await router.call()
    assert (told.call_id, told.state) == ("call-1", "completed")
    assert (call.state, call.result, call.error_code) == ("submitted", RESULT, None)
    assert time.time() >= reply.operation.ends_at
    assert terminal_rows(await router.outbox()) == ["lineup.v1.tool.result"]
    listed = await router.operations.list(APP, sdk.OperationListRequest(all=True))
    assert [o.state for o in listed.operations] == ["completed"]


async def test_the_operation_an_instance_serves_is_its_contexts_until_it_ends(
    nursery: trio.Nursery, router: Router
) -> None:
    # Seed 004 §6.1's `scope.operation_id`: the running operation of one of the instance's calls.
    await nursery.start(router.operations.run)
    assert await router.operations.serving(SCOPE, INSTANCE) is None
    await router.running_call()
    op = (await router.operations.start(APP, start(0.3))).operation
    assert await router.operations.serving(SCOPE, INSTANCE) == op.operation_id
    assert await router.operations.serving(SCOPE, "probe:other") is None
    assert await router.operations.serving("other", INSTANCE) is None
    await router.told_ended()
    assert await router.operations.serving(SCOPE, INSTANCE) is None


async def test_a_deadline_passed_while_no_router_ran_fires_when_one_starts(
    nursery: trio.Nursery, router: Router
) -> None:
    first = trio.CancelScope()

    async def first_router(*, task_status: trio.TaskStatus[None]) -> None:
        with first:
            await router.operations.run(task_status=task_status)

    await nursery.start(first_router)
    await router.running_call()
    op = (await router.operations.start(APP, start(0.2))).operation
    first.cancel()  # this router is gone before `ends_at`
    await trio.sleep(op.ends_at - time.time() + 0.05)  # time passes, with no router to see it
    assert (await router.call()).state == "running"

    await nursery.start(DeadlineOperations(router.calls).run)

    told = await router.told_ended()
    call = await router.call()
    assert told.state == "completed"
    assert (call.state, call.result) == ("submitted", RESULT)
    assert terminal_rows(await router.outbox()) == ["lineup.v1.tool.result"]


async def test_an_interruption_ends_the_call_cancelled_by_the_user_and_its_deadline_adds_nothing(
    nursery: trio.Nursery, router: Router
) -> None:
    await nursery.start(router.operations.run)
    await router.running_call()
    op = (await router.operations.start(APP, start(0.2))).operation

    reply = await router.operations.interrupt(APP, sdk.OperationInterruptRequest(call_id="call-1"))
    again = await router.operations.interrupt(
        APP, sdk.OperationInterruptRequest(tool="probe.timed")
    )

    assert (reply.interrupted, again.interrupted) == (("call-1",), ())
    call = await router.call()
    assert (call.state, call.error_code) == ("cancelled", "cancelled_by_user")
    assert [o.state for o in router.ended] == ["interrupted"]
    await trio.sleep(op.ends_at - time.time() + 0.2)  # past its deadline: nothing more
    assert terminal_rows(await router.outbox()) == ["lineup.v1.tool.error"]
    listed = await router.operations.list(APP, sdk.OperationListRequest(all=True))
    assert [o.state for o in listed.operations] == ["interrupted"]


async def test_an_interruption_does_not_wait_for_the_launch_of_the_call_it_ends(
    nursery: trio.Nursery, router: Router
) -> None:
    await nursery.start(router.operations.run)
    await agent_calls(router.pipeline, f"{SCOPE}.launch", "focus-1")
    with trio.fail_after(WAIT):
        await router.launch_under_way.wait()  # focus is starting its instance, and never ends

    reply = await router.operations.interrupt(
        APP, sdk.OperationInterruptRequest(tool=f"{SCOPE}.launch")
    )

    assert reply.interrupted == ("focus-1",)
    call = await router.call("focus-1")
    assert (call.state, call.error_code) == ("cancelled", "cancelled_by_user")
    with pytest.raises(LineUpError) as late:  # the app, up at last, cannot start it any more
        await router.operations.start(APP, start(60, "focus-1"))
    assert late.value.code is ErrorCode.CALL_ALREADY_FINAL

    router.launch_done.set()  # the instance comes up after all: the call stays as it ended
    await trio.testing.wait_all_tasks_blocked(0.1)
    assert (await router.call("focus-1")).error_code == "cancelled_by_user"
    await router.running_call("call-2")  # and the router goes on


async def test_the_app_cannot_end_the_call_its_operation_owns(
    nursery: trio.Nursery, router: Router
) -> None:
    await nursery.start(router.operations.run)
    await router.running_call()
    await router.operations.start(APP, start(60))

    with pytest.raises(LineUpError) as refused:
        await router.app_calls.complete(
            APP, sdk.ToolCompleteRequest(call_id="call-1", result=RESULT)
        )

    assert refused.value.code is ErrorCode.PERMISSION_DENIED
    assert (await router.call()).state == "running"


async def test_a_start_is_refused_with_its_code(nursery: trio.Nursery, router: Router) -> None:
    await nursery.start(router.operations.run)
    await router.running_call()
    refusals = []
    for sender, request in (
        (APP, start(60, result={"status": "half"})),
        (APP, start(-1)),
        (APP, start(60, "no-such-call")),
        (OTHER_APP, start(60)),
    ):
        with pytest.raises(LineUpError) as caught:
            await router.operations.start(sender, request)
        refusals.append(caught.value.code)
    with pytest.raises(LineUpError) as foreign:
        await router.operations.interrupt(
            OTHER_APP, sdk.OperationInterruptRequest(tool="probe.timed")
        )

    assert refusals == [
        ErrorCode.TOOL_OUTPUT_INVALID,
        ErrorCode.INVALID_ARGUMENTS,
        ErrorCode.APP_INSTANCE_NOT_FOUND,
        ErrorCode.APP_SCOPE_MISMATCH,
    ]
    assert foreign.value.code is ErrorCode.APP_SCOPE_MISMATCH
    assert (await router.call()).state == "running"
    assert [kind for _, kind in await router.outbox() if kind.endswith("progress")] == []
