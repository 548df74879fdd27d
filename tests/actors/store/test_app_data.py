"""Session data, the app registry and the inventory revision through the real bus
(`actors/store/apps/operations.py`), and the JSON quotas on their own (`_fields.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store._fields import MAX_SESSION_DATA_BYTES, bounded_json, json_depth
from lineup.actors.store.messages import (
    AppEnabledSetReply,
    AppEnabledSetRequest,
    AppRegistryListReply,
    AppRegistryListRequest,
    AppRegistryPutReply,
    AppRegistryPutRequest,
    AuditQueryReply,
    AuditQueryRequest,
    InventoryRevisionBumpReply,
    InventoryRevisionBumpRequest,
    InventoryRevisionGetReply,
    InventoryRevisionGetRequest,
    SessionDataGetReply,
    SessionDataGetRequest,
    SessionDataReplaceReply,
    SessionDataReplaceRequest,
)
from lineup.tests.actors.store._harness import (
    StoreHarness,
    independent_rows,
    refusal,
    start_store,
)

SCOPE = "whiteboard"


def nested(depth: int) -> dict[str, Any]:
    """An object whose containers nest `depth` deep."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"n": value}
    return value


def replace(data: dict[str, Any], expected: int, session: str = "s-1") -> SessionDataReplaceRequest:
    return SessionDataReplaceRequest(
        app_scope=SCOPE, app_session_id=session, data=data, expected_revision=expected
    )


async def read(store: StoreHarness, session: str = "s-1", scope: str = SCOPE) -> tuple[Any, int]:
    reply = await store.ask(
        SessionDataGetRequest(app_scope=scope, app_session_id=session), SessionDataGetReply
    )
    return reply.data, reply.revision


# ---------------------------------------------------------------------------------- JSON quotas


def test_json_depth_counts_nested_containers() -> None:
    values: list[object] = [1, "x", None, {}, [], {"a": [1, {"b": []}]}]
    assert [json_depth(v) for v in values] == [0, 0, 0, 1, 1, 4]
    assert json_depth(nested(32)) == 32


def _depth(value: object) -> int:  # the definition, recursively
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list | tuple):
        return 1 + max(map(_depth, value), default=0)
    return 0


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=40,
)


@given(_JSON)
def test_json_depth_is_the_deepest_nesting_of_any_value(value: object) -> None:
    assert json_depth(value) == _depth(value)


@pytest.mark.parametrize("value", [
    nested(33), {"x": "y" * MAX_SESSION_DATA_BYTES}, {"x": float("nan")}, {"x": float("inf")},
    {"x": "\ud800"}, {"\udfff": 1}, {"x": [1e400]},
])  # fmt: skip
def test_json_that_is_too_deep_too_large_or_not_strict_is_refused(value: dict[str, Any]) -> None:
    with pytest.raises(LineUpError) as caught:
        bounded_json(value, max_bytes=MAX_SESSION_DATA_BYTES, what="data")
    assert caught.value.code is ErrorCode.INVALID_ARGUMENTS


def test_json_at_its_limits_is_kept_compact() -> None:
    assert bounded_json(nested(32), max_bytes=1000, what="data").startswith('{"n":{"n":')
    assert bounded_json({"é": 1}, max_bytes=8, what="data") == '{"é":1}'
    with pytest.raises(LineUpError):  # 7 characters, but 8 bytes in UTF-8
        bounded_json({"é": 1}, max_bytes=7, what="data")


# ---------------------------------------------------------------------------------- session data


async def test_session_data_never_written_is_null_at_revision_zero(store: StoreHarness) -> None:
    assert await read(store) == (None, 0)


async def test_the_first_write_names_revision_zero_and_each_write_adds_one(
    store: StoreHarness,
) -> None:
    first = await store.ask(replace({"strokes": [1]}, 0), SessionDataReplaceReply)
    second = await store.ask(replace({"strokes": [1, 2]}, 1), SessionDataReplaceReply)

    assert [(r.revision, r.changed) for r in (first, second)] == [(1, True), (2, True)]
    assert await read(store) == ({"strokes": [1, 2]}, 2)


