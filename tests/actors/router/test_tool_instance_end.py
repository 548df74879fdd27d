"""A call never stays open on nobody (seed 003 §3.2): the router's tool pipeline over a real
store, with focus scripted so that the instance ends in the one window a real tree leaves open
by chance — after focus found or launched it, before the call is given to it. (The short drill
hit it: a launch the user closed as it became ready stayed `waiting_for_app` until its
two-minute deadline.) The store refuses to give a call to an instance whose end is recorded, and
the router ends the call at once, with the code the Agent would get had it come a moment
earlier. And a deadline is never dropped: an expiry the store did not take is tried again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, cast

import pytest
import trio

from lineup import wire
from lineup.actors.focus.messages import (
    FindInstanceRequest,
    InstanceReply,
    InventoryReply,
    InventoryRequest,
    LaunchRequest,
)
from lineup.actors.kernel import (
    ActorKind,
    Bus,
    Envelope,
    ErrorCode,
    Identity,
    LineUpError,
    Message,
)
from lineup.actors.router._app_calls import AppCalls
from lineup.actors.router._envelope import admit
from lineup.actors.router._inventory import Inventory
from lineup.actors.router._pipeline import ToolPipeline
from lineup.actors.router._session import SessionSource
from lineup.actors.router._tools import ToolCalls
from lineup.actors.store.messages import ToolCallGetReply, ToolCallGetRequest, ToolCallStepRequest
from lineup.actors.transport.messages import AppServerSession
from lineup.sdk import protocol as sdk
from lineup.sdk.manifest import MIN_TIMEOUT_MS, ToolDescriptor
from lineup.tests.actors.store._harness import WAIT, StoreHarness, router_peer, start_store

SCOPE: Final = "probe"
INSTANCE: Final = "probe:1"
APP: Final = Identity(ActorKind.MINIAPP, f"miniapp:{SCOPE}")
POLL: Final = 0.02  # between two looks at the store, inside a bounded wait
OBJECT: Final = {"type": "object", "properties": {}, "additionalProperties": False}
INVENTORY: Final = InventoryReply(
    revision="inv-1",
    tools=(
        ToolDescriptor(
            method=f"{SCOPE}.launch", handling="launch", input_schema=OBJECT, output_schema=OBJECT
        ),
        ToolDescriptor(
            method=f"{SCOPE}.direct", handling="direct", input_schema=OBJECT, output_schema=OBJECT
        ),
        ToolDescriptor(
            method=f"{SCOPE}.brief",
            handling="direct",
            input_schema=OBJECT,
            output_schema=OBJECT,
            timeout_ms=MIN_TIMEOUT_MS,
        ),
    ),
    disabled_tools=(),
)


async def _session() -> AppServerSession:
    return AppServerSession(conversation_id="conv-1", user_id="user-1", agent_id="agent-1")


def pipeline_of(bus: Bus, session: SessionSource = _session) -> ToolPipeline:
    """The router's tool pipeline alone, as the router puts it together."""
    inventory = Inventory(bus, session)
    return ToolPipeline(ToolCalls(bus, bus.me, session, inventory), inventory)


async def store_and_focus(
    nursery: trio.Nursery, tmp_path: Path, *, ends: bool = True
) -> StoreHarness:
    """A store with a live instance, and a focus beside it which, asked for that instance
    (launched, or found), records the instance's end before it answers, if it `ends`."""
    store = await start_store(nursery, tmp_path / "data")
    await store.put_live_instances(SCOPE, INSTANCE)

    async def focus(env: Envelope) -> Message | None:
        if isinstance(env.body, LaunchRequest | FindInstanceRequest):
            if ends:
                await store.end_instance(SCOPE, INSTANCE)  # the user closed it meanwhile
            return InstanceReply(instance_id=INSTANCE, app_scope=SCOPE, state="foreground")
        if isinstance(env.body, InventoryRequest):
            return INVENTORY
        return None

    await router_peer(nursery, store, Identity(ActorKind.FOCUS, "focus"), focus)
    return store


async def agent_calls(pipeline: ToolPipeline, tool: str, call_id: str = "call-1") -> None:
    """The Agent's `tool.call` of `tool`, as the router hands it to the pipeline."""
    payload = wire.ToolCallPayload(call_id=call_id, tool=tool, inventory_revision="inv-1", input={})
    envelope = wire.envelope(
        wire.TOOL_CALL, payload, conversation_id="conv-1", sender_kind="agent",
        sender_id="agent-1", message_id=f"m-{call_id}",
    )  # fmt: skip
    assert isinstance(envelope, wire.ToolCallEnvelope)
    admitted = admit(envelope, conversation_id="conv-1", agent_id="agent-1")
    assert await pipeline.accept(admitted, envelope) is None  # not an interaction's


