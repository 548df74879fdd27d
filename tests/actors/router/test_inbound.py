"""The router's inbound path (`actors/router/_actor.py`, `on_inbound`) in a real tree, joined
as the transport: a sync page's texts are persisted in order, a run of them in one store
request, and a refusal from the store leaves the page where one-at-a-time would have."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest
import trio
import trio.testing

from lineup import wire
from lineup.actors.kernel import ActorKind, AuditRecord, Bus, Envelope, ErrorCode, Identity
from lineup.actors.router import _ids as ids
from lineup.actors.router._deliveries import Deliveries
from lineup.actors.router._envelope import admit
from lineup.actors.router._inbound import _receive_request, _request_cost
from lineup.actors.router.messages import InboundEnvelopesReply, InboundEnvelopesRequest
from lineup.actors.store.messages import (
    ConversationHistoryReply,
    ConversationHistoryRequest,
    ConversationSendReply,
    ConversationSendRequest,
    CursorGetReply,
    CursorGetRequest,
    CursorSetReply,
    CursorSetRequest,
    InboxListReply,
    InboxListRequest,
    OutboxPendingReply,
    OutboxPendingRequest,
    StoreStatsReply,
    StoreStatsRequest,
)
from lineup.facts.link import SYNC_CURSOR
from lineup.sdk import protocol as sdk
from lineup.sdk.manifest import manifest_json
from lineup.sdk.tools import manifest_of
from lineup.supervisor import ChildSpec, Supervisor
from lineup.tests.support.probe_app import Probe
from lineup.tests.support.tree import attach, audit_rows, start_tree

CONVERSATION, AGENT = "conv-in", "agent-in"
WAIT = 20.0


def text(message_id: str) -> dict[str, Any]:
    return wire.dump(
        wire.envelope(
            wire.TEXT,
            wire.TextPayload(markdown=f"hello {message_id}"),
            conversation_id=CONVERSATION,
            sender_kind="agent",
            sender_id=AGENT,
            message_id=message_id,
            app_scope="probe",
        )
    )


def call(call_id: str, tool: str) -> dict[str, Any]:
    return wire.dump(
        wire.envelope(
            wire.TOOL_CALL,
            wire.ToolCallPayload(call_id=call_id, tool=tool, inventory_revision="1", input={}),
            conversation_id=CONVERSATION,
            sender_kind="agent",
            sender_id=AGENT,
            message_id=f"env-{call_id}",
            app_scope="probe",
        )
    )


async def tree(nursery: trio.Nursery, data_dir: Path) -> tuple[Bus, Bus]:
    """(the transport, a router-kind peer that reads the store) on store + router + focus."""
    transport, reader, _ = await tree_and_supervisor(nursery, data_dir)
    return transport, reader


async def tree_and_supervisor(nursery: trio.Nursery, data_dir: Path) -> tuple[Bus, Bus, Supervisor]:
    data_dir.mkdir(parents=True, exist_ok=True)
    manifest = data_dir / "probe.json"
    manifest.write_text(manifest_json(manifest_of(Probe)))
    app = {
        "app_scope": "probe",
        "manifest": str(manifest),
        "entry": "lineup.tests.support.probe_app:Probe",
        "title": "Probe",
    }
    specs = [
        ChildSpec("store", ActorKind.STORE, "lineup.actors.store:StoreActor"),
        ChildSpec("router", ActorKind.ROUTER, "lineup.actors.router:RouterActor"),
        ChildSpec(
            "focus", ActorKind.FOCUS, "lineup.actors.focus:FocusActor", config={"apps": [app]}
        ),
    ]
    (data_dir / "rt").mkdir()
    supervisor = await start_tree(nursery, specs, data_dir / "rt")
    # The router wakes the transport's outbox after a commit: nothing to send here.
    transport: Bus = await nursery.start(
        supervisor.attach, Identity(ActorKind.TRANSPORT, "transport"), lambda env: None
    )
    reader = await attach(nursery, supervisor, ActorKind.ROUTER, "reader")
    session = {"user_id": "user-in", "agent_id": AGENT, "conversation_id": CONVERSATION}
    await transport.request(
        "store",
        CursorSetRequest(name="transport.session", value=json.dumps(session)),
        expect=CursorSetReply,
    )
    await settled(reader)
    return transport, reader, supervisor


async def settled(reader: Bus) -> None:
    """Once focus's start-up has written all it writes after the tree is ready: the default
    app's instance (its transaction has the `instance.foreground` row) and the installed apps'
    audit rows (the probe's is the last). A test that counts commits counts only its own."""

    def written(rows: tuple[AuditRecord, ...]) -> bool:
        events = {(row.event, row.peer) for row in rows}
        return {("instance.foreground", "chat"), ("app.installed", "probe")} <= events

    await audit_rows(reader, written)


async def hand_over(transport: Bus, *envelopes: dict[str, Any]) -> list[tuple[str | None, str]]:
    with trio.fail_after(WAIT):
        reply = await transport.request(
            "router",
            InboundEnvelopesRequest(
                conversation_id=CONVERSATION, agent_id=AGENT, envelopes=envelopes
            ),
            expect=InboundEnvelopesReply,
        )
    return [(o.message_id, o.status) for o in reply.outcomes]


async def inbox(reader: Bus) -> list[str]:
    listed = await reader.request(
        "store",
        InboxListRequest(app_scope="probe", conversation_id=CONVERSATION),
        expect=InboxListReply,
    )
    return [row.delivery_id for row in listed.rows]


async def commits(reader: Bus) -> int:
    return (await reader.request("store", StoreStatsRequest(), expect=StoreStatsReply)).commits


async def test_a_page_of_texts_is_persisted_in_order_in_fewer_commits_than_texts(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        transport, reader = await tree(nursery, tmp_path)
        await hand_over(transport, text("warm"))  # the inventory is read once, here
        before = await commits(reader)

        outcomes = await hand_over(transport, *(text(f"t{i}") for i in range(6)))

        after = await commits(reader)
        assert outcomes == [(f"t{i}", "accepted") for i in range(6)]
        assert await inbox(reader) == ["warm", *(f"t{i}" for i in range(6))]
        assert after - before < 6  # one at a time, each text was a commit of its own
        nursery.cancel_scope.cancel()


async def sync_cursor(reader: Bus) -> str | None:
    return (
        await reader.request("store", CursorGetRequest(name=SYNC_CURSOR), expect=CursorGetReply)
    ).value


async def test_a_page_that_ends_with_texts_commits_the_sync_cursor_with_them(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        transport, reader = await tree(nursery, tmp_path)
        await hand_over(transport, text("warm"))  # the inventory is read once, here
        before = await commits(reader)

        with trio.fail_after(WAIT):
            reply = await transport.request(
                "router",
                InboundEnvelopesRequest(
                    conversation_id=CONVERSATION,
                    agent_id=AGENT,
                    envelopes=(text("t1"), text("t2")),
                    cursor="c-7",
                ),
                expect=InboundEnvelopesReply,
            )

        assert reply.cursor_saved
        assert await commits(reader) - before == 1  # the texts and the cursor, together
        assert (await sync_cursor(reader), await inbox(reader)) == ("c-7", ["warm", "t1", "t2"])
        nursery.cancel_scope.cancel()


async def test_a_page_that_ends_with_a_tool_call_leaves_the_sync_cursor_to_the_transport(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        transport, reader = await tree(nursery, tmp_path)

        with trio.fail_after(WAIT):
            reply = await transport.request(
                "router",
                InboundEnvelopesRequest(
                    conversation_id=CONVERSATION,
                    agent_id=AGENT,
                    envelopes=(text("t1"), call("c1", "probe.nope")),
                    cursor="c-8",
                ),
                expect=InboundEnvelopesReply,
            )

        assert not reply.cursor_saved
        assert await sync_cursor(reader) is None
        nursery.cancel_scope.cancel()


async def test_texts_around_a_tool_call_keep_the_pages_order_and_repeats_are_duplicates(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        transport, reader = await tree(nursery, tmp_path)

        outcomes = await hand_over(
            transport, text("a"), text("b"), call("c1", "probe.nope"), text("c"), text("a")
        )

        assert outcomes == [
            ("a", "accepted"), ("b", "accepted"), ("env-c1", "accepted"),
            ("c", "accepted"), ("a", "duplicate"),
        ]  # fmt: skip
        assert await inbox(reader) == ["a", "b", "c"]
        nursery.cancel_scope.cancel()


async def test_a_text_reusing_a_sent_messages_id_is_refused_audited_and_the_page_goes_on(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        transport, reader = await tree(nursery, tmp_path)
        await reader.request(
            "store",
            ConversationSendRequest(
                message_id="taken",
                conversation_id=CONVERSATION,
                app_scope="probe",
                kind=wire.TEXT,
                body={"markdown": "mine"},
                wire={"id": "taken"},
                sender_kind="user",
                sender_id="user-in",
            ),
            expect=ConversationSendReply,
        )

        outcomes = await hand_over(transport, text("before"), text("taken"), text("after"))
        again = await hand_over(transport, text("taken"))  # the replay of a restarted transport

        assert outcomes == [("before", "accepted"), ("taken", "rejected"), ("after", "accepted")]
        assert again == [("taken", "rejected")]
        assert await inbox(reader) == ["before", "after"]
        rows = await audit_rows(
            reader,
            lambda rows: len([r for r in rows if r.subject_id == "taken"]) == 2,
            event_prefix="router.envelope_rejected",
        )
        assert {(r.code, r.message_type) for r in rows if r.subject_id == "taken"} == {
            (ErrorCode.MESSAGE_ID_CONFLICT.value, wire.TEXT)
        }
        nursery.cancel_scope.cancel()


async def test_a_text_whose_id_is_in_the_runtimes_namespace_is_refused_before_the_store(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        transport, reader = await tree(nursery, tmp_path)

        outcomes = await hand_over(
            transport, text(ids.terminal_id("c1")), text(ids.message_id()), text("fine")
        )

        assert [status for _, status in outcomes] == ["rejected", "rejected", "accepted"]
        assert await inbox(reader) == ["fine"]
        rows = await audit_rows(
            reader,
            lambda rows: len([r for r in rows if r.code == "message_id_conflict"]) == 2,
            event_prefix="router.envelope_rejected",
        )
        assert [r.subject_id for r in rows][-2:] == [o for o, _ in outcomes[:2]]
        nursery.cancel_scope.cancel()


async def test_the_chat_naming_a_calls_outbox_rows_as_its_client_ids_cannot_block_them(
    tmp_path: Path,
) -> None:
    # The chat: the one MiniApp that may send text at all (the ACL's reserved row).
    async with trio.open_nursery() as nursery:
        transport, _, supervisor = await tree_and_supervisor(nursery, tmp_path)
        app = await attach(nursery, supervisor, ActorKind.MINIAPP, "miniapp:chat")
        squats = ("final:c1", "receipt:c1:accepted", ids.terminal_id("c1"))
        receipts = [
            await app.request(
                "router",
                sdk.ConversationSendTextRequest(message_id=squat, markdown="squat"),
                expect=sdk.CommandReceipt,
            )
            for squat in squats
        ]

        # A call the router refuses at birth writes its terminal row at once.
        outcomes = await hand_over(transport, call("c1", "probe.nope"))

        assert outcomes == [("env-c1", "accepted")]
        assert [r.id for r in receipts] == list(squats)  # the app keeps its own ids
        pending = await transport.request(
            "store", OutboxPendingRequest(), expect=OutboxPendingReply
        )
        rows = [(row.outbox_id, row.kind) for row in pending.rows]
        assert rows[-1] == (ids.terminal_id("c1"), wire.TOOL_ERROR)
        assert all(ids.is_runtime(outbox_id) for outbox_id, _ in rows)
        assert not any(squat == outbox_id for squat in squats for outbox_id, _ in rows[:-1])
        nursery.cancel_scope.cancel()


async def test_a_pushed_delivery_carries_the_seqs_and_time_its_app_lists_it_by(
    tmp_path: Path,
) -> None:
    # The chat orders a message by its conversation seq and pages its inbox by the inbox's:
    # a delivery pushed with the one and listed with the other (after a restart, say) showed
    # two messages at the same place, in an order left to chance. And it places a message
    # among the interaction cards by when the runtime recorded it: stamped by the chat when it
    # got to it instead, a message sent before a question showed after the question's card.
    async with trio.open_nursery() as nursery:
        transport, reader, supervisor = await tree_and_supervisor(nursery, tmp_path)
        pushed: list[sdk.Delivery] = []
        arrived = trio.Event()

        def app_side(env: Envelope) -> None:
            if isinstance(env.body, sdk.DeliveriesEvent):
                pushed.extend(env.body.deliveries)
                arrived.set()

        app: Bus = await nursery.start(
            supervisor.attach, Identity(ActorKind.MINIAPP, "miniapp:probe"), app_side
        )
        await reader.request(  # a message of the user's first: the two orders now differ
            "store",
            ConversationSendRequest(
                message_id="mine", conversation_id=CONVERSATION, app_scope="chat",
                kind=wire.TEXT, body={"markdown": "mine"}, wire={"id": "mine"},
                sender_kind="user", sender_id="user-in",
            ),
            expect=ConversationSendReply,
        )  # fmt: skip

        assert await hand_over(transport, text("m-1")) == [("m-1", "accepted")]
        with trio.fail_after(WAIT):
            await arrived.wait()
        listed = await app.request("router", sdk.InboxListRequest(), expect=sdk.InboxListReply)
        history = await reader.request(
            "store",
            ConversationHistoryRequest(conversation_id=CONVERSATION),
            expect=ConversationHistoryReply,
        )

        assert [(d.delivery_id, d.seq, d.message_seq, d.at) for d in pushed] == [
            (d.delivery_id, d.seq, d.message_seq, d.at) for d in listed.deliveries
        ]
        [delivery] = pushed
        [recorded] = [r for r in history.rows if r.message_id == "m-1"]
        assert (recorded.seq, recorded.created_at) == (delivery.message_seq, delivery.at)
        assert delivery.seq != delivery.message_seq
        nursery.cancel_scope.cancel()


class _SlowApp:
    """A bus whose `tell` to the app waits until the test lets it through."""

    def __init__(self) -> None:
        self.told: list[tuple[str, list[str]]] = []
        self.release = trio.Event()

    async def tell(self, peer: str, event: Any, *, timeout: float) -> None:
        await self.release.wait()
        self.told.append((peer, [d.delivery_id for d in event.deliveries]))


def delivered(*ids: str) -> list[sdk.Delivery]:
    return [sdk.Delivery(delivery_id=i, seq=n, envelope={}) for n, i in enumerate(ids)]


async def test_what_piles_up_while_an_app_is_told_goes_in_one_event_in_order() -> None:
    bus = _SlowApp()
    with trio.fail_after(WAIT):
        async with trio.open_nursery() as nursery:  # ends when every teller is done
            deliveries = Deliveries(cast(Bus, bus), nursery.start_soon)  # no process, no store
            deliveries.tell("probe", delivered("a1", "a2"))
            await trio.testing.wait_all_tasks_blocked()  # the first event is on its way
            deliveries.tell("probe", delivered("b1"))
            deliveries.tell("probe", delivered("c1", "c2"))
            deliveries.tell("other", delivered("x1"))
            bus.release.set()
    assert deliveries._untold == {}

    assert [ids for peer, ids in bus.told if peer == "miniapp:probe"] == [
        ["a1", "a2"],
        ["b1", "c1", "c2"],
    ]
    assert [ids for peer, ids in bus.told if peer == "miniapp:other"] == [["x1"]]


@pytest.mark.parametrize("instance_id", [None, "inst-" + "é" * 190])
def test_a_receive_requests_cost_bounds_its_size_on_the_bus(instance_id: str | None) -> None:
    raw = wire.dump(
        wire.envelope(
            wire.TEXT,
            wire.TextPayload(markdown="ü" * 1000),
            conversation_id="c" * 200,
            sender_kind="agent",
            sender_id="a" * 200,
            message_id="m" * 200,
            app_scope="probe",
        )
    )
    if instance_id is not None:
        raw["instance_id"] = instance_id
    parsed = wire.agent_envelope(raw)  # as the transport hands it over
    envelope = admit(parsed, conversation_id="c" * 200, agent_id="a" * 200)
    size = wire.encoded_size(parsed)

    request = _receive_request(envelope)

    assert len(request.model_dump_json().encode()) <= _request_cost(envelope, size)
