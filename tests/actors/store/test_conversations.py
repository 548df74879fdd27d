"""The store's conversation protocol (`actors/store/conversations/`): agent messages in, user
messages out, and the outbox states in between.

Most tests go through the real bus (see `_harness`). The atomicity tests run the operations on
the committer directly, with a TEMP trigger that makes one statement fail in the middle of a
request: SQLite itself refuses, nothing is mocked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
import trio
import trio.testing

from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.actors.store._committer import Committer
from lineup.actors.store._db import Connection
from lineup.actors.store.conversations import operations as c
from lineup.actors.store.messages import (
    AuditQueryReply,
    AuditQueryRequest,
    ConversationHistoryReply,
    ConversationHistoryRequest,
    ConversationMessageReply,
    ConversationMessageRequest,
    ConversationReceiveManyReply,
    ConversationReceiveManyRequest,
    ConversationReceiveReply,
    ConversationReceiveRequest,
    ConversationSendReply,
    ConversationSendRequest,
    InboxAckManyReply,
    InboxAckManyRequest,
    InboxAckReply,
    InboxAckRequest,
    InboxListReply,
    InboxListRequest,
    InboxPutReply,
    InboxPutRequest,
    MessageRow,
    OutboxAckReply,
    OutboxAckRequest,
    OutboxAppendReply,
    OutboxAppendRequest,
    OutboxFailReply,
    OutboxFailRequest,
    OutboxPendingReply,
    OutboxPendingRequest,
    OutboxRetryReply,
    OutboxRetryRequest,
    StoreStatsReply,
    StoreStatsRequest,
)
from lineup.actors.store.outbox import operations as o
from lineup.tests.actors.store._harness import (
    WAIT,
    StoreHarness,
    independent_rows,
    start_store,
)

SECRET = "hunter2-message-text"
TEXT = "lineup.v1.text"

T = TypeVar("T")


def receive(
    message_id: str, *, conversation_id: str = "conv-1", app_scope: str = "chat", text: str = "hi"
) -> ConversationReceiveRequest:
    return ConversationReceiveRequest(
        message_id=message_id,
        conversation_id=conversation_id,
        app_scope=app_scope,
        kind=TEXT,
        body={"markdown": text},
        sender_kind="agent",
        sender_id="agent-1",
        remote_seq=7,
    )


def send(
    message_id: str, *, conversation_id: str = "conv-1", app_scope: str = "chat", text: str = "hi"
) -> ConversationSendRequest:
    return ConversationSendRequest(
        message_id=message_id,
        conversation_id=conversation_id,
        app_scope=app_scope,
        kind=TEXT,
        body={"markdown": text},
        wire={"v": 1, "id": message_id, "type": TEXT, "payload": {"markdown": text}},
        sender_kind="user",
        sender_id="user-1",
    )


async def message(store: StoreHarness, message_id: str) -> MessageRow:
    return (await store.ask(ConversationMessageRequest(message_id=message_id),
                            ConversationMessageReply)).row  # fmt: skip


async def pending_ids(store: StoreHarness) -> list[str]:
    return [row.outbox_id for row in (await store.ask(OutboxPendingRequest(),
                                                      OutboxPendingReply)).rows]  # fmt: skip


async def inbox_ids(store: StoreHarness, app_scope: str = "chat") -> list[str]:
    listed = await store.ask(
        InboxListRequest(app_scope=app_scope, conversation_id="conv-1"), InboxListReply
    )
    return [row.delivery_id for row in listed.rows]


async def refusal(store: StoreHarness, request: Message) -> ErrorCode:
    with pytest.raises(LineUpError) as caught:
        await store.ask(request, Message)
    return caught.value.code


def count(store: StoreHarness, table: str) -> object:
    return independent_rows(store.db_path, f"SELECT count(*) FROM {table}")[0][0]


# ---------------------------------------------------------------------------------- receive


async def test_a_received_message_is_recorded_and_its_body_delivered_to_the_apps_inbox(
    store: StoreHarness,
) -> None:
    reply = await store.ask(receive("m-1", app_scope="whiteboard"), ConversationReceiveReply)

    assert (reply.message_id, reply.created) == ("m-1", True)
    listed = await store.ask(
        InboxListRequest(app_scope="whiteboard", conversation_id="conv-1"), InboxListReply
    )
    assert [(row.delivery_id, row.body) for row in listed.rows] == [("m-1", {"markdown": "hi"})]
    row = await message(store, "m-1")
    assert (row.seq, row.conversation_id, row.direction, row.kind, row.app_scope, row.state) == (
        reply.seq, "conv-1", "inbound", TEXT, "whiteboard", "received",
    )  # fmt: skip
    assert (row.sender_kind, row.sender_id, row.remote_seq) == ("agent", "agent-1", 7)
    assert independent_rows(store.db_path, "SELECT conversation_id FROM conversations") == [
        ("conv-1",)
    ]


async def test_a_delivery_names_its_inbox_seq_and_its_messages_conversation_seq_apart(
    store: StoreHarness,
) -> None:
    # The two orders differ as soon as the chat sends one of its own, or another app receives
    # one: an app pages its inbox by the one and orders its history by the other.
    await store.ask(send("u-1"), ConversationSendReply)
    await store.ask(receive("m-0", app_scope="board"), ConversationReceiveReply)
    got = await store.ask(receive("m-1"), ConversationReceiveReply)
    put = await store.ask(
        InboxPutRequest(app_scope="chat", conversation_id="conv-1", delivery_id="d-2", body={}),
        InboxPutReply,
    )

    listed = await store.ask(
        InboxListRequest(app_scope="chat", conversation_id="conv-1"), InboxListReply
    )

    assert got.seq is not None and got.delivery_seq is not None
    assert got.seq != got.delivery_seq  # the messages' seq counts the others' messages too
    assert [(r.delivery_id, r.seq, r.message_seq) for r in listed.rows] == [
        ("m-1", got.delivery_seq, got.seq),
        ("d-2", put.seq, None),  # no message: a tool call's, say
    ]
    assert (await message(store, "m-1")).seq == got.seq


async def test_a_received_message_for_an_instance_is_in_that_instances_inbox_only(
    store: StoreHarness,
) -> None:
    request = receive("m-1", app_scope="board").model_copy(update={"instance_id": "inst-a"})
    await store.ask(request, ConversationReceiveReply)
    await store.ask(receive("m-2", app_scope="board"), ConversationReceiveReply)

    def listing(instance_id: str | None) -> InboxListRequest:
        return InboxListRequest(
            app_scope="board", conversation_id="conv-1", instance_id=instance_id
        )

    own = await store.ask(listing("inst-a"), InboxListReply)
    other = await store.ask(listing("inst-b"), InboxListReply)
    app_level = await store.ask(listing(None), InboxListReply)

    assert [(r.delivery_id, r.conversation_id, r.instance_id) for r in own.rows] == [
        ("m-1", "conv-1", "inst-a")
    ]
    assert other.rows == ()
    assert [r.delivery_id for r in app_level.rows] == ["m-2"]


async def test_receiving_the_same_message_twice_records_and_delivers_it_once(
    store: StoreHarness,
) -> None:
    first = await store.ask(receive("m-1"), ConversationReceiveReply)
    again = await store.ask(receive("m-1", text="retried"), ConversationReceiveReply)

    assert (first.created, again.created, again.seq) == (True, False, first.seq)
    assert await inbox_ids(store) == ["m-1"]
    assert (count(store, "messages"), count(store, "app_inbox")) == (1, 1)
    assert (await message(store, "m-1")).body == {"markdown": "hi"}


async def test_a_receive_repeated_after_its_delivery_was_acknowledged_is_not_delivered_again(
    store: StoreHarness,
) -> None:
    first = await store.ask(receive("m-1"), ConversationReceiveReply)
    await store.ask(
        InboxAckRequest(app_scope="chat", conversation_id="conv-1", delivery_id="m-1"),
        InboxAckReply,
    )

    again = await store.ask(receive("m-1"), ConversationReceiveReply)

    assert (again.created, again.seq) == (False, first.seq)
    assert await inbox_ids(store) == []


async def test_a_receive_repeated_after_a_restart_is_not_delivered_again(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    async with trio.open_nursery() as nursery:
        store = await start_store(nursery, data_dir)
        first = await store.ask(receive("m-1"), ConversationReceiveReply)
        await store.ask(
            InboxAckRequest(app_scope="chat", conversation_id="conv-1", delivery_id="m-1"),
            InboxAckReply,
        )
        nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        store = await start_store(nursery, data_dir)
        again = await store.ask(receive("m-1"), ConversationReceiveReply)
        inbox = await inbox_ids(store)
        nursery.cancel_scope.cancel()

    assert (again.created, again.seq) == (False, first.seq)
    assert inbox == []


async def test_a_receive_whose_delivery_id_is_taken_is_refused_and_records_nothing(
    store: StoreHarness,
) -> None:
    await store.ask(
        InboxPutRequest(app_scope="chat", conversation_id="conv-1", delivery_id="m-1", body={}),
        InboxPutReply,
    )

    assert await refusal(store, receive("m-1")) is ErrorCode.MESSAGE_ID_CONFLICT
    assert (count(store, "messages"), count(store, "conversations")) == (0, 0)


async def test_a_message_id_already_used_in_the_other_direction_is_a_conflict(
    store: StoreHarness,
) -> None:
    await store.ask(send("out-1"), ConversationSendReply)
    await store.ask(receive("in-1"), ConversationReceiveReply)

    assert await refusal(store, receive("out-1")) is ErrorCode.MESSAGE_ID_CONFLICT
    assert await refusal(store, send("in-1")) is ErrorCode.MESSAGE_ID_CONFLICT
    assert await pending_ids(store) == ["out-1"]
    assert await inbox_ids(store) == ["in-1"]


async def test_a_page_of_messages_is_received_in_order_in_one_commit(
    store: StoreHarness,
) -> None:
    before = (await store.ask(StoreStatsRequest(), StoreStatsReply)).commits

    reply = await store.ask(
        ConversationReceiveManyRequest(messages=tuple(receive(f"m-{i}") for i in range(5))),
        ConversationReceiveManyReply,
    )

    after = (await store.ask(StoreStatsRequest(), StoreStatsReply)).commits
    assert [(r.message_id, r.created) for r in reply.replies] == [
        (f"m-{i}", True) for i in range(5)
    ]
    seqs = [r.seq or 0 for r in reply.replies]
    assert seqs == sorted(seqs) and len(set(seqs)) == 5 and 0 not in seqs
    assert await inbox_ids(store) == [f"m-{i}" for i in range(5)]
    assert after - before == 1


async def test_a_page_repeating_a_message_records_and_delivers_it_once(
    store: StoreHarness,
) -> None:
    first = await store.ask(receive("m-1"), ConversationReceiveReply)

    reply = await store.ask(
        ConversationReceiveManyRequest(messages=(receive("m-1"), receive("m-2"), receive("m-2"))),
        ConversationReceiveManyReply,
    )

    assert [(r.message_id, r.created) for r in reply.replies] == [
        ("m-1", False), ("m-2", True), ("m-2", False),
    ]  # fmt: skip
    assert reply.replies[0].seq == first.seq
    assert reply.replies[1].seq == reply.replies[2].seq
    assert await inbox_ids(store) == ["m-1", "m-2"]
    assert (count(store, "messages"), count(store, "app_inbox")) == (2, 2)


async def test_a_page_with_one_conflicting_message_skips_it_and_keeps_the_others(
    store: StoreHarness,
) -> None:
    await store.ask(send("out-1"), ConversationSendReply)
    await store.ask(
        InboxPutRequest(app_scope="chat", conversation_id="conv-1", delivery_id="put-1", body={}),
        InboxPutReply,
    )

    page = ConversationReceiveManyRequest(
        messages=(receive("in-1"), receive("out-1"), receive("put-1"), receive("in-2"))
    )
    reply = await store.ask(page, ConversationReceiveManyReply)

    assert [(r.message_id, r.created, r.refused) for r in reply.replies] == [
        ("in-1", True, None),
        ("out-1", False, "message_id_conflict"),
        ("put-1", False, "message_id_conflict"),
        ("in-2", True, None),
    ]
    assert [r.seq is None for r in reply.replies] == [False, True, True, False]
    assert await inbox_ids(store) == ["put-1", "in-1", "in-2"]
    assert count(store, "messages") == 3  # the outbound one and the two received
    assert (await message(store, "out-1")).direction == "outbound"


async def test_a_burst_of_deliveries_is_acknowledged_in_one_commit(store: StoreHarness) -> None:
    await store.ask(
        ConversationReceiveManyRequest(messages=tuple(receive(f"m-{i}") for i in range(5))),
        ConversationReceiveManyReply,
    )
    before = (await store.ask(StoreStatsRequest(), StoreStatsReply)).commits

    reply = await store.ask(
        InboxAckManyRequest(
            app_scope="chat",
            conversation_id="conv-1",
            delivery_ids=("m-0", "m-1", "m-1", "m-2", "m-3", "never"),
        ),
        InboxAckManyReply,
    )

    after = (await store.ask(StoreStatsRequest(), StoreStatsReply)).commits
    assert reply.acked == ("m-0", "m-1", "m-2", "m-3")  # the repeat and the unknown: not acked
    assert reply.foreign == ()
    assert await inbox_ids(store) == ["m-4"]
    assert after - before == 1


async def test_acknowledging_many_leaves_other_inboxes_alone_and_names_them_foreign(
    store: StoreHarness,
) -> None:
    await store.ask(receive("mine"), ConversationReceiveReply)
    await store.ask(receive("theirs", app_scope="other"), ConversationReceiveReply)
    await store.ask(receive("elsewhere", conversation_id="conv-2"), ConversationReceiveReply)

    reply = await store.ask(
        InboxAckManyRequest(
            app_scope="chat", conversation_id="conv-1", delivery_ids=("mine", "theirs", "elsewhere")
        ),
        InboxAckManyReply,
    )

    assert reply.acked == ("mine",)
    assert reply.foreign == ("theirs", "elsewhere")
    assert await inbox_ids(store) == []  # conv-1's chat inbox
    others = await store.ask(
        InboxListRequest(app_scope="other", conversation_id="conv-1"), InboxListReply
    )
    assert [row.delivery_id for row in others.rows] == ["theirs"]


# ---------------------------------------------------------------------------------- send


async def test_a_sent_message_is_recorded_pending_and_its_wire_envelope_queued(
    store: StoreHarness,
) -> None:
    reply = await store.ask(send("m-1"), ConversationSendReply)

    assert (reply.message_id, reply.created) == ("m-1", True)
    pending = await store.ask(OutboxPendingRequest(), OutboxPendingReply)
    assert [(row.outbox_id, row.conversation_id, row.kind) for row in pending.rows] == [
        ("m-1", "conv-1", TEXT)
    ]
    assert pending.rows[0].body == send("m-1").wire
    row = await message(store, "m-1")
    assert (row.seq, row.direction, row.state, row.body) == (
        reply.seq, "outbound", "pending", {"markdown": "hi"},
    )  # fmt: skip
    assert (row.sender_kind, row.sender_id, row.failed_code) == ("user", "user-1", None)


def send_as(client_id: str, message_id: str, app_scope: str = "chat") -> ConversationSendRequest:
    return send(message_id, app_scope=app_scope).model_copy(update={"client_id": client_id})


async def test_a_send_repeated_by_its_client_id_names_the_first_message_and_queues_nothing(
    store: StoreHarness,
) -> None:
    first = await store.ask(send_as("c-1", "lu:msg:1"), ConversationSendReply)
    again = await store.ask(send_as("c-1", "lu:msg:2"), ConversationSendReply)

    assert (again.message_id, again.seq, again.created) == ("lu:msg:1", first.seq, False)
    assert await pending_ids(store) == ["lu:msg:1"]
    row = (await store.ask(
        ConversationMessageRequest(message_id="c-1", app_scope="chat"), ConversationMessageReply
    )).row  # fmt: skip
    assert (row.message_id, row.client_id) == ("lu:msg:1", "c-1")


async def test_a_client_id_names_a_message_in_its_own_app_only(store: StoreHarness) -> None:
    await store.ask(send_as("c-1", "lu:msg:1", app_scope="chat"), ConversationSendReply)

    other = await store.ask(send_as("c-1", "lu:msg:2", app_scope="board"), ConversationSendReply)

    assert (other.message_id, other.created) == ("lu:msg:2", True)
    assert await pending_ids(store) == ["lu:msg:1", "lu:msg:2"]
    lookup = ConversationMessageRequest(message_id="c-1", app_scope="nobody")
    assert await refusal(store, lookup) is ErrorCode.INVALID_ARGUMENTS


async def test_sending_the_same_message_twice_records_and_queues_it_once(
    store: StoreHarness,
) -> None:
    first = await store.ask(send("m-1"), ConversationSendReply)
    again = await store.ask(send("m-1", text="retried"), ConversationSendReply)

    assert (first.created, again.created, again.seq) == (True, False, first.seq)
    assert await pending_ids(store) == ["m-1"]
    assert (count(store, "messages"), count(store, "outbox")) == (1, 1)


async def test_a_send_whose_outbox_id_is_taken_is_refused_and_records_nothing(
    store: StoreHarness,
) -> None:
    taken = OutboxAppendRequest(outbox_id="m-1", conversation_id="conv-1", kind=TEXT, body={})
    await store.ask(taken, OutboxAppendReply)

    assert await refusal(store, send("m-1")) is ErrorCode.MESSAGE_ID_CONFLICT
    assert (count(store, "messages"), count(store, "conversations")) == (0, 0)


async def test_a_resent_message_that_already_failed_is_not_queued_again(
    store: StoreHarness,
) -> None:
    await store.ask(send("m-1"), ConversationSendReply)
    await store.ask(OutboxFailRequest(outbox_id="m-1", code="http_413"), OutboxFailReply)

    again = await store.ask(send("m-1"), ConversationSendReply)

    assert again.created is False
    assert await pending_ids(store) == []
    assert (await message(store, "m-1")).state == "failed"


# ---------------------------------------------------------------------------------- outbox states


async def test_acknowledging_a_messages_outbox_row_marks_the_message_sent_with_its_remote_seq(
    store: StoreHarness,
) -> None:
    await store.ask(send("m-1"), ConversationSendReply)

    reply = await store.ask(
        OutboxAckRequest(outbox_id="m-1", remote_id="r-1", remote_seq=41), OutboxAckReply
    )

    assert (reply.acked, reply.message_id) == (True, "m-1")
    row = await message(store, "m-1")
    assert (row.state, row.remote_seq) == ("sent", 41)
    assert await pending_ids(store) == []
    assert independent_rows(store.db_path, "SELECT state, remote_id FROM outbox") == [
        ("sent", "r-1")
    ]


async def test_an_ack_or_a_fail_names_the_app_that_sent_the_message_and_its_id_for_it(
    store: StoreHarness,
) -> None:
    """So the router tells that app of the new state without reading the message again."""
    await store.ask(send_as("c-1", "lu:msg:1", app_scope="board"), ConversationSendReply)
    await store.ask(send("lu:msg:2"), ConversationSendReply)  # no client id: its own id

    acked = await store.ask(OutboxAckRequest(outbox_id="lu:msg:1"), OutboxAckReply)
    again = await store.ask(OutboxAckRequest(outbox_id="lu:msg:1"), OutboxAckReply)
    failed = await store.ask(OutboxFailRequest(outbox_id="lu:msg:2", code="x"), OutboxFailReply)

    named = [(r.message_id, r.app_scope, r.client_id) for r in (acked, again, failed)]
    assert named == [
        ("lu:msg:1", "board", "c-1"),
        ("lu:msg:1", "board", "c-1"),
        ("lu:msg:2", "chat", None),
    ]
    appended = OutboxAppendRequest(outbox_id="o-1", conversation_id="conv-1", kind=TEXT, body={})
    await store.ask(appended, OutboxAppendReply)
    bare = await store.ask(OutboxAckRequest(outbox_id="o-1"), OutboxAckReply)
    assert (bare.message_id, bare.app_scope, bare.client_id) == (None, None, None)


async def test_acknowledging_twice_keeps_the_first_acknowledgement(store: StoreHarness) -> None:
    await store.ask(send("m-1"), ConversationSendReply)

    first = await store.ask(OutboxAckRequest(outbox_id="m-1", remote_seq=41), OutboxAckReply)
    again = await store.ask(OutboxAckRequest(outbox_id="m-1", remote_seq=99), OutboxAckReply)

    assert (first.acked, again.acked, again.message_id) == (True, False, "m-1")
    assert (await message(store, "m-1")).remote_seq == 41


async def test_failing_an_outbox_row_marks_its_message_failed_and_takes_it_out_of_pending(
    store: StoreHarness,
) -> None:
    for message_id in ("m-1", "m-2"):
        await store.ask(send(message_id), ConversationSendReply)

    reply = await store.ask(OutboxFailRequest(outbox_id="m-1", code="http_413"), OutboxFailReply)

    assert (reply.message_id, reply.changed, reply.state) == ("m-1", True, "failed")
    assert await pending_ids(store) == ["m-2"]
    row = await message(store, "m-1")
    assert (row.state, row.failed_code) == ("failed", "http_413")


async def test_failing_a_failed_row_again_changes_nothing_and_keeps_the_first_code(
    store: StoreHarness,
) -> None:
    await store.ask(send("m-1"), ConversationSendReply)
    await store.ask(OutboxFailRequest(outbox_id="m-1", code="http_413"), OutboxFailReply)

    again = await store.ask(OutboxFailRequest(outbox_id="m-1", code="other"), OutboxFailReply)

    assert (again.changed, again.state) == (False, "failed")
    assert (await message(store, "m-1")).failed_code == "http_413"


async def test_retrying_a_failed_row_makes_it_and_its_message_pending_again(
    store: StoreHarness,
) -> None:
    sent = await store.ask(send("m-1"), ConversationSendReply)
    await store.ask(OutboxFailRequest(outbox_id="m-1", code="http_413"), OutboxFailReply)

    retried = await store.ask(OutboxRetryRequest(outbox_id="m-1"), OutboxRetryReply)
    again = await store.ask(OutboxRetryRequest(outbox_id="m-1"), OutboxRetryReply)

    assert (retried.message_id, retried.changed, retried.state) == ("m-1", True, "pending")
    assert (again.changed, again.state) == (False, "pending")
    assert await pending_ids(store) == ["m-1"]
    row = await message(store, "m-1")
    assert (row.seq, row.state, row.failed_code) == (sent.seq, "pending", None)


async def test_a_failed_row_acknowledged_after_all_marks_its_message_sent(
    store: StoreHarness,
) -> None:
    await store.ask(send("m-1"), ConversationSendReply)
    await store.ask(OutboxFailRequest(outbox_id="m-1", code="timeout"), OutboxFailReply)

    reply = await store.ask(OutboxAckRequest(outbox_id="m-1"), OutboxAckReply)

    assert reply.acked is True
    row = await message(store, "m-1")
    assert (row.state, row.failed_code) == ("sent", None)


@pytest.mark.parametrize("make", [
    lambda: OutboxFailRequest(outbox_id="m-1", code="late"),
    lambda: OutboxRetryRequest(outbox_id="m-1"),
    lambda: OutboxFailRequest(outbox_id="unknown", code="x"),
    lambda: OutboxRetryRequest(outbox_id="unknown"),
])  # fmt: skip
async def test_failing_or_retrying_a_sent_or_unknown_row_is_refused_and_changes_nothing(
    store: StoreHarness, make: Callable[[], Message]
) -> None:
    await store.ask(send("m-1"), ConversationSendReply)
    await store.ask(OutboxAckRequest(outbox_id="m-1"), OutboxAckReply)

    assert await refusal(store, make()) is ErrorCode.INVALID_ARGUMENTS
    assert (await message(store, "m-1")).state == "sent"
    assert await pending_ids(store) == []


async def test_an_outbox_row_appended_without_a_message_fails_and_retries_on_its_own(
    store: StoreHarness,
) -> None:
    await store.ask(
        OutboxAppendRequest(outbox_id="o-1", conversation_id="conv-1", kind=TEXT, body={}),
        OutboxAppendReply,
    )

    failed = await store.ask(OutboxFailRequest(outbox_id="o-1", code="x"), OutboxFailReply)
    pending_after_fail = await pending_ids(store)
    retried = await store.ask(OutboxRetryRequest(outbox_id="o-1"), OutboxRetryReply)

    assert (failed.message_id, failed.changed, pending_after_fail) == (None, True, [])
    assert (retried.message_id, retried.changed) == (None, True)
    assert await pending_ids(store) == ["o-1"]


# ---------------------------------------------------------------------------------- history


async def test_history_lists_a_conversations_messages_of_both_directions_in_seq_order(
    store: StoreHarness,
) -> None:
    await store.ask(receive("a-1"), ConversationReceiveReply)
    await store.ask(send("u-1"), ConversationSendReply)
    await store.ask(receive("other", conversation_id="conv-2"), ConversationReceiveReply)
    await store.ask(receive("a-2"), ConversationReceiveReply)
    await store.ask(OutboxAckRequest(outbox_id="u-1"), OutboxAckReply)

    history = await store.ask(
        ConversationHistoryRequest(conversation_id="conv-1"), ConversationHistoryReply
    )

    assert [(row.message_id, row.direction, row.state) for row in history.rows] == [
        ("a-1", "inbound", "received"), ("u-1", "outbound", "sent"),
        ("a-2", "inbound", "received"),
    ]  # fmt: skip
    seqs = [row.seq for row in history.rows]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == 3


async def test_history_pages_by_limit_and_after_seq(store: StoreHarness) -> None:
    for i in range(5):
        await store.ask(receive(f"m{i}"), ConversationReceiveReply)

    first = await store.ask(
        ConversationHistoryRequest(conversation_id="conv-1", limit=2), ConversationHistoryReply
    )
    rest = await store.ask(
        ConversationHistoryRequest(conversation_id="conv-1", after_seq=first.rows[-1].seq),
        ConversationHistoryReply,
    )

    assert [row.message_id for row in first.rows] == ["m0", "m1"]
    assert [row.message_id for row in rest.rows] == ["m2", "m3", "m4"]


async def test_history_stops_at_the_reply_byte_budget_and_pages_on(store: StoreHarness) -> None:
    big = "x" * (200 * 1024)
    for i in range(4):
        await store.ask(receive(f"m{i}", text=big), ConversationReceiveReply)

    seen: list[str] = []
    pages = 0
    after = 0
    while True:
        page = await store.ask(
            ConversationHistoryRequest(conversation_id="conv-1", after_seq=after),
            ConversationHistoryReply,
        )
        if not page.rows:
            break
        pages += 1
        seen += [row.message_id for row in page.rows]
        after = page.rows[-1].seq

    assert seen == ["m0", "m1", "m2", "m3"]
    assert pages > 1


async def test_history_of_an_unknown_conversation_is_empty(store: StoreHarness) -> None:
    history = await store.ask(
        ConversationHistoryRequest(conversation_id="nobody"), ConversationHistoryReply
    )
    assert history.rows == ()


async def test_asking_for_an_unknown_message_is_refused_with_invalid_arguments(
    store: StoreHarness,
) -> None:
    assert await refusal(store, ConversationMessageRequest(message_id="nope")) is (
        ErrorCode.INVALID_ARGUMENTS
    )


# ---------------------------------------------------------------------------------- commits


async def test_concurrent_receives_share_transactions_and_each_is_delivered_once(
    store: StoreHarness,
) -> None:
    replies: list[ConversationReceiveReply] = []

    async def one(i: int) -> None:
        # Every message twice: a retry racing its own first attempt.
        replies.append(await store.ask(receive(f"m{i // 2}"), ConversationReceiveReply))

    async with trio.open_nursery() as nursery:
        for i in range(200):
            nursery.start_soon(one, i)
    stats = await store.ask(StoreStatsRequest(), StoreStatsReply)

    assert sum(reply.created for reply in replies) == 100
    assert len({reply.seq for reply in replies}) == 100
    assert (count(store, "messages"), count(store, "app_inbox")) == (100, 100)
    assert stats.commits < 200


async def test_every_conversation_reply_arrives_after_its_rows_are_visible_to_another_connection(
    store: StoreHarness,
) -> None:
    received = await store.ask(receive("in-1"), ConversationReceiveReply)
    visible_in = independent_rows(
        store.db_path,
        f"SELECT m.seq, i.delivery_id FROM messages m JOIN app_inbox i"
        f" ON i.delivery_id = m.message_id WHERE m.seq = {received.seq}",
    )
    sent = await store.ask(send("out-1"), ConversationSendReply)
    visible_out = independent_rows(
        store.db_path,
        f"SELECT m.seq, o.outbox_id FROM messages m JOIN outbox o"
        f" ON o.outbox_id = m.outbox_id WHERE m.seq = {sent.seq}",
    )
    await store.ask(OutboxFailRequest(outbox_id="out-1", code="x"), OutboxFailReply)
    visible_fail = independent_rows(
        store.db_path,
        "SELECT m.state, o.state FROM messages m JOIN outbox o ON o.outbox_id = m.outbox_id",
    )

    assert visible_in == [(received.seq, "in-1")]
    assert visible_out == [(sent.seq, "out-1")]
    assert visible_fail == [("failed", "failed")]


# ---------------------------------------------------------------------------------- audit


async def test_no_message_text_reaches_the_audit_or_the_logs(
    store: StoreHarness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    await store.ask(receive("in-1", text=SECRET), ConversationReceiveReply)
    await store.ask(send("out-1", text=SECRET), ConversationSendReply)
    await store.ask(OutboxFailRequest(outbox_id="out-1", code="x"), OutboxFailReply)
    await store.ask(OutboxRetryRequest(outbox_id="out-1"), OutboxRetryReply)
    await store.ask(OutboxAckRequest(outbox_id="out-1"), OutboxAckReply)
    await store.ask(
        InboxPutRequest(app_scope="chat", conversation_id="conv-1", delivery_id="in-2", body={}),
        InboxPutReply,
    )
    assert await refusal(store, receive("in-2", text=SECRET)) is ErrorCode.MESSAGE_ID_CONFLICT
    # A request that fails validation at the store is refused and audited by its bus.
    malformed = ConversationReceiveRequest.model_construct(
        **{**receive("in-3", text=SECRET).__dict__, "kind": "k" * 101}
    )
    assert await refusal(store, malformed) is ErrorCode.FRAME_MALFORMED

    # The refusal queued its audit row before answering; once every task is idle, the row's
    # write is ahead of our query in the committer's queue.
    await trio.testing.wait_all_tasks_blocked()
    found = await store.ask(AuditQueryRequest(), AuditQueryReply)

    assert [(r.code, r.message_type) for r in found.records] == [
        ("frame_malformed", "store.conversation.receive")
    ]
    for row in independent_rows(store.db_path, "SELECT * FROM audit"):
        assert not any(SECRET in str(value) for value in row)
    assert SECRET not in caplog.text


# ---------------------------------------------------------------------------------- atomicity


async def run(committer: Committer, op: Callable[[Connection], T]) -> T:
    with trio.fail_after(WAIT):
        return await committer.submit(op)


async def refuse_writes_to(committer: Committer, table: str, event: str = "INSERT") -> None:
    """Make every `event` on `table` fail inside SQLite from now on (this connection only)."""
    sql = (
        f"CREATE TEMP TRIGGER refuse_{table} BEFORE {event} ON main.{table}"
        " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
    )
    await run(committer, lambda conn: conn.execute(sql))


async def query(committer: Committer, sql: str) -> list[tuple[object, ...]]:
    with trio.fail_after(WAIT):
        return await committer.submit(lambda conn: conn.execute(sql).fetchall(), write=False)


async def counts(committer: Committer, *tables: str) -> list[object]:
    return [(await query(committer, f"SELECT count(*) FROM {table}"))[0][0] for table in tables]


async def op_code(committer: Committer, op: Callable[[Connection], object]) -> ErrorCode:
    with pytest.raises(LineUpError) as caught:
        await run(committer, op)
    return caught.value.code


async def test_a_receive_whose_inbox_insert_fails_leaves_no_message_and_no_conversation(
    committer: Committer,
) -> None:
    await refuse_writes_to(committer, "app_inbox")

    code = await op_code(committer, lambda conn: c.conversation_receive(conn, receive("m-1"), 1.0))

    assert code is ErrorCode.STORE_UNAVAILABLE
    assert await counts(committer, "messages", "conversations", "app_inbox") == [0, 0, 0]


async def test_a_send_whose_outbox_insert_fails_leaves_no_message_and_no_conversation(
    committer: Committer,
) -> None:
    await refuse_writes_to(committer, "outbox")

    code = await op_code(committer, lambda conn: c.conversation_send(conn, send("m-1"), 1.0))

    assert code is ErrorCode.STORE_UNAVAILABLE
    assert await counts(committer, "messages", "conversations", "outbox") == [0, 0, 0]


async def test_a_page_with_one_invalid_message_records_none_of_it(
    committer: Committer,
) -> None:
    nan = ConversationReceiveRequest.model_construct(
        **{**receive("in-2").__dict__, "body": {"x": float("nan")}}
    )
    page = ConversationReceiveManyRequest.model_construct(
        messages=(receive("in-1"), nan), sync_cursor="c-1"
    )

    code = await op_code(committer, lambda conn: c.conversation_receive_many(conn, page, 1.0))

    assert code is ErrorCode.INVALID_ARGUMENTS
    counted = await counts(committer, "messages", "conversations", "app_inbox", "cursors")
    assert counted == [0, 0, 0, 0]  # the sync cursor past the page neither


def ack(conn: Connection) -> object:
    return o.outbox_ack(conn, OutboxAckRequest(outbox_id="m-1", remote_seq=3), 2.0)


def fail(conn: Connection) -> object:
    return o.outbox_fail(conn, OutboxFailRequest(outbox_id="m-1", code="x"), 2.0)


def retry(conn: Connection) -> object:
    return o.outbox_retry(conn, OutboxRetryRequest(outbox_id="m-1"), 2.0)


@pytest.mark.parametrize(("before", "change", "state"), [
    ([], ack, "pending"), ([], fail, "pending"), ([fail], retry, "failed"), ([fail], ack, "failed"),
], ids=["ack", "fail", "retry", "ack-after-fail"])  # fmt: skip
async def test_an_outbox_state_change_whose_message_update_fails_leaves_the_row_as_it_was(
    committer: Committer,
    before: list[Callable[[Connection], object]],
    change: Callable[[Connection], object],
    state: str,
) -> None:
    await run(committer, lambda conn: c.conversation_send(conn, send("m-1"), 1.0))
    for op in before:
        await run(committer, op)
    await refuse_writes_to(committer, "messages", "UPDATE")

    assert await op_code(committer, change) is ErrorCode.STORE_UNAVAILABLE
    assert await query(
        committer,
        "SELECT o.state, o.acked_at, m.state FROM outbox o JOIN messages m USING (outbox_id)",
    ) == [(state, None, state)]
