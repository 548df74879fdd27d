"""Standard interactions through the real runtime (seed 000 §11): the Agent asks, the user
answers as the hostbridge would (`router.ui.interaction.answer` from a probe of kind
hostbridge), and the Agent gets its one result; dismiss, expiry bounds, a MiniApp's own
questions, and the router, the chat or the hostbridge killed with a question pending (a
restarted hostbridge is answered through a real Shell socket)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw
import pytest
import trio

from lineup import wire
from lineup.actors.focus.messages import UiEventAccepted, UiEventRequest
from lineup.actors.kernel import ActorKind, AuditRecord, ErrorCode, LineUpError
from lineup.actors.router.messages import InboundEnvelopesReply, InboundEnvelopesRequest
from lineup.actors.store._db import DB_FILENAME
from lineup.tests.support.asker_app import Asker
from lineup.tests.support.interactions import (
    CHOICE,
    CONFIRM,
    INPUT,
    POLL,
    RECEIPT,
    WAIT,
    answer_frame,
    card_in,
    drafts_sent,
    greeted_again,
    scene,
    scene_on,
    shell_card,
)
from lineup.tests.support.runtime import (
    AGENT_ID,
    CONVERSATION,
    kill_and_wait_restarted,
    start_runtime_with_app,
)
from lineup.tests.support.shell import ShellClient, connect_shell
from lineup.tests.support.tree import attach, audit_rows


async def test_the_standard_tools_are_advertised_and_an_answer_reaches_the_agent_once(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    inventory = [m for m in s.agent.seen if m["type"] == "lineup.v1.client.inventory"][-1]
    methods = {t["method"]: t for t in inventory["payload"]["tools"]}
    for name in ("notice", "choice", "confirm", "input"):
        assert methods[f"interaction.{name}"]["handling"] == "interactive"

    asked = await s.ask("interaction.choice", CHOICE, "c-choice")
    assert (asked.kind, asked.source, asked.app_session_id) == ("choice", "agent_tool", None)
    assert asked.state in ("pending", "presented")
    # The default expiry: 15 minutes, and the call waits exactly as long.
    assert asked.expires_at is not None
    assert asked.expires_at - asked.created_at == pytest.approx(900.0, abs=2.0)
    assert (await s.call_row("c-choice")).timeout_ms == 900_000

    with pytest.raises(LineUpError) as refused:  # not one of its actions: nothing recorded
        await s.answer(asked.interaction_id, {"action_ids": ["steak"]})
    assert refused.value.code is ErrorCode.ANSWER_INVALID
    assert (await s.interaction("c-choice")).state in ("pending", "presented")

    first = await s.answer(asked.interaction_id, {"action_ids": ["salad"]})
    assert first.changed
    assert (first.interaction.state, first.interaction.result) == (
        "submitted",
        {"action_ids": ["salad"]},
    )
    replay = await s.answer(asked.interaction_id, {"action_ids": ["salad"]})
    other = await s.answer(asked.interaction_id, {"action_ids": ["soup"]})
    assert (replay.changed, other.changed) == (False, False)  # the first answer won
    assert other.interaction.result == {"action_ids": ["salad"]}

    result = await s.agent.terminal("c-choice")
    assert (result["type"], result["payload"]["result"]) == (
        "lineup.v1.tool.result",
        {"action_ids": ["salad"]},
    )
    settled = await s.interaction("c-choice", "completed")  # the AppServer has the result
    assert settled.result == {"action_ids": ["salad"]}
    assert len(await s.finals_of("c-choice")) == 1

    with pytest.raises(LineUpError) as unknown:
        await s.answer("lu:interaction:nobody", {"approved": True})
    assert unknown.value.code is ErrorCode.INTERACTION_NOT_FOUND


async def test_legacy_names_map_a_notice_is_answered_at_once_and_bad_requests_are_refused(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    confirm = await s.ask("confirm", {**CONFIRM, "expires_in_ms": 60_000}, "c-legacy")
    assert confirm.kind == "confirm"
    assert (await s.call_row("c-legacy")).tool == "interaction.confirm"
    assert (await s.call_row("c-legacy")).timeout_ms == 60_000
    await s.answer(confirm.interaction_id, {"approved": True})
    result = await s.agent.terminal("c-legacy")
    assert result["payload"]["result"] == {"approved": True}

    notice = await s.ask("interaction.notice", {"title": "FYI", "message": "Done."}, "c-note")
    assert notice.expires_at is None  # a notice takes no expiry
    result = await s.agent.terminal("c-note")  # nobody answered: handed on is enough
    assert result["payload"]["result"] == {"acknowledged": False}
    late = await s.answer(notice.interaction_id, {"acknowledged": True})
    assert not late.changed

    user_input = await s.ask("input", INPUT, "c-input")
    with pytest.raises(LineUpError) as missing:
        await s.answer(user_input.interaction_id, {"values": {}})
    assert missing.value.code is ErrorCode.ANSWER_INVALID
    cancelled = await s.answer(user_input.interaction_id, {"cancelled": True})
    assert (cancelled.changed, cancelled.interaction.state) == (True, "cancelled")
    error = await s.agent.terminal("c-input")
    assert error["payload"]["code"] == ErrorCode.CANCELLED_BY_USER.value

    bad: dict[str, tuple[str, dict[str, Any]]] = {
        "c-short": ("interaction.choice", {**CHOICE, "expires_in_ms": 59_999}),
        "c-long": ("interaction.confirm", {**CONFIRM, "expires_in_ms": 86_400_001}),
        "c-note-exp": (
            "interaction.notice",
            {"title": "t", "message": "m", "expires_in_ms": 60_000},
        ),
        "c-secret": (
            "interaction.input",
            {**INPUT, "fields": [{"id": "pw", "label": "Password", "type": "password"}]},
        ),
        "c-dup": (
            "interaction.choice",
            {**CHOICE, "actions": [{"id": "a", "label": "A"}, {"id": "a", "label": "B"}]},
        ),
    }
    for call_id, (tool, arguments) in bad.items():
        await s.agent.client.call_tool(CONVERSATION, tool, arguments, s.revision, call_id=call_id)
    for call_id in bad:
        error = await s.agent.terminal(call_id)
        assert (error["type"], error["payload"]["code"]) == (
            "lineup.v1.tool.error",
            ErrorCode.TOOL_INPUT_INVALID.value,
        ), call_id
    listed = {v.call_id for v in (await s.listed()).interactions}
    assert not listed & set(bad)  # no interaction was created for any of them


async def test_a_dismiss_its_replay_and_a_late_one_get_the_same_receipt_and_one_terminal(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    asked = await s.ask("interaction.input", INPUT, "c-dismiss")
    answered = await s.ask("interaction.confirm", CONFIRM, "c-answered")
    await s.answer(answered.interaction_id, {"approved": False})
    await s.agent.terminal("c-answered")

    first = await s.agent.client.dismiss(CONVERSATION, "ctl-1", "c-dismiss", "dismiss-1")
    error = await s.agent.terminal("c-dismiss")
    assert error["payload"]["code"] == ErrorCode.INTERACTION_DISMISSED.value
    ended = await s.interaction("c-dismiss", "cancelled")
    assert ended.terminal_code == ErrorCode.INTERACTION_DISMISSED.value
    # The same POST again (its answer lost): the AppServer's receipt, and nothing stored twice.
    assert await s.agent.client.dismiss(CONVERSATION, "ctl-1", "c-dismiss", "dismiss-1") == first
    replay = await s.agent.client.dismiss(CONVERSATION, "ctl-1", "c-dismiss")  # sent again
    late = await s.agent.client.dismiss(CONVERSATION, "ctl-2", "c-answered")  # too late
    never = await s.agent.client.dismiss(CONVERSATION, "ctl-3", "never-asked")
    # All the Agent is answered is the AppServer's: each dismiss a message of its own there.
    sent = (first, replay, late, never)
    assert all(set(receipt) == {"message_id", "seq"} for receipt in sent)
    assert len({receipt["message_id"] for receipt in sent}) == len(sent)

    def handled(rows: tuple[AuditRecord, ...]) -> bool:  # the last one sent: all were
        return any(
            r.subject_id == never["message_id"] for r in events(rows, "router.envelope_rejected")
        )

    rows = await audit_rows(s.reader, handled, event_prefix="router.")
    assert [r.subject_id for r in events(rows, "router.interaction_dismissed")] == [
        asked.interaction_id
    ]
    # (Sets: a page the transport hands over again repeats its rows, and changes nothing.)
    assert {r.subject_id for r in events(rows, "router.dismiss_repeated")} == {
        asked.interaction_id,
        answered.interaction_id,
    }
    assert {r.code for r in events(rows, "router.envelope_rejected")} == {
        ErrorCode.INTERACTION_NOT_FOUND.value
    }

    # The runtime's receipt is the router's outcome for each envelope, which only the
    # transport sees. Handed the same four again, as the transport would after a crash before
    # its cursor moved: the first, its replay and the late one are `accepted` alike.
    link = await attach(nursery, s.runtime.supervisor, ActorKind.TRANSPORT, "probe-link")
    again = await link.request(
        "router",
        InboundEnvelopesRequest(
            conversation_id=CONVERSATION,
            agent_id=AGENT_ID,
            envelopes=tuple(
                dismissal(receipt, control_id, call_id)
                for receipt, control_id, call_id in (
                    (first, "ctl-1", "c-dismiss"),
                    (replay, "ctl-1", "c-dismiss"),
                    (late, "ctl-2", "c-answered"),
                    (never, "ctl-3", "never-asked"),
                )
            ),
        ),
        expect=InboundEnvelopesReply,
    )
    assert [(o.message_id, o.status, o.code) for o in again.outcomes] == [
        (first["message_id"], "accepted", None),
        (replay["message_id"], "accepted", None),
        (late["message_id"], "accepted", None),
        (never["message_id"], "rejected", ErrorCode.INTERACTION_NOT_FOUND.value),
    ]

    late_answer = await s.answer(asked.interaction_id, {"values": {"name": "Ann"}})
    assert (late_answer.changed, late_answer.interaction.state) == (False, "cancelled")
    assert (await s.interaction("c-answered", "completed")).result == {"approved": False}
    # Only the first dismiss wrote a row: each call has its one receipt and one terminal
    # message in the outbox, and that is all the Agent got about it.
    assert outbox_kinds(data_dir, "c-dismiss") == [RECEIPT, wire.TOOL_ERROR]
    assert outbox_kinds(data_dir, "c-answered") == [RECEIPT, wire.RESULT]
    await s.agent.settle()
    assert [m["type"] for m in s.agent.of_call("c-dismiss")] == [RECEIPT, wire.TOOL_ERROR]
    assert [m["type"] for m in s.agent.of_call("c-answered")] == [RECEIPT, wire.RESULT]


def events(rows: tuple[AuditRecord, ...], event: str) -> list[AuditRecord]:
    return [r for r in rows if r.event == event]


def dismissal(receipt: dict[str, Any], control_id: str, call_id: str) -> dict[str, Any]:
    """The dismiss the AppServer answered with `receipt`, as its sync relays it."""
    envelope = wire.envelope(
        wire.DISMISS,
        wire.DismissPayload(control_id=control_id, call_id=call_id),
        conversation_id=CONVERSATION,
        sender_kind="agent",
        sender_id=AGENT_ID,
        message_id=receipt["message_id"],
    )
    return {**wire.dump(envelope), "seq": receipt["seq"]}


def outbox_kinds(data_dir: Path, call_id: str) -> list[str]:
    """The kinds of the outbox rows about `call_id`, in order, read beside the store."""
    conn = apsw.Connection(str(data_dir / DB_FILENAME), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = conn.execute(
            "SELECT kind FROM outbox WHERE json_extract(body, '$.payload.call_id') = ?"
            " ORDER BY seq",
            (call_id,),
        ).fetchall()
    finally:
        conn.close()
    return [str(kind) for (kind,) in rows]


@pytest.mark.parametrize("victim", ["router", "miniapp:chat"])
async def test_a_sigkill_with_a_question_pending_is_answered_once_after_recovery(
    nursery: trio.Nursery, data_dir: Path, victim: str
) -> None:
    s = await scene(nursery, data_dir)
    asked = await s.ask("interaction.choice", CHOICE, "c-crash")
    await kill_and_wait_restarted(s.runtime, victim)
    recovered = await s.interaction("c-crash", "presented")
    assert recovered.interaction_id == asked.interaction_id
    first = await s.answer(asked.interaction_id, {"action_ids": ["soup"]})
    again = await s.answer(asked.interaction_id, {"action_ids": ["salad"]})
    assert (first.changed, again.changed) == (True, False)
    result = await s.agent.terminal("c-crash")
    assert result["payload"]["result"] == {"action_ids": ["soup"]}
    assert len(await s.finals_of("c-crash")) == 1


async def test_a_sigkilled_hostbridge_relays_the_pending_card_to_a_shell_and_one_answer(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    asked = await s.ask("interaction.choice", CHOICE, "c-crash")
    await kill_and_wait_restarted(s.runtime, "hostbridge")
    # The restarted hostbridge has only what the router tells it: the card reaches a Shell
    # that connects to it, and the user's answers go back through it.
    shell = await connect_shell(nursery, s.runtime.shell_url)
    with trio.fail_after(WAIT):
        await shell.wait_until(card_in(asked.interaction_id, "presented"))
    card = shell_card(shell, asked.interaction_id) or {}
    assert (card["call_id"], card["kind"], card["request"]["actions"]) == (
        "c-crash",
        "choice",
        CHOICE["actions"],
    )
    await shell.send(answer_frame(asked.interaction_id, {"action_ids": ["soup"]}))
    # A second click, on another action: forwarded too, and it changes nothing.
    await shell.send(answer_frame(asked.interaction_id, {"action_ids": ["salad"]}))
    result = await s.agent.terminal("c-crash")
    assert result["payload"]["result"] == {"action_ids": ["soup"]}
    with trio.fail_after(WAIT):
        await shell.wait_until(card_in(asked.interaction_id, "completed"))
    assert (shell_card(shell, asked.interaction_id) or {})["result"] == {"action_ids": ["soup"]}
    rows = await audit_rows(  # both answers reached the hostbridge, audited by kind
        s.reader, lambda rows: len(events(rows, "ui.interaction.answer")) >= 2, peer="user"
    )
    assert [r.subject_id for r in events(rows, "ui.interaction.answer")] == [
        asked.interaction_id
    ] * 2
    assert (await s.interaction("c-crash")).result == {"action_ids": ["soup"]}
    assert len(await s.finals_of("c-crash")) == 1
    await shell.ws.aclose()


async def test_a_runtime_restart_restores_pending_questions_and_open_sub_sessions(
    data_dir: Path,
) -> None:
    async with trio.open_nursery() as first:
        s = await scene(first, data_dir)
        await s.agent.client.call_tool(
            CONVERSATION,
            "task-dashboard.open",
            {"task_id": "t1", "title": "Keep me"},
            s.revision,
            call_id="open-1",
        )
        await s.agent.pull("lineup.v1.tool.progress", lambda m: m["payload"]["call_id"] == "open-1")
        opened = await s.agent.pull("lineup.v1.app_session.opened")
        session_id = opened["payload"]["app_session_id"]
        asked = await s.ask(
            "interaction.confirm",
            {**CONFIRM, "app_session_context": {"app_session_id": session_id}},
            "c-kept",
        )
        typed = await s.ask("interaction.input", INPUT, "c-typed")
        # The user starts typing an answer: the hostbridge keeps the draft, and a Shell that
        # reconnects gets it back.
        shell = await connect_shell(first, s.runtime.shell_url)
        with trio.fail_after(WAIT):
            await shell.wait_until(card_in(typed.interaction_id, "presented"))
        await shell.send(
            {
                "type": "interaction.draft",
                "interaction_id": typed.interaction_id,
                "values": {"name": "Ad"},
            }
        )
        await greeted_again(shell)  # the draft was handled before this greeting was built
        reconnected = await connect_shell(first, s.runtime.shell_url)
        await greeted_again(reconnected)
        drafts = drafts_sent(reconnected, typed.interaction_id)  # one per greeting
        assert drafts and all(draft == {"name": "Ad"} for draft in drafts)
        for socket in (shell, reconnected):
            await socket.ws.aclose()
        first.cancel_scope.cancel()

    async with trio.open_nursery() as second:
        s = await scene(second, data_dir)
        listed = await s.listed()
        kept = [v for v in listed.interactions if v.call_id in ("c-kept", "c-typed")]
        assert sorted((v.interaction_id, v.state, v.app_session_id) for v in kept) == sorted(
            [
                (asked.interaction_id, "presented", session_id),
                (typed.interaction_id, "presented", None),
            ]
        )
        assert [x.state for x in listed.sessions if x.app_session_id == session_id] == ["open"]
        # The question is back, still waiting; what was typed into it is not (it lived in the
        # old runtime's memory only), in a greeting sent once the hostbridge knew the question.
        shell = await connect_shell(second, s.runtime.shell_url)
        with trio.fail_after(WAIT):
            await shell.wait_until(card_in(typed.interaction_id, "presented"))
        await greeted_again(shell)
        assert drafts_sent(shell, typed.interaction_id) == []
        assert (shell_card(shell, typed.interaction_id) or {}).get("state") == "presented"

        await s.answer(asked.interaction_id, {"approved": True})
        result = await s.agent.terminal("c-kept")
        assert result["payload"]["result"] == {"approved": True}
        assert len(await s.finals_of("c-kept")) == 1
        await shell.ws.aclose()
        second.cancel_scope.cancel()


# ------------------------------------------------------------------ a MiniApp's own questions


async def test_a_miniapps_question_is_answered_to_it_alone_and_others_are_out_of_its_reach(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime_with_app(nursery, data_dir, Asker, title="Asker")
    s = await scene_on(nursery, runtime)
    shell = await connect_shell(nursery, runtime.shell_url)
    await s.agent.client.call_tool(
        CONVERSATION, "asker.run", {"mode": "ask"}, s.revision, call_id="ask-1"
    )
    done = await s.agent.terminal("ask-1")
    interaction_id = done["payload"]["result"]["interaction_id"]
    view = next(v for v in (await s.listed()).interactions if v.interaction_id == interaction_id)
    assert (view.source, view.owner_scope, view.instance_id, view.call_id) == (
        "miniapp",
        "asker",
        "asker:ask-1",
        None,
    )
    answered = await s.answer(interaction_id, {"action_ids": ["blue"]})
    assert answered.changed

    def told(sh: ShellClient) -> list[Any]:
        return list(sh.views.get("asker:ask-1", {}).get("told", []))

    with trio.fail_after(WAIT):
        await shell.wait_until(lambda sh: any(t["result"] for t in told(sh)))
    assert told(shell)[-1]["result"] == {"action_ids": ["blue"]}
    await s.agent.settle()
    assert not [
        m for m in s.agent.seen if "action_ids" in str(m["payload"].get("result", ""))
    ]  # never to the Agent

    # The Agent's question, and its call, are out of its reach: it can neither read, end nor
    # complete them.
    agents = await s.ask("interaction.confirm", CONFIRM, "c-agent")
    await s.agent.client.call_tool(
        CONVERSATION,
        "asker.run",
        {"mode": "reach", "other_id": agents.interaction_id, "other_call_id": "c-agent"},
        s.revision,
        call_id="reach-1",
    )
    reached = await s.agent.terminal("reach-1")
    assert reached["payload"]["result"]["codes"] == [
        ErrorCode.INTERACTION_NOT_FOUND.value,  # get
        ErrorCode.INTERACTION_NOT_FOUND.value,  # cancel
        ErrorCode.APP_SCOPE_MISMATCH.value,  # as the parent of its own question
        ErrorCode.APP_SCOPE_MISMATCH.value,  # complete the Agent's call itself
    ]
    assert (await s.interaction("c-agent")).state == "presented"  # untouched
    rows = await audit_rows(
        s.reader,
        lambda rows: len([r for r in rows if r.event == "router.interaction_denied"]) >= 2,
        peer="miniapp:asker",
    )
    assert {r.subject_id for r in rows if r.event == "router.interaction_denied"} == {
        agents.interaction_id
    }


async def test_the_task_dashboard_asks_before_closing_a_task_not_done(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    await s.agent.client.call_tool(
        CONVERSATION,
        "task-dashboard.open",
        {"task_id": "t1", "title": "Write it"},
        s.revision,
        call_id="open-1",
    )
    await s.agent.pull("lineup.v1.tool.progress", lambda m: m["payload"]["call_id"] == "open-1")
    instance = "task-dashboard:open-1"
    await s.ui.request(
        "focus",
        UiEventRequest(instance_id=instance, event={"kind": "task.close"}),
        expect=UiEventAccepted,
    )
    with trio.fail_after(WAIT):
        while True:
            asked = [
                v
                for v in (await s.listed()).interactions
                if v.source == "miniapp" and v.instance_id == instance and v.kind == "confirm"
            ]
            if asked:
                break
            await trio.sleep(POLL)
    assert (await s.call_row("open-1")).state == "running"  # not closed before the answer
    await s.answer(asked[0].interaction_id, {"approved": True})
    result = await s.agent.terminal("open-1")
    assert result["payload"]["result"] == {"status": "cancelled"}
    closed = await s.agent.pull("lineup.v1.app_session.closed")
    assert closed["payload"]["instance_id"] == instance


async def test_a_miniapps_context_is_the_runtimes_word_on_its_scope_instance_and_conversation(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime_with_app(nursery, data_dir, Asker, title="Asker")
    s = await scene_on(nursery, runtime)
    await s.agent.client.call_tool(
        CONVERSATION, "asker.run", {"mode": "context"}, s.revision, call_id="ctx-1"
    )
    done = await s.agent.terminal("ctx-1")
    assert done["payload"]["result"]["context"] == {
        "app_scope": "asker",
        "instance_id": "asker:ctx-1",
        "conversation_id": CONVERSATION,
        "state": "foreground",  # a launch brings it forward
        "mode": "app",
        "app_version": "1.0.0",  # its manifest's
    }
