"""The router finds a call's instance in the index focus keeps it told of, without a round trip
to focus, and asks focus whenever the index may not answer for it (issue 32: the tool path's
hops). The index itself is pure; the pipeline's use of it runs over a real store, focus
scripted and counting what it is asked. And the router's periodic sweep reads only the calls it
could move."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest
import trio

from lineup.actors.focus.messages import FindInstanceRequest, InstanceReply, InventoryRequest
from lineup.actors.kernel import ActorKind, Envelope, Identity, Message
from lineup.actors.router._instance_index import InstanceIndex
from lineup.actors.router.messages import IndexedInstance, InstanceIndexEvent
from lineup.actors.store.messages import ToolCallStepReply
from lineup.tests.actors.router.test_tool_instance_end import (
    INSTANCE,
    INVENTORY,
    SCOPE,
    agent_calls,
    call_state,
    pipeline_of,
)
from lineup.tests.actors.store._harness import WAIT, router_peer, start_store
from lineup.tests.actors.store.test_tool_calls import INSTANCE as STORE_INSTANCE
from lineup.tests.actors.store.test_tool_calls import birth, step

HANDED_OVER: Final = ("waiting_for_app", "running")


def _index(version: int, *entries: tuple[str, str, str]) -> InstanceIndexEvent:
    return InstanceIndexEvent(
        version=version,
        instances=tuple(
            IndexedInstance(instance_id=i, app_scope=s, state=state) for i, s, state in entries
        ),
    )


def test_the_index_finds_the_named_instance_or_the_apps_topmost_when_it_is_up() -> None:
    channel = object()
    index = InstanceIndex(lambda: channel)
    index.update(
        _index(1, ("a:1", "a", "background"), ("b:1", "b", "suspended"), ("a:2", "a", "foreground"))
    )
    top = index.find("a", None)
    assert top is not None and top.instance_id == "a:2"
    named = index.find("a", "a:1")
    assert named is not None and named.instance_id == "a:1"
    assert index.find("b", None) is None  # suspended: focus resumes it
    assert index.find("b", "a:1") is None  # another app's instance: focus refuses it
    assert index.find("c", None) is None  # none: focus decides (a launch, or a refusal)


def test_an_older_index_told_late_is_dropped() -> None:
    index = InstanceIndex(lambda: "focus")
    assert index.update(_index(5, ("a:1", "a", "foreground")))
    assert not index.update(_index(4, ("a:1", "a", "suspended")))
    found = index.find("a", None)
    assert found is not None and found.state == "foreground"


def test_an_index_from_a_channel_to_focus_that_is_gone_answers_nothing() -> None:
    channels: list[object | None] = [object()]
    index = InstanceIndex(lambda: channels[0])
    index.update(_index(1, ("a:1", "a", "foreground")))
    assert index.find("a", None) is not None
    channels[0] = object()  # focus restarted: a new channel, no index told on it yet
    assert index.find("a", None) is None
    channels[0] = None
    assert index.find("a", None) is None


async def _pipeline_with_focus(nursery: trio.Nursery, tmp_path: Path, state: str):  # type: ignore[no-untyped-def]
    store = await start_store(nursery, tmp_path / "data")
    await store.put_live_instances(SCOPE, INSTANCE)
    finds: list[FindInstanceRequest] = []

    async def focus(env: Envelope) -> Message | None:
        if isinstance(env.body, FindInstanceRequest):
            finds.append(env.body)
            return InstanceReply(instance_id=INSTANCE, app_scope=SCOPE, state="foreground")
        if isinstance(env.body, InventoryRequest):
            return INVENTORY
        return None

    await router_peer(nursery, store, Identity(ActorKind.FOCUS, "focus"), focus)
    pipeline = pipeline_of(store.router)
    await nursery.start(pipeline.run)
    pipeline.index.update(_index(1, (INSTANCE, SCOPE, state)))
    return store, pipeline, finds


@pytest.mark.parametrize(
    ("state", "asked"),
    [
        ("background", []),  # up: the index answers as focus would, and focus is not asked
        ("suspended", [(SCOPE, None, False)]),  # focus resumes it: the index cannot answer
    ],
)
async def test_a_direct_call_asks_focus_only_when_the_index_cannot_answer_for_it(
    nursery: trio.Nursery, tmp_path: Path, state: str, asked: list[tuple[str, None, bool]]
) -> None:
    store, pipeline, finds = await _pipeline_with_focus(nursery, tmp_path, state)
    with trio.fail_after(WAIT):
        await agent_calls(pipeline, f"{SCOPE}.direct", "call-1")
    reached = await call_state(store, "call-1")
    assert reached in [(s, None) for s in HANDED_OVER]
    assert [(f.app_scope, f.instance_id, f.foreground) for f in finds] == asked


async def test_the_sweep_of_ended_instances_reads_no_decided_call(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    """A submitted call stays as it is when its instance ends (its result is still delivered):
    the sweep never reads it, however many an AppServer away leaves behind."""
    store = await start_store(nursery, tmp_path / "data")
    pipeline = pipeline_of(store.router)
    for call_id in ("a", "b"):
        for request in (birth("hand_over", call_id), step("take", call_id)):
            await store.ask(request, ToolCallStepReply)
    await store.ask(step("submit", "b"), ToolCallStepReply)
    with trio.fail_after(WAIT):
        assert await pipeline.sweep_ended(set(), confirmed=set()) == {STORE_INSTANCE}
        await store.ask(step("submit", "a"), ToolCallStepReply)
        assert await pipeline.sweep_ended(set(), confirmed=set()) == set()
