"""App sub-sessions (`actors/store/app_sessions/operations.py`) on a real migrated SQLite, each
request in its own savepoint as the committer runs it: opened and closed each with its outbox
row in one transaction, idempotent, one per instance."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store._db import Connection
from lineup.actors.store.app_sessions import operations as ops
from lineup.actors.store.messages import (
    AppSessionCloseReply,
    AppSessionCloseRequest,
    AppSessionGetReply,
    AppSessionGetRequest,
    AppSessionListRequest,
    AppSessionOpenReply,
    AppSessionOpenRequest,
)
from lineup.tests.actors.store._harness import (
    StoreHarness,
    in_savepoint,
    refusal,
)

OPENED = "lineup.v1.app_session.opened"
CLOSED = "lineup.v1.app_session.closed"


def opening(instance: str = "td-1", **fields: Any) -> AppSessionOpenRequest:
    session = f"lu:app_session:{instance}"
    values: dict[str, Any] = {
        "app_session_id": session, "app_scope": "task-dashboard", "instance_id": instance,
        "agent_id": "agent-1", "conversation_id": "conv-1", "outbox_id": f"opened:{session}",
        "wire": {"v": 1, "type": OPENED, "payload": {"app_session_id": session}},
    }  # fmt: skip
    return AppSessionOpenRequest(**(values | fields))


def closing(instance: str = "td-1", **fields: Any) -> AppSessionCloseRequest:
    session = f"lu:app_session:{instance}"
    values: dict[str, Any] = {
        "app_session_id": session, "outbox_id": f"closed:{session}",
        "wire": {"v": 1, "type": CLOSED, "payload": {"pending_interaction_call_ids": ["c-1"]}},
    }  # fmt: skip
    return AppSessionCloseRequest(**(values | fields))


def open_(
    conn: Connection, request: AppSessionOpenRequest, now: float = 1.0
) -> AppSessionOpenReply:
    return in_savepoint(conn, lambda c: ops.app_session_open(c, request, now, actor="router"))


def close(
    conn: Connection, request: AppSessionCloseRequest, now: float = 2.0
) -> AppSessionCloseReply:
    return in_savepoint(conn, lambda c: ops.app_session_close(c, request, now, actor="router"))


def count(conn: Connection, table: str) -> int:
    [(rows,)] = conn.execute(f"SELECT count(*) FROM {table}").fetchall()
    assert isinstance(rows, int)
    return rows


def counts(conn: Connection) -> tuple[int, int, int]:
    return count(conn, "app_sessions"), count(conn, "outbox"), count(conn, "audit")


def outbox_kinds(conn: Connection) -> list[tuple[object, ...]]:
    return conn.execute("SELECT outbox_id, kind FROM outbox ORDER BY seq").fetchall()


def test_opening_writes_the_session_and_its_opened_row_together(conn: Connection) -> None:
    reply = open_(conn, opening(previous_app_session_id="lu:app_session:td-0"))
    assert reply.created
    session = reply.session
    assert (session.state, session.opened_at, session.closed_at) == ("open", 1.0, None)
    assert session.previous_app_session_id == "lu:app_session:td-0"
    assert outbox_kinds(conn) == [("opened:lu:app_session:td-1", OPENED)]
    assert counts(conn) == (1, 1, 1)


def test_opening_again_is_a_repeat_that_writes_nothing(conn: Connection) -> None:
    first = open_(conn, opening())
    again = open_(conn, opening(outbox_id="another"), 5.0)
    assert (again.created, again.session) == (False, first.session)
    assert counts(conn) == (1, 1, 1)


def test_an_instance_has_one_session(conn: Connection) -> None:
    open_(conn, opening())
    other = opening(app_session_id="lu:app_session:other", outbox_id="o-2")
    with pytest.raises(LineUpError) as caught:
        open_(conn, other)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENTS
    assert counts(conn) == (1, 1, 1)


def test_an_opened_row_that_cannot_be_written_leaves_no_session(conn: Connection) -> None:
    conn.execute(
        "INSERT INTO outbox (outbox_id, conversation_id, kind, body, created_at)"
        " VALUES ('opened:lu:app_session:td-1', 'conv-1', 'k', '{}', 0)"
    )
    with pytest.raises(LineUpError) as caught:
        open_(conn, opening())
    assert caught.value.code is ErrorCode.INVALID_ARGUMENTS
    assert counts(conn) == (0, 1, 0)


def test_closing_writes_the_closed_row_once(conn: Connection) -> None:
    open_(conn, opening())
    closed = close(conn, closing())
    assert closed.changed
    assert (closed.session.state, closed.session.closed_at) == ("closed", 2.0)
    assert [kind for _, kind in outbox_kinds(conn)] == [OPENED, CLOSED]
    again = close(conn, closing(outbox_id="another"), 3.0)
    assert (again.changed, again.session) == (False, closed.session)
    assert counts(conn) == (1, 2, 2)
    # A closed session is history: opening it again revives nothing.
    assert open_(conn, opening()).session.state == "closed"


def test_closing_an_unknown_session_is_refused(conn: Connection) -> None:
    with pytest.raises(LineUpError) as caught:
        close(conn, closing())
    assert caught.value.code is ErrorCode.INVALID_ARGUMENTS
    assert counts(conn) == (0, 0, 0)


def test_a_closed_row_that_cannot_be_written_leaves_the_session_open(conn: Connection) -> None:
    open_(conn, opening())
    with pytest.raises(LineUpError):
        close(conn, closing(outbox_id="opened:lu:app_session:td-1"))
    assert conn.execute("SELECT state FROM app_sessions").fetchall() == [("open",)]


def test_get_finds_a_session_by_id_or_instance(conn: Connection) -> None:
    made = open_(conn, opening()).session
    for request in (
        AppSessionGetRequest(app_session_id=made.app_session_id),
        AppSessionGetRequest(instance_id="td-1"),
    ):
        assert ops.app_session_get(conn, request, 1.0).session == made
    assert ops.app_session_get(conn, AppSessionGetRequest(instance_id="x"), 1.0).session is None
    keys: list[dict[str, Any]] = [{}, {"app_session_id": "a", "instance_id": "b"}]
    for fields in keys:
        with pytest.raises(pydantic.ValidationError):
            AppSessionGetRequest(**fields)


def test_the_list_holds_the_open_ones_then_the_newest_closed(conn: Connection) -> None:
    for i in range(4):
        open_(conn, opening(f"td-{i}"), float(i))
    close(conn, closing("td-0"), 10.0)
    close(conn, closing("td-2"), 11.0)

    def listed(**fields: Any) -> list[str]:
        reply = ops.app_session_list(conn, AppSessionListRequest(**fields), 20.0)
        return [s.instance_id for s in reply.sessions]

    assert listed() == ["td-1", "td-3", "td-2", "td-0"]
    assert listed(open_only=True) == ["td-1", "td-3"]
    assert listed(recent=1) == ["td-1", "td-3", "td-2"]


def test_the_wire_must_be_the_right_envelope() -> None:
    with pytest.raises(pydantic.ValidationError):
        opening(wire={"type": CLOSED})
    with pytest.raises(pydantic.ValidationError):
        closing(wire={"type": OPENED})


async def test_the_router_opens_and_closes_sessions_through_the_store(store: StoreHarness) -> None:
    opened = await store.ask(opening(), AppSessionOpenReply)
    assert opened.created
    got = await store.ask(AppSessionGetRequest(instance_id="td-1"), AppSessionGetReply)
    assert got.session == opened.session
    closed = await store.ask(closing(), AppSessionCloseReply)
    assert closed.changed
    assert await refusal(store, closing("td-9")) is ErrorCode.INVALID_ARGUMENTS