async def test_a_write_against_a_stale_revision_is_refused_and_changes_nothing(
    store: StoreHarness,
) -> None:
    await store.ask(replace({"v": 1}, 0), SessionDataReplaceReply)
    await store.ask(replace({"v": 2}, 1), SessionDataReplaceReply)

    assert await refusal(store, replace({"v": "old surface"}, 1)) is ErrorCode.STALE_REVISION
    assert await refusal(store, replace({"v": "ahead"}, 5)) is ErrorCode.STALE_REVISION
    assert await refusal(store, replace({"v": "first?"}, 0)) is ErrorCode.STALE_REVISION
    assert await read(store) == ({"v": 2}, 2)


async def test_a_retried_write_is_answered_with_its_revision_and_writes_nothing(
    store: StoreHarness,
) -> None:
    await store.ask(replace({"v": 1}, 0), SessionDataReplaceReply)

    again = await store.ask(replace({"v": 1}, 0), SessionDataReplaceReply)

    assert (again.revision, again.changed) == (1, False)
    assert await read(store) == ({"v": 1}, 1)


async def test_session_data_is_kept_apart_per_app_and_sub_session(store: StoreHarness) -> None:
    await store.ask(replace({"v": "a"}, 0, session="s-1"), SessionDataReplaceReply)

    assert await read(store, session="s-2") == (None, 0)
    assert await read(store, scope="task") == (None, 0)


@pytest.mark.parametrize("data", [nested(33), {"x": "y" * MAX_SESSION_DATA_BYTES}])
async def test_session_data_over_its_quota_is_refused_with_invalid_arguments(
    store: StoreHarness, data: dict[str, Any]
) -> None:
    assert await refusal(store, replace(data, 0)) is ErrorCode.INVALID_ARGUMENTS
    assert await read(store) == (None, 0)


