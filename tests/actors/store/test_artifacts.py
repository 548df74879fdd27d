"""Artifacts' metadata (`actors/store/artifacts/operations.py`) on a real migrated SQLite, each
request in its own savepoint as the committer runs it: idempotent by id, the app's quota checked
with the insert, lists newest first, and an audit row that names neither the artifact's name
nor anything of its content."""

from __future__ import annotations

from typing import Any

import pytest

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store._db import Connection
from lineup.actors.store.artifacts import operations as ops
from lineup.actors.store.messages import (
    ArtifactCreateReply,
    ArtifactCreateRequest,
    ArtifactGetReply,
    ArtifactGetRequest,
    ArtifactListReply,
    ArtifactListRequest,
    ArtifactUsageReply,
    ArtifactUsageRequest,
)
from lineup.tests.actors.store._harness import (
    StoreHarness,
    in_savepoint,
    refusal,
)

SHA = "ab" * 32


def making(artifact_id: str = "art_1", **fields: Any) -> ArtifactCreateRequest:
    values: dict[str, Any] = {
        "artifact_id": artifact_id, "app_scope": "whiteboard", "instance_id": "wb-1",
        "name": "secret-plan.png", "media_type": "image/png", "size": 10, "sha256": SHA,
    }  # fmt: skip
    return ArtifactCreateRequest(**(values | fields))


def create(
    conn: Connection, request: ArtifactCreateRequest, now: float = 1.0
) -> ArtifactCreateReply:
    return in_savepoint(conn, lambda c: ops.artifact_create(c, request, now, actor="gateway"))


def count(conn: Connection, table: str) -> int:
    value = conn.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
    assert isinstance(value, int)
    return value


def test_creating_records_the_artifact_and_an_audit_row_of_ids_only(conn: Connection) -> None:
    reply = create(conn, making())
    assert reply.created
    row = reply.artifact
    assert (row.artifact_id, row.app_scope, row.instance_id, row.size, row.created_at) == (
        "art_1", "whiteboard", "wb-1", 10, 1.0,
    )  # fmt: skip
    audit = conn.execute("SELECT * FROM audit").fetchall()
    assert len(audit) == 1
    assert "secret-plan" not in repr(audit)
    assert "art_1" in repr(audit)


def test_creating_again_is_a_repeat_that_writes_nothing(conn: Connection) -> None:
    first = create(conn, making())
    again = create(conn, making(name="other.png", size=99), 5.0)
    assert (again.created, again.artifact) == (False, first.artifact)
    assert (count(conn, "artifacts"), count(conn, "audit")) == (1, 1)


def test_an_id_of_another_app_is_refused(conn: Connection) -> None:
    create(conn, making())
    with pytest.raises(LineUpError) as caught:
        create(conn, making(app_scope="other"))
    assert caught.value.code is ErrorCode.INVALID_ARGUMENTS


def test_the_quota_counts_bytes_and_artifacts_of_the_app_alone(conn: Connection) -> None:
    create(conn, making("a1", size=60, max_app_bytes=100))
    create(conn, making("o1", app_scope="other", size=90))  # another app's: not counted
    for request in (
        making("a2", size=41, max_app_bytes=100),
        making("a2", size=1, max_app_count=1),
    ):
        with pytest.raises(LineUpError) as caught:
            create(conn, request)
        assert caught.value.code is ErrorCode.QUOTA_EXCEEDED
    assert create(conn, making("a2", size=40, max_app_bytes=100, max_app_count=2)).created
    usage = ops.artifact_usage(conn, ArtifactUsageRequest(app_scope="whiteboard"), 2.0)
    assert (usage.bytes, usage.count) == (100, 2)
    # A repeat of a recorded one passes whatever the quota: it adds nothing.
    assert not create(conn, making("a2", size=40, max_app_bytes=0)).created
    assert count(conn, "artifacts") == 3


def test_the_list_is_newest_first_by_app_and_instance(conn: Connection) -> None:
    create(conn, making("a1"), 1.0)
    create(conn, making("a2", instance_id="wb-2"), 2.0)
    create(conn, making("o1", app_scope="other", instance_id="o-1"), 3.0)
    create(conn, making("a3"), 4.0)

    def listed(**fields: Any) -> list[str]:
        reply = ops.artifact_list(conn, ArtifactListRequest(**fields), 9.0)
        return [a.artifact_id for a in reply.artifacts]

    assert listed() == ["a3", "o1", "a2", "a1"]
    assert listed(app_scope="whiteboard") == ["a3", "a2", "a1"]
    assert listed(app_scope="whiteboard", instance_id="wb-1") == ["a3", "a1"]
    assert listed(app_scope="whiteboard", limit=1) == ["a3"]
    get = ops.artifact_get(conn, ArtifactGetRequest(artifact_id="o1"), 9.0)
    assert get.artifact is not None and get.artifact.app_scope == "other"
    assert ops.artifact_get(conn, ArtifactGetRequest(artifact_id="nope"), 9.0).artifact is None


async def test_the_gateway_records_and_reads_artifacts_through_the_store(
    store: StoreHarness,
) -> None:
    made = await store.ask(making(), ArtifactCreateReply)
    assert made.created
    got = await store.ask(ArtifactGetRequest(artifact_id="art_1"), ArtifactGetReply)
    assert got.artifact == made.artifact
    listed = await store.ask(ArtifactListRequest(app_scope="whiteboard"), ArtifactListReply)
    assert listed.artifacts == (made.artifact,)
    usage = await store.ask(ArtifactUsageRequest(app_scope="whiteboard"), ArtifactUsageReply)
    assert (usage.bytes, usage.count) == (10, 1)
    over = making("art_2", max_app_count=1)
    assert await refusal(store, over) is ErrorCode.QUOTA_EXCEEDED
