"""An Agent's text naming an app sub-session (`app_session_context`, seed 000 §7.3: the group
records "the Agent's short results"), through the router in a real tree joined as the
transport: taken only for the main IM and an open sub-session of this Agent and conversation,
stored in the chat's inbox with its `app_session_id`, which the chat's history carries; every
other one refused `app_session_invalid`, audited, and stored nowhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import trio

from lineup import wire
from lineup.actors.focus.messages import InstanceReply, LaunchRequest, UiIntentRequest
from lineup.actors.kernel import ActorKind, Bus, ErrorCode
from lineup.actors.router import _ids as ids
from lineup.actors.router.messages import InboundEnvelopesReply, InboundEnvelopesRequest
from lineup.actors.store.messages import (
    AppSessionGetReply,
    AppSessionGetRequest,
    InboxListReply,
    InboxListRequest,
)
from lineup.sdk import protocol as sdk
from lineup.supervisor import Supervisor
from lineup.tests.support.tree import attach, audit_rows, stored

from .test_inbound import AGENT, CONVERSATION, WAIT, tree_and_supervisor

POLL: Final = 0.05  # between two looks at another process's state, inside a bounded wait
INSTANCE: Final = "probe:launch-1"
SESSION: Final = ids.app_session_id(INSTANCE)
INVALID: Final = ErrorCode.APP_SESSION_INVALID.value


def text(
    message_id: str,
    context: Any,
    *,
    app_scope: str | None = None,
    conversation_id: str = CONVERSATION,
    agent: str = AGENT,
) -> dict[str, Any]:
    return wire.dump(
        wire.envelope(
            wire.TEXT,
            wire.TextPayload(markdown=f"result {message_id}", app_session_context=context),
            conversation_id=conversation_id,
            sender_kind="agent",
            sender_id=agent,
            message_id=message_id,
            app_scope=app_scope,
        )
    )


def of(session_id: str) -> dict[str, str]:
    return {"app_session_id": session_id}


async def hand_over(
    transport: Bus,
    *envelopes: dict[str, Any],
    conversation_id: str = CONVERSATION,
    agent: str = AGENT,
) -> list[tuple[str | None, str, str | None]]:
    with trio.fail_after(WAIT):
        reply = await transport.request(
            "router",
            InboundEnvelopesRequest(
                conversation_id=conversation_id, agent_id=agent, envelopes=envelopes
            ),
            expect=InboundEnvelopesReply,
        )
    return [(o.message_id, o.status, o.code) for o in reply.outcomes]


async def session_state(reader: Bus, state: str) -> None:
    """Wait until the probe instance's sub-session is in `state` (the router writes it when
    focus tells it the instance started or ended)."""
    with trio.fail_after(WAIT):
        while True:
            found = (
                await reader.request(
                    "store", AppSessionGetRequest(app_session_id=SESSION), expect=AppSessionGetReply
                )
            ).session
            if found is not None and found.state == state:
                return
            await trio.sleep(POLL)


async def with_open_session(nursery: trio.Nursery, tmp_path: Path) -> tuple[Bus, Bus, Supervisor]:
    """The tree, with an instance of the probe app whose sub-session is open."""
    transport, reader, supervisor = await tree_and_supervisor(nursery, tmp_path)
    await reader.request(
        "focus",
        LaunchRequest(app_scope="probe", call_id="launch-1"),
        expect=InstanceReply,
        timeout=WAIT,
    )
    await session_state(reader, "open")
    return transport, reader, supervisor


async def chat_inbox(reader: Bus) -> list[tuple[str, Any]]:
    listed = await reader.request(
        "store",
        InboxListRequest(app_scope="chat", conversation_id=CONVERSATION),
        expect=InboxListReply,
    )
    return [
        (row.delivery_id, row.body["payload"].get("app_session_context")) for row in listed.rows
    ]


async def refused_audited(reader: Bus, message_ids: list[str]) -> None:
    """Each of `message_ids` has its one `router.envelope_rejected` row, `app_session_invalid`."""
    rows = await audit_rows(
        reader,
        lambda rows: {r.subject_id for r in rows} >= set(message_ids),
        event_prefix="router.envelope_rejected",
    )
    audited = [(r.subject_id, r.code, r.message_type) for r in rows if r.subject_id in message_ids]
    assert sorted(audited) == sorted((m, INVALID, wire.TEXT) for m in message_ids)


async def test_a_text_naming_an_open_sub_session_of_this_agent_is_stored_with_its_id(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        transport, reader, supervisor = await with_open_session(nursery, tmp_path)
        # Keys the Agent added beside the id are not kept: the id alone, as checked.
        noisy = {**of(SESSION), "note": "dropped"}

        outcomes = await hand_over(
            transport, text("r-1", of(SESSION)), text("r-2", noisy), text("plain", None)
        )

        assert outcomes == [
            ("r-1", "accepted", None), ("r-2", "accepted", None), ("plain", "accepted", None),
        ]  # fmt: skip
        assert await chat_inbox(reader) == [
            ("r-1", of(SESSION)), ("r-2", of(SESSION)), ("plain", None),
        ]  # fmt: skip
        # The chat's history carries it (a restarted chat, a history page, show it grouped).
        chat = await attach(nursery, supervisor, ActorKind.MINIAPP, "miniapp:chat")
        history = await chat.request(
            "router",
            sdk.ConversationHistoryRequest(after_seq=0, limit=10),
            expect=sdk.ConversationHistoryReply,
        )
        assert [(i.message_id, i.app_session_id) for i in history.items] == [
            ("r-1", SESSION), ("r-2", SESSION), ("plain", None),
        ]  # fmt: skip
        nursery.cancel_scope.cancel()


async def test_a_text_naming_no_sub_session_of_its_own_is_refused_audited_and_not_stored(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        transport, reader, _ = await with_open_session(nursery, tmp_path)
        refused = {
            "unknown": text("unknown", of("lu:app_session:probe:nope")),
            "chat-forged": text("chat-forged", of("lu:app_session:chat")),
            "not-im": text("not-im", of(SESSION), app_scope="probe"),  # for an app, not the IM
            "no-id": text("no-id", {}),
            "not-text": text("not-text", {"app_session_id": 7}),
            "not-object": text("not-object", SESSION),
            "empty": text("empty", of("")),
            "long": text("long", of("s" * 201)),
        }

        outcomes = await hand_over(transport, *refused.values(), text("fine", of(SESSION)))

        assert outcomes == [
            *((m, "rejected", INVALID) for m in refused),
            ("fine", "accepted", None),
        ]
        await refused_audited(reader, list(refused))
        assert await chat_inbox(reader) == [("fine", of(SESSION))]
        assert [m for m in refused if await stored(reader, m)] == []
        nursery.cancel_scope.cancel()


async def test_a_sub_session_of_another_agent_or_conversation_is_refused(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        transport, reader, _ = await with_open_session(nursery, tmp_path)

        # The transport logged in as another Agent, or into another conversation: the
        # sub-session is still this one's, opened for `AGENT` in `CONVERSATION`.
        other_agent = await hand_over(
            transport, text("by-other", of(SESSION), agent="agent-2"), agent="agent-2"
        )
        other_conversation = await hand_over(
            transport,
            text("elsewhere", of(SESSION), conversation_id="conv-2"),
            conversation_id="conv-2",
        )

        assert other_agent == [("by-other", "rejected", INVALID)]
        assert other_conversation == [("elsewhere", "rejected", INVALID)]
        await refused_audited(reader, ["by-other", "elsewhere"])
        assert not await stored(reader, "by-other") and not await stored(reader, "elsewhere")
        nursery.cancel_scope.cancel()


async def test_a_closed_sub_session_takes_no_new_text_and_a_repeat_is_a_duplicate(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        transport, reader, supervisor = await with_open_session(nursery, tmp_path)
        assert await hand_over(transport, text("before", of(SESSION))) == [
            ("before", "accepted", None)
        ]
        shell = await attach(nursery, supervisor, ActorKind.HOSTBRIDGE, "closer")
        await shell.request(
            "focus",
            UiIntentRequest(intent="close", instance_id=INSTANCE),
            expect=InstanceReply,
            timeout=WAIT,
        )
        await session_state(reader, "closed")

        outcomes = await hand_over(
            transport, text("after", of(SESSION)), text("before", of(SESSION))
        )

        # Seed 000 §7.3: an ended sub-session is history, nothing is appended to it; the
        # replay of a text taken while it was open (a restarted transport's) is a repeat.
        assert outcomes == [("after", "rejected", INVALID), ("before", "duplicate", None)]
        await refused_audited(reader, ["after"])
        assert await chat_inbox(reader) == [("before", of(SESSION))]
        assert not await stored(reader, "after")
        nursery.cancel_scope.cancel()
