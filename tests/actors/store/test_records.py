"""The records of seed 000 §6 and seed 004 §4.3 through the real store (issue 29, items 5 and
6): an instance keeps its conversation, the instance that opened it, when it ended, the code
it failed with and its interaction mode; an app keeps when it was enabled, its install state
and its active instance count. Schema 13 brings a database of schema 11 to them."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import apsw
import trio

from lineup.actors.kernel import ErrorCode
from lineup.actors.store._db import DB_FILENAME, migrate, open_database
from lineup.actors.store._migrations import MIGRATIONS
from lineup.actors.store.messages import (
    AppEnabledSetReply,
    AppEnabledSetRequest,
    AppOperationPutReply,
    AppOperationPutRequest,
    AppRegistryListReply,
    AppRegistryListRequest,
    AppRegistryPutReply,
    AppRegistryPutRequest,
    AppRow,
    AuditQueryReply,
    AuditQueryRequest,
    InstanceCommitReply,
    InstanceCommitRequest,
    InstanceListReply,
    InstanceListRequest,
    InstanceModeSet,
    InstanceMove,
    InstanceRow,
    InstanceUpsertRequest,
)
from lineup.tests.actors.store._harness import StoreHarness, refusal, start_store


def born(
    instance_id: str, app_scope: str, *, mode: str | None = None, parent: str | None = None
) -> InstanceUpsertRequest:
    return InstanceUpsertRequest.model_validate(
        {
            "instance_id": instance_id,
            "app_scope": app_scope,
            "state": "starting",
            "app_session_id": instance_id,
            "conversation_id": "conv-1",
            "parent_instance_id": parent,
            "mode": mode,
        }
    )


async def commit(
    store: StoreHarness,
    *,
    born_as: InstanceUpsertRequest | None = None,
    moves: tuple[InstanceMove, ...] = (),
    modes: tuple[InstanceModeSet, ...] = (),
    stack: tuple[str, ...],
) -> InstanceCommitReply:
    request = InstanceCommitRequest(born=born_as, moves=moves, modes=modes, stack=stack)
    return await store.ask(request, InstanceCommitReply)


async def live(store: StoreHarness) -> dict[str, InstanceRow]:
    rows = (await store.ask(InstanceListRequest(), InstanceListReply)).instances
    return {row.instance_id: row for row in rows}


async def with_chat_and_board(store: StoreHarness) -> None:
    await commit(store, born_as=born("chat", "chat", mode="im"), stack=("chat",))
    await commit(
        store,
        moves=(InstanceMove(instance_id="chat", to_state="foreground"),),
        stack=("chat",),
    )
    await commit(
        store, born_as=born("board:c1", "board", parent="chat"), stack=("chat", "board:c1")
    )


# ---------------------------------------------------------------------------------- instances


async def test_an_instance_keeps_its_conversation_parent_and_mode_from_birth(
    store: StoreHarness,
) -> None:
    await with_chat_and_board(store)
    rows = await live(store)
    assert (rows["chat"].conversation_id, rows["chat"].mode) == ("conv-1", "im")
    board = rows["board:c1"]
    assert (board.conversation_id, board.parent_instance_id, board.mode) == (
        "conv-1",
        "chat",
        None,
    )
    assert board.stopped_at is None and board.error is None


async def test_a_mode_switch_is_one_commit_kept_across_a_restart_of_the_store(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    async with trio.open_nursery() as first_run:
        store = await start_store(first_run, data)
        await with_chat_and_board(store)
        switched = await commit(
            store,
            modes=(InstanceModeSet(instance_id="chat", mode="audio"),),
            stack=("chat", "board:c1"),
        )
        assert switched.changed and [r.mode for r in switched.instances] == ["audio"]
        again = await commit(
            store,
            modes=(InstanceModeSet(instance_id="chat", mode="audio"),),
            stack=("chat", "board:c1"),
        )
        assert not again.changed  # a retry of the switch writes nothing
        first_run.cancel_scope.cancel()

    store = await start_store(nursery, data)
    assert (await live(store))["chat"].mode == "audio"
    audit = await store.ask(AuditQueryRequest(event_prefix="instance.mode"), AuditQueryReply)
    assert [r.subject_id for r in audit.records] == ["chat"]  # once; the mode is the row's


async def test_a_mode_is_refused_for_an_app_without_modes_and_for_an_ended_instance(
    store: StoreHarness,
) -> None:
    await with_chat_and_board(store)
    no_mode = InstanceCommitRequest(
        modes=(InstanceModeSet(instance_id="board:c1", mode="video"),), stack=("chat", "board:c1")
    )
    assert await refusal(store, no_mode) == ErrorCode.INVALID_ARGUMENTS
    unknown = InstanceCommitRequest(
        modes=(InstanceModeSet(instance_id="nobody", mode="video"),), stack=("chat", "board:c1")
    )
    assert await refusal(store, unknown) == ErrorCode.APP_INSTANCE_NOT_FOUND
    assert (await live(store))["chat"].mode == "im"  # a refused commit wrote nothing


async def test_an_ended_instance_keeps_when_it_ended_and_a_failed_one_its_code(
    store: StoreHarness,
) -> None:
    await with_chat_and_board(store)
    await commit(store, born_as=born("notes:n1", "notes"), stack=("chat", "board:c1", "notes:n1"))
    reply = await commit(
        store,
        moves=(
            InstanceMove(instance_id="board:c1", to_state="stopping"),
            InstanceMove(instance_id="board:c1", to_state="stopped"),
            InstanceMove(
                instance_id="notes:n1", to_state="failed", error=ErrorCode.APP_EXITED.value
            ),
        ),
        stack=("chat",),
    )
    ended = {row.instance_id: row for row in reply.instances}  # each as it is now, the last
    board, notes = ended["board:c1"], ended["notes:n1"]
    assert board.state == "stopped" and board.error is None
    assert board.stopped_at is not None and board.stopped_at >= board.created_at
    assert (notes.state, notes.error) == ("failed", "app_exited")
    assert notes.stopped_at is not None
    audit = await store.ask(AuditQueryRequest(event_prefix="instance."), AuditQueryReply)
    failed = [r.code for r in audit.records if r.subject_id == "notes:n1"]
    assert failed == [None, "app_exited"]  # born, then failed with its code


# ---------------------------------------------------------------------------------- apps


def bundled(scope: str) -> AppRegistryPutRequest:
    return AppRegistryPutRequest(
        app_scope=scope, version="1.0.0", kind="bundled-reference", manifest={}
    )


async def app(store: StoreHarness, scope: str) -> AppRow:
    rows = (await store.ask(AppRegistryListRequest(), AppRegistryListReply)).apps
    return next(row for row in rows if row.app_scope == scope)


async def test_an_app_record_keeps_when_it_was_enabled_and_counts_its_live_instances(
    store: StoreHarness,
) -> None:
    put = await store.ask(bundled("board"), AppRegistryPutReply)
    assert put.app.enabled_at is not None and put.app.enabled_at >= put.app.installed_at > 0
    assert put.app.active_instance_count == 0
    await with_chat_and_board(store)
    assert (await app(store, "board")).active_instance_count == 1

    await store.ask(AppEnabledSetRequest(app_scope="board", enabled=False), AppEnabledSetReply)
    assert (await app(store, "board")).enabled_at is None
    enabled = await store.ask(
        AppEnabledSetRequest(app_scope="board", enabled=True), AppEnabledSetReply
    )
    assert enabled.app.enabled_at is not None and enabled.app.enabled_at >= put.app.enabled_at

    await commit(
        store,
        moves=(
            InstanceMove(instance_id="board:c1", to_state="stopping"),
            InstanceMove(instance_id="board:c1", to_state="stopped"),
        ),
        stack=("chat",),
    )
    assert (await app(store, "board")).active_instance_count == 0


async def test_an_app_is_updating_while_a_change_of_it_runs_and_failed_when_the_last_failed(
    store: StoreHarness,
) -> None:
    await store.ask(bundled("board"), AppRegistryPutReply)
    assert (await app(store, "board")).install_state == "installed"
    running = AppOperationPutRequest(
        operation_id="op-1", app_scope="board", kind="update", state="running"
    )
    await store.ask(running, AppOperationPutReply)
    assert (await app(store, "board")).install_state == "updating"
    failed = running.model_copy(update={"state": "failed", "code": "digest_mismatch"})
    await store.ask(failed, AppOperationPutReply)
    assert (await app(store, "board")).install_state == "failed"
    # An enable is no change of what is installed.
    enable = AppOperationPutRequest(
        operation_id="op-2", app_scope="board", kind="enable", state="running"
    )
    await store.ask(enable, AppOperationPutReply)
    assert (await app(store, "board")).install_state == "failed"


# ---------------------------------------------------------------------------------- migration


def test_schema_13_gives_the_chat_its_mode_and_an_enabled_app_its_enable_time(
    tmp_path: Path,
) -> None:
    with closing(apsw.Connection(str(tmp_path / DB_FILENAME))) as conn:
        assert migrate(conn, MIGRATIONS[:11]) == 11
        conn.execute(
            "INSERT INTO instances (instance_id, app_scope, state, created_at, updated_at)"
            " VALUES ('chat', 'chat', 'foreground', 1, 1), ('td-1', 'task', 'stopped', 1, 2);"
            "INSERT INTO registry (app_scope, version, manifest, installed_at, updated_at,"
            " enabled) VALUES ('task', '1.0.0', '{}', 3, 4, 1), ('off', '1.0.0', '{}', 5, 6, 0)"
        )
    with closing(open_database(tmp_path, {})) as db:
        instances = db.conn.execute(
            "SELECT instance_id, mode, stopped_at, error FROM instances ORDER BY instance_id"
        ).fetchall()
        apps = db.conn.execute(
            "SELECT app_scope, enabled_at FROM registry ORDER BY app_scope"
        ).fetchall()
        assert db.conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert instances == [("chat", "im", None, None), ("td-1", None, None, None)]
    assert apps == [("off", None), ("task", 3.0)]
