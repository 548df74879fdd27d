"""The store actor through the real bus (`actors/store/_actor.py`; outbox, inbox, cursor and audit
operations)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
import trio
import trio.testing

from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.actors.store._migrations import LATEST_VERSION
from lineup.actors.store.messages import (
    AuditAppendReply,
    AuditAppendRequest,
    AuditQueryReply,
    AuditQueryRequest,
    AuditRecord,
    CursorGetReply,
    CursorGetRequest,
    CursorSetReply,
    CursorSetRequest,
    InboxAckReply,
    InboxAckRequest,
    InboxListReply,
    InboxListRequest,
    InboxPutReply,
    InboxPutRequest,
    OutboxAckReply,
    OutboxAckRequest,
    OutboxAppendReply,
    OutboxAppendRequest,
    OutboxPendingReply,
    OutboxPendingRequest,
    StoreStatsReply,
    StoreStatsRequest,
)
from lineup.tests.actors.store._harness import WAIT, StoreHarness, independent_rows, start_store

SECRET = "hunter2-do-not-persist"


class SecretRequest(Message):
    """Not a store message: the ACL refuses it before the store ever decodes it."""

    type: Literal["router.storetest.secret"] = "router.storetest.secret"
    secret: str


def append(outbox_id: str, text: str = "hi", kind: str = "lineup.v1.text") -> OutboxAppendRequest:
    return OutboxAppendRequest(
        outbox_id=outbox_id, conversation_id="conv-1", kind=kind, body={"markdown": text}
    )


def put(delivery_id: str, app_scope: str = "chat") -> InboxPutRequest:
    return InboxPutRequest(
        app_scope=app_scope, conversation_id="c-1", delivery_id=delivery_id, body={"n": delivery_id}
    )


# ---------------------------------------------------------------------------------- outbox


async def test_appending_the_same_outbox_id_twice_writes_one_row(store: StoreHarness) -> None:
    first = await store.ask(append("out-1"), OutboxAppendReply)
    again = await store.ask(append("out-1", text="retried"), OutboxAppendReply)

    assert (first.created, again.created) == (True, False)
    assert again.seq == first.seq
    rows = independent_rows(store.db_path, "SELECT outbox_id, body FROM outbox")
    assert rows == [("out-1", '{"markdown":"hi"}')]


async def test_pending_outbox_rows_come_in_seq_order_until_acknowledged(
    store: StoreHarness,
) -> None:
    for outbox_id in ("a", "b", "c"):
        await store.ask(append(outbox_id), OutboxAppendReply)
    await store.ask(OutboxAckRequest(outbox_id="b", remote_id="m-2"), OutboxAckReply)

    pending = await store.ask(OutboxPendingRequest(), OutboxPendingReply)

    assert [row.outbox_id for row in pending.rows] == ["a", "c"]
    assert [row.seq for row in pending.rows] == sorted(row.seq for row in pending.rows)
    assert pending.rows[0].body == {"markdown": "hi"}


async def test_pending_outbox_rows_page_by_limit_and_after_seq(store: StoreHarness) -> None:
    for i in range(5):
        await store.ask(append(f"o{i}"), OutboxAppendReply)

    first = await store.ask(OutboxPendingRequest(limit=2), OutboxPendingReply)
    rest = await store.ask(
        OutboxPendingRequest(limit=10, after_seq=first.rows[-1].seq), OutboxPendingReply
    )

    assert [row.outbox_id for row in (*first.rows, *rest.rows)] == [f"o{i}" for i in range(5)]


async def test_pending_rows_of_a_kind_named_ahead_come_first_each_group_in_seq_order(
    store: StoreHarness,
) -> None:
    inventory = "lineup.v1.client.inventory"
    for outbox_id, kind in (
        ("t1", "lineup.v1.text"),
        ("i1", inventory),
        ("t2", "lineup.v1.text"),
        ("i2", inventory),
    ):
        await store.ask(append(outbox_id, kind=kind), OutboxAppendReply)

    ahead = await store.ask(OutboxPendingRequest(ahead=(inventory,)), OutboxPendingReply)
    plain = await store.ask(OutboxPendingRequest(), OutboxPendingReply)
    first = await store.ask(OutboxPendingRequest(limit=1, ahead=(inventory,)), OutboxPendingReply)

    assert [row.outbox_id for row in ahead.rows] == ["i1", "i2", "t1", "t2"]
    assert [row.outbox_id for row in plain.rows] == ["t1", "i1", "t2", "i2"]
    assert [row.outbox_id for row in first.rows] == ["i1"]


async def test_acknowledging_an_outbox_row_twice_acknowledges_it_once(
    store: StoreHarness,
) -> None:
    await store.ask(append("out-1"), OutboxAppendReply)

    first = await store.ask(OutboxAckRequest(outbox_id="out-1", remote_id="m-1"), OutboxAckReply)
    again = await store.ask(OutboxAckRequest(outbox_id="out-1", remote_id="m-9"), OutboxAckReply)
    unknown = await store.ask(OutboxAckRequest(outbox_id="nope"), OutboxAckReply)

    assert (first.acked, again.acked, unknown.acked) == (True, False, False)
    rows = independent_rows(store.db_path, "SELECT remote_id FROM outbox")
    assert rows == [("m-1",)]  # the retry did not overwrite the first acknowledgement


# ---------------------------------------------------------------------------------- app inboxes


async def test_putting_the_same_delivery_twice_writes_one_row(store: StoreHarness) -> None:
    first = await store.ask(put("d-1"), InboxPutReply)
    again = await store.ask(put("d-1"), InboxPutReply)

    assert (first.created, again.created, again.seq) == (True, False, first.seq)
    listed = await store.ask(
        InboxListRequest(app_scope="chat", conversation_id="c-1", limit=10), InboxListReply
    )
    assert [row.delivery_id for row in listed.rows] == ["d-1"]


async def test_the_same_delivery_id_in_two_scopes_is_two_deliveries(store: StoreHarness) -> None:
    chat = await store.ask(put("d-1", "chat"), InboxPutReply)
    board = await store.ask(put("d-1", "whiteboard"), InboxPutReply)

    assert (chat.created, board.created) == (True, True)
    assert chat.seq != board.seq


async def test_acknowledging_a_delivery_removes_it_and_a_second_ack_reports_nothing_acked(
    store: StoreHarness,
) -> None:
    for delivery_id in ("d-1", "d-2"):
        await store.ask(put(delivery_id), InboxPutReply)

    first = await store.ask(
        InboxAckRequest(app_scope="chat", conversation_id="c-1", delivery_id="d-1"), InboxAckReply
    )
    again = await store.ask(
        InboxAckRequest(app_scope="chat", conversation_id="c-1", delivery_id="d-1"), InboxAckReply
    )
    listed = await store.ask(
        InboxListRequest(app_scope="chat", conversation_id="c-1", limit=10), InboxListReply
    )

    assert (first.acked, again.acked) == (True, False)
    assert [row.delivery_id for row in listed.rows] == ["d-2"]
    bodies = independent_rows(store.db_path, "SELECT body FROM app_inbox WHERE delivery_id='d-1'")
    assert bodies == [(None,)]  # the content is gone; only the id is remembered


async def test_a_delivery_put_again_after_its_ack_is_not_delivered_again(
    store: StoreHarness,
) -> None:
    first = await store.ask(put("d-1"), InboxPutReply)
    await store.ask(
        InboxAckRequest(app_scope="chat", conversation_id="c-1", delivery_id="d-1"), InboxAckReply
    )

    retried = await store.ask(put("d-1"), InboxPutReply)
    listed = await store.ask(
        InboxListRequest(app_scope="chat", conversation_id="c-1", limit=10), InboxListReply
    )

    assert (retried.created, retried.seq) == (False, first.seq)
    assert listed.rows == ()


async def test_acknowledging_another_scopes_delivery_acknowledges_nothing(
    store: StoreHarness,
) -> None:
    await store.ask(put("d-1", "chat"), InboxPutReply)

    foreign = await store.ask(
        InboxAckRequest(app_scope="whiteboard", conversation_id="c-1", delivery_id="d-1"),
        InboxAckReply,
    )
    listed = await store.ask(
        InboxListRequest(app_scope="chat", conversation_id="c-1", limit=10), InboxListReply
    )

    assert foreign.acked is False
    assert foreign.foreign is True  # for the router's audit; the app is told only "unchanged"
    assert [row.delivery_id for row in listed.rows] == ["d-1"]


async def test_an_unknown_or_already_acknowledged_delivery_is_not_called_foreign(
    store: StoreHarness,
) -> None:
    await store.ask(put("d-1", "chat"), InboxPutReply)
    first = await store.ask(
        InboxAckRequest(app_scope="chat", conversation_id="c-1", delivery_id="d-1"), InboxAckReply
    )
    again = await store.ask(
        InboxAckRequest(app_scope="chat", conversation_id="c-1", delivery_id="d-1"), InboxAckReply
    )
    unknown = await store.ask(
        InboxAckRequest(app_scope="chat", conversation_id="c-1", delivery_id="d-9"), InboxAckReply
    )

    assert (first.acked, first.foreign) == (True, False)
    assert (again.acked, again.foreign) == (False, False)
    assert (unknown.acked, unknown.foreign) == (False, False)


def put_in(delivery_id: str, conversation_id: str, instance_id: str | None) -> InboxPutRequest:
    return InboxPutRequest(
        app_scope="board",
        conversation_id=conversation_id,
        instance_id=instance_id,
        delivery_id=delivery_id,
        body={"n": delivery_id},
    )


async def listed_ids(
    store: StoreHarness, conversation_id: str, instance_id: str | None
) -> list[str]:
    listed = await store.ask(
        InboxListRequest(
            app_scope="board", conversation_id=conversation_id, instance_id=instance_id
        ),
        InboxListReply,
    )
    return [row.delivery_id for row in listed.rows]


async def test_an_inbox_is_one_scope_conversation_and_instance_and_lists_nothing_of_another(
    store: StoreHarness,
) -> None:
    for request in (
        put_in("to-a", "c-1", "inst-a"),
        put_in("to-b", "c-1", "inst-b"),
        put_in("to-app", "c-1", None),
        put_in("elsewhere", "c-2", "inst-a"),
    ):
        await store.ask(request, InboxPutReply)

    assert await listed_ids(store, "c-1", "inst-a") == ["to-a"]
    assert await listed_ids(store, "c-1", "inst-b") == ["to-b"]
    # Naming no instance is the conversation-level inbox, not every instance's deliveries.
    assert await listed_ids(store, "c-1", None) == ["to-app"]
    assert await listed_ids(store, "c-2", "inst-a") == ["elsewhere"]
    assert await listed_ids(store, "c-2", None) == []


async def test_a_delivery_is_acknowledged_only_from_its_own_conversation_and_instance(
    store: StoreHarness,
) -> None:
    await store.ask(put_in("to-a", "c-1", "inst-a"), InboxPutReply)

    def ack(conversation_id: str, instance_id: str | None) -> InboxAckRequest:
        return InboxAckRequest(
            app_scope="board",
            conversation_id=conversation_id,
            instance_id=instance_id,
            delivery_id="to-a",
        )

    other_instance = await store.ask(ack("c-1", "inst-b"), InboxAckReply)
    no_instance = await store.ask(ack("c-1", None), InboxAckReply)
    other_conversation = await store.ask(ack("c-2", "inst-a"), InboxAckReply)
    assert await listed_ids(store, "c-1", "inst-a") == ["to-a"]
    own = await store.ask(ack("c-1", "inst-a"), InboxAckReply)

    for refused in (other_instance, no_instance, other_conversation):
        assert (refused.acked, refused.foreign) == (False, True)
    assert (own.acked, own.foreign) == (True, False)
    assert await listed_ids(store, "c-1", "inst-a") == []


# ---------------------------------------------------------------------------------- cursors


async def test_a_cursor_reads_back_its_last_value_and_none_before_it_is_set(
    store: StoreHarness,
) -> None:
    unset = await store.ask(CursorGetRequest(name="sync"), CursorGetReply)
    for value in ("c1", "c2", "c2"):
        await store.ask(CursorSetRequest(name="sync", value=value), CursorSetReply)
    current = await store.ask(CursorGetRequest(name="sync"), CursorGetReply)

    assert (unset.value, current.value) == (None, "c2")
    assert independent_rows(store.db_path, "SELECT name, value FROM cursors") == [("sync", "c2")]


# ---------------------------------------------------------------------------------- audit


async def test_an_audit_batch_sent_twice_is_written_once_under_the_senders_name(
    store: StoreHarness,
) -> None:
    record = AuditRecord(event="router.rejected", actor="forged", code="tool_input_invalid",
                         subject_id="call-1", at=1000.0)  # fmt: skip
    request = AuditAppendRequest(records=(record,))

    first = await store.ask(request, AuditAppendReply)
    again = await store.ask(request, AuditAppendReply)
    found = await store.ask(AuditQueryRequest(event_prefix="router."), AuditQueryReply)

    assert (first.count, again.count) == (1, 1)
    assert [(r.actor, r.code, r.subject_id) for r in found.records] == [
        ("router", "tool_input_invalid", "call-1")
    ]


async def test_audit_queries_filter_by_event_prefix_and_peer_and_list_newest_last(
    store: StoreHarness,
) -> None:
    records = tuple(
        AuditRecord(event=event, actor="router", peer=peer, at=float(at))
        for at, (event, peer) in enumerate(
            [("bus.acl_denied", "miniapp:a"), ("bus.acl_denied", "miniapp:b"),
             ("router.rejected", "miniapp:a"), ("bus.frame_malformed", "miniapp:a")],
            start=1,
        )
    )  # fmt: skip
    await store.ask(AuditAppendRequest(records=records), AuditAppendReply)

    bus_a = await store.ask(
        AuditQueryRequest(event_prefix="bus.", peer="miniapp:a"), AuditQueryReply
    )
    newest_two = await store.ask(AuditQueryRequest(limit=2), AuditQueryReply)

    assert [r.event for r in bus_a.records] == ["bus.acl_denied", "bus.frame_malformed"]
    assert [r.at for r in newest_two.records] == [3.0, 4.0]


async def test_a_refused_request_is_audited_without_its_body(store: StoreHarness) -> None:
    with pytest.raises(LineUpError) as caught, trio.fail_after(WAIT):
        await store.router.request("store", SecretRequest(secret=SECRET), expect=Message)
    assert caught.value.code is ErrorCode.ACL_DENIED

    # The refusal queued its audit row before answering; once every task is idle, the row's
    # write is ahead of our query in the committer's queue.
    await trio.testing.wait_all_tasks_blocked()
    found = await store.ask(AuditQueryRequest(event_prefix="bus."), AuditQueryReply)

    assert [(r.event, r.actor, r.peer, r.code, r.message_type) for r in found.records] == [
        ("bus.acl_denied", "store", "router", "acl_denied", "router.storetest.secret")
    ]
    for row in independent_rows(store.db_path, "SELECT * FROM audit"):
        assert not any(SECRET in str(value) for value in row)
    for path in store.data_dir.iterdir():
        assert SECRET.encode() not in path.read_bytes()


# ---------------------------------------------------------------------------------- commits


async def test_concurrent_requests_are_committed_in_fewer_transactions_than_requests(
    store: StoreHarness,
) -> None:
    requests = 200
    replies: list[OutboxAppendReply] = []

    async def one(i: int) -> None:
        replies.append(await store.ask(append(f"o{i}"), OutboxAppendReply))

    async with trio.open_nursery() as nursery:
        for i in range(requests):
            nursery.start_soon(one, i)
    stats = await store.ask(StoreStatsRequest(), StoreStatsReply)

    assert len({reply.seq for reply in replies}) == requests
    assert stats.writes == requests
    assert stats.ops == requests  # the stats request itself is not an operation
    assert stats.commits < requests
    assert stats.max_batch > 1


async def test_every_reply_arrives_after_its_row_is_visible_to_another_connection(
    store: StoreHarness,
) -> None:
    seen_on_reply: list[bool] = []

    async def one(i: int) -> None:
        reply = await store.ask(append(f"o{i}"), OutboxAppendReply)
        rows = independent_rows(store.db_path, f"SELECT 1 FROM outbox WHERE seq = {reply.seq}")
        seen_on_reply.append(rows == [(1,)])

    async with trio.open_nursery() as nursery:
        for i in range(50):
            nursery.start_soon(one, i)

    assert seen_on_reply == [True] * 50


async def test_reopening_the_database_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    async with trio.open_nursery() as nursery:
        store = await start_store(nursery, data_dir)
        await store.ask(append("out-1"), OutboxAppendReply)
        await store.ask(put("d-1"), InboxPutReply)
        await store.ask(CursorSetRequest(name="sync", value="c7"), CursorSetReply)
        nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        store = await start_store(nursery, data_dir)
        pending = await store.ask(OutboxPendingRequest(), OutboxPendingReply)
        inbox = await store.ask(
            InboxListRequest(app_scope="chat", conversation_id="c-1"), InboxListReply
        )
        cursor = await store.ask(CursorGetRequest(name="sync"), CursorGetReply)
        retried = await store.ask(append("out-1"), OutboxAppendReply)
        nursery.cancel_scope.cancel()

    assert [row.outbox_id for row in pending.rows] == ["out-1"]
    assert [row.delivery_id for row in inbox.rows] == ["d-1"]
    assert cursor.value == "c7"
    assert retried.created is False


async def test_stats_report_the_schema_version_and_the_configured_durability(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    store = await start_store(nursery, tmp_path / "data", {"sqlite_synchronous": "full"})
    await store.ask(CursorSetRequest(name="sync", value="c1"), CursorSetReply)

    stats = await store.ask(StoreStatsRequest(), StoreStatsReply)

    assert (stats.schema_version, stats.synchronous) == (LATEST_VERSION, "full")
    assert (stats.commits, stats.writes) == (1, 1)
