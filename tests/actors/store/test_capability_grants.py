"""Capability grants (`actors/store/capabilities/operations.py`) on a real migrated SQLite, each
request in its own savepoint as the committer runs it: a put makes or replaces the grant and is
a repeat when nothing changes, a delete revokes it, expired grants are never listed, and every
change has its audit row in the same transaction, naming the app, the capability and the
policy only."""

from __future__ import annotations

import pytest
import trio

from lineup.actors.kernel import ActorKind, ErrorCode, LineUpError, Message
from lineup.actors.store._db import Connection
from lineup.actors.store.capabilities import operations as ops
from lineup.actors.store.messages import (
    CapabilityGrantDeleteReply,
    CapabilityGrantDeleteRequest,
    CapabilityGrantListReply,
    CapabilityGrantListRequest,
    CapabilityGrantPutReply,
    CapabilityGrantPutRequest,
)
from lineup.tests.actors.store._harness import WAIT, StoreHarness, in_savepoint


def put(
    conn: Connection, policy: str = "allow", expires_at: float | None = None, now: float = 1.0,
    app_scope: str = "whiteboard", capability: str = "artifact.save",
) -> CapabilityGrantPutReply:  # fmt: skip
    request = CapabilityGrantPutRequest.model_validate(
        {"app_scope": app_scope, "capability": capability, "policy": policy,
         "expires_at": expires_at}
    )  # fmt: skip
    return in_savepoint(conn, lambda c: ops.capability_grant_put(c, request, now, actor="gateway"))


def delete(
    conn: Connection, now: float = 1.0, capability: str = "artifact.save"
) -> CapabilityGrantDeleteReply:
    request = CapabilityGrantDeleteRequest(app_scope="whiteboard", capability=capability)
    return in_savepoint(
        conn, lambda c: ops.capability_grant_delete(c, request, now, actor="gateway")
    )


def listed(conn: Connection, now: float, app_scope: str | None = None) -> list[tuple[str, ...]]:
    reply = ops.capability_grant_list(conn, CapabilityGrantListRequest(app_scope=app_scope), now)
    return [(g.app_scope, g.capability, g.policy) for g in reply.grants]


def audit(conn: Connection) -> list[tuple[object, ...]]:
    return conn.execute(
        "SELECT event, actor, peer, subject_id, message_type, code FROM audit ORDER BY id"
    ).fetchall()


def test_a_put_records_the_grant_and_its_audit_row_of_ids_only(conn: Connection) -> None:
    reply = put(conn, "allow", expires_at=100.0)
    assert reply.changed
    grant = reply.grant
    assert (grant.policy, grant.granted_at, grant.expires_at) == ("allow", 1.0, 100.0)
    assert audit(conn) == [
        ("store.capability_grant.put", "gateway", "whiteboard", "whiteboard", "artifact.save",
         "allow"),
    ]  # fmt: skip


def test_the_same_put_again_is_a_repeat_and_another_policy_replaces_it(conn: Connection) -> None:
    first = put(conn, "allow")
    again = put(conn, "allow", now=5.0)
    assert (again.changed, again.grant) == (False, first.grant)
    blocked = put(conn, "deny", now=6.0)
    assert blocked.changed
    assert (blocked.grant.policy, blocked.grant.granted_at) == ("deny", 6.0)
    assert [row[5] for row in audit(conn)] == ["allow", "deny"]


def test_a_delete_revokes_the_grant_and_a_second_one_changes_nothing(conn: Connection) -> None:
    put(conn, "allow")
    assert delete(conn).changed
    assert listed(conn, 2.0) == []
    assert not delete(conn).changed
    assert [row[0] for row in audit(conn)] == [
        "store.capability_grant.put",
        "store.capability_grant.deleted",
    ]


def test_expired_grants_are_never_listed_and_a_put_renews_them(conn: Connection) -> None:
    put(conn, "allow", expires_at=10.0)
    put(conn, "deny", capability="file.open")
    put(conn, "allow", app_scope="other", capability="notification.show")
    assert listed(conn, 5.0) == [
        ("other", "notification.show", "allow"),
        ("whiteboard", "artifact.save", "allow"),
        ("whiteboard", "file.open", "deny"),
    ]
    assert listed(conn, 10.0, app_scope="whiteboard") == [("whiteboard", "file.open", "deny")]
    # The same policy and expiry once expired is not a repeat: the grant is made again.
    renewed = put(conn, "allow", expires_at=10.0, now=11.0)
    assert renewed.changed
    # An expired grant's removal is housekeeping: nothing the user could still see changes.
    assert not delete(conn, now=12.0).changed


async def test_the_gateway_writes_and_focus_reads_grants_through_the_store(
    store: StoreHarness,
) -> None:
    request = CapabilityGrantPutRequest(
        app_scope="whiteboard", capability="file.open", policy="allow"
    )
    made = await store.ask(request, CapabilityGrantPutReply)
    assert made.changed
    listing = await store.ask(CapabilityGrantListRequest(), CapabilityGrantListReply)
    assert listing.grants == (made.grant,)
    revoke = CapabilityGrantDeleteRequest(app_scope="whiteboard", capability="file.open")
    assert (await store.ask(revoke, CapabilityGrantDeleteReply)).changed
    # Focus reads the grants but may not write them.
    focus = store.peers[ActorKind.FOCUS]
    with trio.fail_after(WAIT):
        seen = await focus.request("store", CapabilityGrantListRequest(), expect=Message)
    assert isinstance(seen, CapabilityGrantListReply)
    with pytest.raises(LineUpError) as caught, trio.fail_after(WAIT):
        await focus.request("store", request, expect=Message)
    assert caught.value.code is ErrorCode.ACL_DENIED