async def call_state(store: StoreHarness, call_id: str = "call-1") -> tuple[str, str | None]:
    call = (await store.ask(ToolCallGetRequest(call_id=call_id), ToolCallGetReply)).call
    assert call is not None
    return call.state, call.error_code


async def ended(store: StoreHarness) -> tuple[str, str | None]:
    with trio.fail_after(WAIT):
        while True:
            state, code = await call_state(store)
            if state not in ("received", "routing", "waiting_for_app"):
                return state, code
            await trio.sleep(POLL)


@pytest.mark.parametrize(
    ("tool", "ending"),
    [
        ("launch", ("cancelled", "activation_cancelled")),  # closed as it became ready
        ("direct", ("rejected", "app_instance_not_found")),  # ended as focus found it
    ],
)
async def test_a_call_whose_instance_ended_before_it_was_given_ends_at_once(
    nursery: trio.Nursery, tmp_path: Path, tool: str, ending: tuple[str, str]
) -> None:
    store = await store_and_focus(nursery, tmp_path)
    pipeline = pipeline_of(store.router)
    await nursery.start(pipeline.run)

    await agent_calls(pipeline, f"{SCOPE}.{tool}")

    assert await ended(store) == ending


class StoreDownOnce:
    """The router's bus, but the first expiry it sends the store fails as if the store were
    down (killed, or paused by SIGSTOP, as the drill does): `store_unavailable`."""

    def __init__(self, bus: Bus) -> None:
        self._bus = bus
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._bus, name)

    async def request(self, peer: str, body: Message, **options: Any) -> Any:
        if isinstance(body, ToolCallStepRequest) and body.event == "expire" and not self.refused:
            self.refused += 1
            raise LineUpError(ErrorCode.STORE_UNAVAILABLE, "the store is down")
        return await self._bus.request(peer, body, **options)


async def test_an_expiry_the_store_did_not_take_is_tried_again(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    store = await store_and_focus(nursery, tmp_path, ends=False)
    bus = StoreDownOnce(store.router)
    pipeline = pipeline_of(cast(Bus, bus))
    await nursery.start(pipeline.run)

    await agent_calls(pipeline, f"{SCOPE}.brief")

    assert await ended(store) == ("expired", "operation_expired")
    assert bus.refused == 1


async def test_a_lost_end_is_made_up_by_the_second_sweep_that_finds_the_instance_gone(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    # Focus recorded the end but its `ended` never reached the router (a tell that found no
    # channel in time): the router's periodic sweep ends the call. Only once the instance was
    # missing from the live ones twice: focus may bind a call a moment before the row commits.
    store = await store_and_focus(nursery, tmp_path, ends=False)
    pipeline = pipeline_of(store.router)
    await nursery.start(pipeline.run)
    await agent_calls(pipeline, f"{SCOPE}.direct")  # given to the instance; its app is not up
    assert await call_state(store) == ("waiting_for_app", None)

    assert await pipeline.sweep_ended(confirmed=set()) == set()  # live: nothing to do
    await store.end_instance(SCOPE, INSTANCE)  # and nobody tells the router
    first = await pipeline.sweep_ended(confirmed=set())
    assert first == {INSTANCE}
    assert await call_state(store) == ("waiting_for_app", None)  # not on one look
    await pipeline.sweep_ended(confirmed=first)

    assert await call_state(store) == ("cancelled", "app_closed")


@pytest.mark.parametrize(
    ("closed", "ending"),
    [
        (True, ("cancelled", "app_closed")),  # the handler failed because the user closed it
        (False, ("failed", "handler_failed")),  # nothing closed: the app's word stands
    ],
)
async def test_an_app_failing_a_call_after_its_instance_ended_leaves_it_closed(
    nursery: trio.Nursery, tmp_path: Path, closed: bool, ending: tuple[str, str]
) -> None:
    # The demo's Whiteboard: the user closed the board as it opened; the handler's next
    # request was refused and it raised, and its `handler_failed` reached the router before
    # focus's `ended` did. The close was recorded first, so the close decides.
    store = await store_and_focus(nursery, tmp_path, ends=False)
    pipeline = pipeline_of(store.router)
    await nursery.start(pipeline.run)
    app = AppCalls(pipeline.calls)
    await agent_calls(pipeline, f"{SCOPE}.direct")
    await app.accept_call(APP, sdk.ToolAcceptRequest(call_id="call-1"))
    if closed:
        await store.end_instance(SCOPE, INSTANCE)  # and the router has not heard yet

    failing = sdk.ToolFailRequest(call_id="call-1", code="handler_failed")
    if closed:
        with pytest.raises(LineUpError) as refused:
            await app.fail(APP, failing)
        assert refused.value.code is ErrorCode.CALL_ALREADY_FINAL
    else:
        await app.fail(APP, failing)

    assert await call_state(store) == ending
