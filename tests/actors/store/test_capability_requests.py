"""Capability requests that wait (`actors/store/capabilities/requests.py`) on a real migrated
SQLite, each request in its own savepoint as the committer runs it: an open is idempotent, an
end writes the result and the one final audit row together and only once, a second end is
answered with the first one's result, the list holds the open rows and the lately ended ones,
and rows ended long ago are dropped."""

from __future__ import annotations

from typing import Any

from lineup.actors.store._db import Connection
from lineup.actors.store.capabilities import requests as ops
from lineup.actors.store.messages import (
    CapabilityRequestEndReply,
    CapabilityRequestEndRequest,
    CapabilityRequestListRequest,
    CapabilityRequestOpenReply,
    CapabilityRequestOpenRequest,
)
from lineup.tests.actors.store._harness import in_savepoint


def open_(
    conn: Connection, request_id: str = "r-1", now: float = 10.0
) -> CapabilityRequestOpenReply:
    request = CapabilityRequestOpenRequest(
        asker="app:capapp",
        request_id=request_id,
        app_scope="capapp",
        capability="notification.show",
        deadline_at=now + 60.0,
    )
    return in_savepoint(conn, lambda c: ops.capability_request_open(c, request, now))


def end(
    conn: Connection, status: str, code: str | None, now: float = 20.0, **extra: Any
) -> CapabilityRequestEndReply:
    event = "gateway.capability.completed" if code is None else "gateway.capability.refused"
    request = CapabilityRequestEndRequest(
        asker="app:capapp", request_id="r-1", status=status, code=code, event=event, **extra
    )
    return in_savepoint(
        conn, lambda c: ops.capability_request_end(c, request, now, actor="gateway")
    )


def audit(conn: Connection) -> list[tuple[Any, ...]]:
    columns = "event, actor, peer, subject_id, message_type, code"
    return list(conn.execute(f"SELECT {columns} FROM audit"))


def test_an_open_is_idempotent_and_an_end_writes_its_one_final_audit_row_once(
    conn: Connection,
) -> None:
    first, again = open_(conn), open_(conn, now=11.0)
    assert (first.opened, again.opened) == (True, False)
    assert (again.row.state, again.row.opened_at) == ("open", 10.0)

    ended = end(conn, "completed", None, output={"artifact": {"artifact_id": "a-1"}})
    late = end(conn, "failed", "actor_restarted", now=30.0)

    assert ended.ended and ended.row is not None
    assert (ended.row.state, ended.row.status, ended.row.ended_at) == ("ended", "completed", 20.0)
    assert ended.row.output == {"artifact": {"artifact_id": "a-1"}}
    # The second end changes nothing and is answered with the first one's result.
    assert not late.ended and late.row == ended.row
    assert audit(conn) == [
        ("gateway.capability.completed", "gateway", "capapp", "r-1", "notification.show",
         "completed"),
    ]  # fmt: skip
    # Opened again after its end: it is there, ended (the gateway answers from it).
    assert open_(conn, now=40.0).row == ended.row


def test_the_list_holds_open_rows_and_lately_ended_ones_and_old_ends_are_dropped(
    conn: Connection,
) -> None:
    open_(conn, "r-1", now=10.0)
    end(conn, "failed", "permission_denied", now=20.0)
    open_(conn, "r-2", now=30.0)

    def listed(since: float) -> list[tuple[str, str]]:
        request = CapabilityRequestListRequest(ended_since=since)
        reply = in_savepoint(conn, lambda c: ops.capability_request_list(c, request, 40.0))
        return [(row.request_id, row.state) for row in reply.rows]

    assert listed(15.0) == [("r-2", "open"), ("r-1", "ended")]
    assert listed(25.0) == [("r-2", "open")]
    # An open an hour later drops what ended more than RETAINED_S before it.
    open_(conn, "r-3", now=20.0 + ops.RETAINED_S + 1)
    assert listed(0.0) == [("r-3", "open"), ("r-2", "open")]