async def test_session_data_survives_a_restart(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        store = await start_store(nursery, tmp_path / "data")
        await store.ask(replace({"v": 1}, 0), SessionDataReplaceReply)
        nursery.cancel_scope.cancel()
    async with trio.open_nursery() as nursery:
        store = await start_store(nursery, tmp_path / "data")
        kept = await read(store)
        nursery.cancel_scope.cancel()

    assert kept == ({"v": 1}, 1)


# ---------------------------------------------------------------------------------- registry


def install(app_scope: str = SCOPE, version: str = "1.0.0", **manifest: Any) -> (
    AppRegistryPutRequest
):  # fmt: skip
    return AppRegistryPutRequest(app_scope=app_scope, version=version, kind="bundled-reference",
                                 manifest={"app_scope": app_scope, **manifest})  # fmt: skip


async def test_an_installed_app_is_listed_enabled_with_its_version_and_kind(
    store: StoreHarness,
) -> None:
    created = await store.ask(install(), AppRegistryPutReply)
    again = await store.ask(install(), AppRegistryPutReply)
    await store.ask(install("chat"), AppRegistryPutReply)

    listed = await store.ask(AppRegistryListRequest(), AppRegistryListReply)

    assert (created.created, created.changed, again.created, again.changed) == (
        True, True, False, False,
    )  # fmt: skip
    assert [(a.app_scope, a.enabled, a.version, a.kind) for a in listed.apps] == [
        ("chat", True, "1.0.0", "bundled-reference"),
        (SCOPE, True, "1.0.0", "bundled-reference"),
    ]


async def test_a_new_version_keeps_the_old_one_as_rollback_target_and_the_enabled_flag(
    store: StoreHarness,
) -> None:
    await store.ask(install(), AppRegistryPutReply)
    await store.ask(AppEnabledSetRequest(app_scope=SCOPE, enabled=False), AppEnabledSetReply)

    updated = await store.ask(install(version="1.1.0"), AppRegistryPutReply)

    assert (updated.changed, updated.app.version, updated.app.enabled) == (True, "1.1.0", False)
    assert independent_rows(store.db_path, "SELECT previous_version FROM registry") == [("1.0.0",)]


async def test_enabling_and_disabling_an_app_is_idempotent_and_audited(
    store: StoreHarness,
) -> None:
    await store.ask(install(), AppRegistryPutReply)

    off = await store.ask(AppEnabledSetRequest(app_scope=SCOPE, enabled=False), AppEnabledSetReply)
    again = await store.ask(
        AppEnabledSetRequest(app_scope=SCOPE, enabled=False), AppEnabledSetReply
    )
    on = await store.ask(AppEnabledSetRequest(app_scope=SCOPE, enabled=True), AppEnabledSetReply)
    found = await store.ask(AuditQueryRequest(event_prefix="app."), AuditQueryReply)

    assert [(r.app.enabled, r.changed) for r in (off, again, on)] == [
        (False, True), (False, False), (True, True),
    ]  # fmt: skip
    assert off.app.updated_at == again.app.updated_at
    assert [r.event for r in found.records] == ["app.installed", "app.disabled", "app.enabled"]


async def test_enabling_an_app_that_is_not_installed_is_refused(store: StoreHarness) -> None:
    request = AppEnabledSetRequest(app_scope="nope", enabled=True)
    assert await refusal(store, request) is ErrorCode.APP_NOT_INSTALLED


# ---------------------------------------------------------------------------------- inventory


async def test_the_inventory_revision_starts_at_zero_and_every_bump_raises_it(
    store: StoreHarness,
) -> None:
    start = await store.ask(InventoryRevisionGetRequest(), InventoryRevisionGetReply)
    bumps = [
        (await store.ask(InventoryRevisionBumpRequest(reason="app_enabled"),
                         InventoryRevisionBumpReply)).revision
        for _ in range(3)
    ]  # fmt: skip
    now = await store.ask(InventoryRevisionGetRequest(), InventoryRevisionGetReply)

    assert start.revision == 0
    assert bumps == [1, 2, 3]
    assert now.revision == 3


async def test_a_bump_retried_with_its_id_returns_the_revision_it_made(
    store: StoreHarness,
) -> None:
    request = InventoryRevisionBumpRequest(reason="app_disabled", bump_id="b-1")
    first = await store.ask(request, InventoryRevisionBumpReply)
    again = await store.ask(request, InventoryRevisionBumpReply)

    assert (first.revision, first.created) == (1, True)
    assert (again.revision, again.created) == (1, False)


async def test_an_id_whose_revision_was_superseded_gets_a_new_higher_revision(
    store: StoreHarness,
) -> None:
    """Disable then enable: the content (its id) of revision 1 comes back, and is revision 3,
    never 1 again, whose outbox row the Agent was already sent."""

    async def bump(bump_id: str) -> InventoryRevisionBumpReply:
        request = InventoryRevisionBumpRequest(reason="inventory", bump_id=bump_id)
        reply: InventoryRevisionBumpReply = await store.ask(request, InventoryRevisionBumpReply)
        return reply

    replies = [await bump(i) for i in ("inv-a", "inv-b", "inv-a", "inv-a", "inv-b")]
    now = await store.ask(InventoryRevisionGetRequest(), InventoryRevisionGetReply)

    assert [(r.revision, r.created) for r in replies] == [
        (1, True),
        (2, True),
        (3, True),
        (3, False),  # still current: a repeat
        (4, True),
    ]
    assert now.revision == 4


async def test_concurrent_bumps_get_distinct_increasing_revisions_never_reused_after_restart(
    tmp_path: Path,
) -> None:
    revisions: list[int] = []

    async def bump(store: StoreHarness) -> None:
        reply = await store.ask(
            InventoryRevisionBumpRequest(reason="x"), InventoryRevisionBumpReply
        )
        revisions.append(reply.revision)

    async with trio.open_nursery() as outer:
        store = await start_store(outer, tmp_path / "data")
        async with trio.open_nursery() as nursery:
            for _ in range(50):
                nursery.start_soon(bump, store)
        outer.cancel_scope.cancel()
    async with trio.open_nursery() as outer:
        store = await start_store(outer, tmp_path / "data")
        await bump(store)
        outer.cancel_scope.cancel()

    assert sorted(revisions[:50]) == list(range(1, 51))
    assert revisions[50] == 51
