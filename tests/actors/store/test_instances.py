"""Instances, recovery after a restart and the focus stack through the real bus
(`actors/store/instances/operations.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest
import trio

from lineup.actors.kernel import ErrorCode
from lineup.actors.store.messages import (
    AuditQueryReply,
    AuditQueryRequest,
    FocusStackGetReply,
    FocusStackGetRequest,
    FocusStackSetReply,
    FocusStackSetRequest,
    InstanceListReply,
    InstanceListRequest,
    InstanceRecoverReply,
    InstanceRecoverRequest,
    InstanceRow,
    InstanceState,
    InstanceTransitionReply,
    InstanceTransitionRequest,
    InstanceUpsertReply,
    InstanceUpsertRequest,
)
from lineup.facts import instances as table
from lineup.tests.actors.store._harness import (
    StoreHarness,
    independent_rows,
    refusal,
    start_store,
)

STATES: tuple[InstanceState, ...] = get_args(InstanceState)


def put(
    instance_id: str = "td-1", state: InstanceState = "starting", *, app_scope: str = "task",
    app_session_id: str | None = None, created_by_call_id: str | None = None,
) -> InstanceUpsertRequest:  # fmt: skip
    return InstanceUpsertRequest(
        instance_id=instance_id, app_scope=app_scope, state=state,
        app_session_id=app_session_id or f"s-{instance_id}", created_by_call_id=created_by_call_id,
    )  # fmt: skip


async def to(store: StoreHarness, instance_id: str, *states: InstanceState) -> InstanceRow:
    row = None
    for state in states:
        request = InstanceTransitionRequest(instance_id=instance_id, to_state=state)
        row = (await store.ask(request, InstanceTransitionReply)).instance
    assert row is not None
    return row


async def listed(store: StoreHarness) -> list[tuple[str, str]]:
    rows = (await store.ask(InstanceListRequest(), InstanceListReply)).instances
    return [(row.instance_id, row.state) for row in rows]


async def stack(store: StoreHarness) -> tuple[tuple[str, ...], int]:
    reply = await store.ask(FocusStackGetRequest(), FocusStackGetReply)
    return reply.instance_ids, reply.revision


async def set_stack(store: StoreHarness, *ids: str) -> FocusStackSetReply:
    return await store.ask(FocusStackSetRequest(instance_ids=ids), FocusStackSetReply)


# ---------------------------------------------------------------------------------- put


async def test_putting_an_instance_records_it_with_its_sub_session_and_creating_call(
    store: StoreHarness,
) -> None:
    reply = await store.ask(put(created_by_call_id="call-1"), InstanceUpsertReply)

    row = reply.instance
    assert (reply.created, reply.changed) == (True, True)
    assert (row.instance_id, row.app_scope, row.state, row.app_session_id,
            row.created_by_call_id) == ("td-1", "task", "starting", "s-td-1", "call-1")  # fmt: skip
    assert await listed(store) == [("td-1", "starting")]


async def test_putting_the_same_instance_again_changes_nothing(store: StoreHarness) -> None:
    first = await store.ask(put(created_by_call_id="call-1"), InstanceUpsertReply)
    again = await store.ask(put(created_by_call_id="call-2"), InstanceUpsertReply)

    assert (again.created, again.changed, again.instance) == (False, False, first.instance)


async def test_putting_an_existing_instance_in_a_new_state_moves_it_by_the_table(
    store: StoreHarness,
) -> None:
    await store.ask(put(), InstanceUpsertReply)

    moved = await store.ask(put(state="foreground"), InstanceUpsertReply)

    assert (moved.created, moved.changed, moved.instance.state) == (False, True, "foreground")
    assert await refusal(store, put(state="stopped")) is ErrorCode.LIFECYCLE_DENIED


@pytest.mark.parametrize("state", ["stopping", "stopped", "failed"])
async def test_an_instance_is_not_born_stopping_or_ended(
    store: StoreHarness, state: InstanceState
) -> None:
    assert await refusal(store, put(state=state)) is ErrorCode.LIFECYCLE_DENIED
    assert await listed(store) == []


async def test_an_existing_instance_keeps_its_app_and_its_sub_session(store: StoreHarness) -> None:
    await store.ask(put(), InstanceUpsertReply)

    assert await refusal(store, put(app_scope="whiteboard")) is ErrorCode.APP_SCOPE_MISMATCH
    assert await refusal(store, put(app_session_id="s-other")) is ErrorCode.INVALID_ARGUMENTS


# ---------------------------------------------------------------------------------- transitions


async def test_an_instance_moves_through_its_lifecycle(store: StoreHarness) -> None:
    await store.ask(put(), InstanceUpsertReply)

    states = [
        (await to(store, "td-1", state)).state
        for state in ("foreground", "background", "suspended", "foreground", "stopping", "stopped")
    ]

    assert states == ["foreground", "background", "suspended", "foreground", "stopping", "stopped"]
    assert await listed(store) == []


async def test_repeating_an_instance_transition_changes_nothing(store: StoreHarness) -> None:
    await store.ask(put(), InstanceUpsertReply)
    first = await to(store, "td-1", "foreground")

    again = await store.ask(
        InstanceTransitionRequest(instance_id="td-1", to_state="foreground"),
        InstanceTransitionReply,
    )

    assert (again.changed, again.instance) == (False, first)


async def test_every_illegal_instance_transition_is_refused_with_lifecycle_denied(
    store: StoreHarness,
) -> None:
    # One instance per state, reached by legal moves; then every move the table lacks.
    paths: dict[InstanceState, tuple[InstanceState, ...]] = {
        "starting": (), "foreground": ("foreground",), "background": ("background",),
        "suspended": ("suspended",), "stopping": ("stopping",), "stopped": ("stopping", "stopped"),
        "failed": ("failed",),
    }  # fmt: skip
    refused = 0
    for state, path in paths.items():
        await store.ask(put(state), InstanceUpsertReply)
        if path:
            await to(store, state, *path)
        for to_state in STATES:
            if to_state == state or table.EVENT_TO.get(to_state) in table.TRANSITIONS[state]:
                continue
            request = InstanceTransitionRequest(instance_id=state, to_state=to_state)
            assert await refusal(store, request) is ErrorCode.LIFECYCLE_DENIED, (state, to_state)
            refused += 1
    assert refused == 23
    states = independent_rows(store.db_path, "SELECT instance_id, state FROM instances")
    assert all(instance_id == state for instance_id, state in states)


async def test_an_unknown_instance_or_another_apps_instance_is_refused(
    store: StoreHarness,
) -> None:
    await store.ask(put(), InstanceUpsertReply)

    unknown = InstanceTransitionRequest(instance_id="nope", to_state="foreground")
    foreign = InstanceTransitionRequest(
        instance_id="td-1", to_state="foreground", expected_app_scope="whiteboard"
    )
    assert await refusal(store, unknown) is ErrorCode.APP_INSTANCE_NOT_FOUND
    assert await refusal(store, foreign) is ErrorCode.APP_SCOPE_MISMATCH


async def test_the_instance_list_holds_every_instance_not_yet_ended_oldest_first(
    store: StoreHarness,
) -> None:
    for instance_id in ("a", "b", "c", "d"):
        await store.ask(put(instance_id), InstanceUpsertReply)
    await to(store, "b", "foreground", "stopping")
    await to(store, "c", "failed")
    await to(store, "d", "stopping", "stopped")

    assert await listed(store) == [("a", "starting"), ("b", "stopping")]
    only = await store.ask(InstanceListRequest(app_scope="other"), InstanceListReply)
    assert only.instances == ()


async def test_instance_changes_are_audited_with_ids_and_states(store: StoreHarness) -> None:
    await store.ask(put(), InstanceUpsertReply)
    await to(store, "td-1", "foreground")

    found = await store.ask(AuditQueryRequest(event_prefix="instance."), AuditQueryReply)

    assert [(r.event, r.actor, r.peer, r.subject_id) for r in found.records] == [
        ("instance.starting", "focus", "task", "td-1"),
        ("instance.foreground", "focus", "task", "td-1"),
    ]


# ---------------------------------------------------------------------------------- recovery


async def test_after_a_restart_instances_caught_starting_or_stopping_come_back_suspended(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    async with trio.open_nursery() as nursery:
        store = await start_store(nursery, data_dir)
        for instance_id in ("starting", "front", "closing", "gone"):
            await store.ask(put(instance_id), InstanceUpsertReply)
        await to(store, "front", "foreground")
        await to(store, "closing", "background", "stopping")
        await to(store, "gone", "stopping", "stopped")
        await set_stack(store, "closing", "starting", "front")
        nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        store = await start_store(nursery, data_dir)
        recovered = await store.ask(InstanceRecoverRequest(), InstanceRecoverReply)
        again = await store.ask(InstanceRecoverRequest(), InstanceRecoverReply)
        after = await listed(store)
        kept = await stack(store)
        nursery.cancel_scope.cancel()

    assert [(row.instance_id, row.state) for row in recovered.instances] == [
        ("starting", "suspended"), ("closing", "suspended"),
    ]  # fmt: skip
    assert again.instances == ()
    assert after == [("starting", "suspended"), ("front", "foreground"), ("closing", "suspended")]
    assert kept[0] == ("closing", "starting", "front")


# ---------------------------------------------------------------------------------- focus stack


async def test_an_empty_focus_stack_has_revision_zero(store: StoreHarness) -> None:
    assert await stack(store) == ((), 0)


async def test_setting_the_focus_stack_stores_it_whole_and_bumps_its_revision(
    store: StoreHarness,
) -> None:
    for instance_id in ("chat", "td-1", "wb-1"):
        await store.ask(put(instance_id), InstanceUpsertReply)

    first = await set_stack(store, "chat", "td-1")
    second = await set_stack(store, "chat", "wb-1", "td-1")
    again = await set_stack(store, "chat", "wb-1", "td-1")

    assert [(r.revision, r.changed) for r in (first, second, again)] == [
        (1, True), (2, True), (2, False),
    ]  # fmt: skip
    assert await stack(store) == (("chat", "wb-1", "td-1"), 2)


async def test_a_focus_stack_set_against_a_stale_revision_is_refused(store: StoreHarness) -> None:
    for instance_id in ("chat", "td-1"):
        await store.ask(put(instance_id), InstanceUpsertReply)
    await set_stack(store, "chat")
    await set_stack(store, "chat", "td-1")

    stale = FocusStackSetRequest(instance_ids=("td-1", "chat"), expected_revision=1)
    current = FocusStackSetRequest(instance_ids=("td-1", "chat"), expected_revision=2)
    assert await refusal(store, stale) is ErrorCode.STALE_REVISION
    assert (await store.ask(current, FocusStackSetReply)).revision == 3


@pytest.mark.parametrize(("ids", "code"), [
    (("chat", "chat"), ErrorCode.INVALID_ARGUMENTS),
    (("chat", "nope"), ErrorCode.APP_INSTANCE_NOT_FOUND),
    (("chat", "ended"), ErrorCode.APP_INSTANCE_NOT_FOUND),
])  # fmt: skip
async def test_a_focus_stack_of_repeated_unknown_or_ended_instances_is_refused(
    store: StoreHarness, ids: tuple[str, ...], code: ErrorCode
) -> None:
    for instance_id in ("chat", "ended"):
        await store.ask(put(instance_id), InstanceUpsertReply)
    await to(store, "ended", "failed")

    assert await refusal(store, FocusStackSetRequest(instance_ids=ids)) is code
    assert await stack(store) == ((), 0)


@pytest.mark.parametrize("final", [("stopping", "stopped"), ("failed",)])
async def test_an_instance_that_ends_leaves_the_focus_stack_in_the_same_change(
    store: StoreHarness, final: tuple[InstanceState, ...]
) -> None:
    for instance_id in ("chat", "td-1"):
        await store.ask(put(instance_id), InstanceUpsertReply)
    await set_stack(store, "chat", "td-1")

    await to(store, "td-1", *final)

    ids, revision = await stack(store)
    assert (ids, revision) == (("chat",), 2)
