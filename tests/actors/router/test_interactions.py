"""The router's interaction service (actors/router/_interactions.py) on the real store, in one
process: focus, the hostbridge, the transport and the MiniApps are an in-memory fake of the
router's bus, which records what the router told them."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
import trio

from lineup import wire
from lineup.actors.focus.messages import (
    FindInstanceRequest,
    InstanceReply,
    InventoryReply,
    InventoryRequest,
)
from lineup.actors.kernel import (
    ActorKind,
    AuditRecord,
    Bus,
    ErrorCode,
    Identity,
    LineUpError,
    message_allowed,
)
from lineup.actors.kernel import Message as Msg
from lineup.actors.router import _deadlines
from lineup.actors.router import _ids as ids
from lineup.actors.router._app_questions import AppQuestions
from lineup.actors.router._app_sessions import AppSessions
from lineup.actors.router._envelope import RuntimeEnvelope, Scope, Sender, Target
from lineup.actors.router._interactions import (
    MAX_OPEN_AGENT,
    MAX_OPEN_PER_APP,
    InteractionService,
)
from lineup.actors.router._inventory import Inventory
from lineup.actors.router._lifecycle import InstanceLifecycle
from lineup.actors.router._pipeline import ToolPipeline, pointer_of
from lineup.actors.router._tools import ToolCalls
from lineup.actors.router.messages import InteractionAnswerRequest
from lineup.actors.store.messages import (
    AppSessionGetReply,
    AppSessionGetRequest,
    InteractionGetReply,
    InteractionGetRequest,
    InteractionRow,
    OutboxPendingReply,
    OutboxPendingRequest,
    OutboxRow,
    ToolCallFacts,
    ToolCallGetReply,
    ToolCallGetRequest,
    ToolCallRow,
)
from lineup.actors.transport.messages import AppServerSession
from lineup.hostbridge.messages import AppSessionsUpdatedEvent, InteractionsUpdatedEvent
from lineup.sdk import protocol as sdk
from lineup.tests.actors.store._harness import StoreHarness, start_store
from lineup.tests.support.tree import audit_rows

SESSION = AppServerSession(conversation_id="conv-1", user_id="user-1", agent_id="agent-1")
INSTANCE = "task-dashboard:open-1"
APP = Identity(ActorKind.MINIAPP, "miniapp:task-dashboard")
OTHER_APP = Identity(ActorKind.MINIAPP, "miniapp:other")
CONFIRM = {"title": "Deploy", "prompt": "Deploy now?"}
CHOICE = {
    "title": "Lunch",
    "prompt": "Which?",
    "mode": "single-choice",
    "actions": [{"id": "soup", "label": "Soup"}, {"id": "salad", "label": "Salad"}],
}


@dataclass
class FakeBus:
    """The router's bus: the store is the real one; everyone else is recorded."""

    store: Bus
    told: list[tuple[str, Msg]] = field(default_factory=list)
    audits: list[AuditRecord] = field(default_factory=list)
    live: dict[str, str] = field(default_factory=lambda: {INSTANCE: "task-dashboard"})

    async def request(self, peer: str, body: Msg, *, expect: type[Any], **_: Any) -> Any:
        if peer == "store":
            return await self.store.request("store", body, expect=expect)
        if peer == "focus" and isinstance(body, InventoryRequest):  # none of its tools has a UI
            return InventoryReply(revision="0", tools=(), disabled_tools=())
        assert peer == "focus" and isinstance(body, FindInstanceRequest)
        if self.live.get(body.instance_id or "") != body.app_scope:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, str(body.instance_id))
        return InstanceReply(
            instance_id=str(body.instance_id), app_scope=body.app_scope, state="foreground"
        )

    async def tell(self, peer: str, body: Msg, **_: Any) -> ErrorCode | None:
        self.told.append((peer, body))
        return None

    def grant(self, peer: str, frames: int) -> None:
        """No rate budget here to grant answers beside."""

    def audit(self, record: AuditRecord) -> None:
        self.audits.append(record)
        self.store.audit(record)  # written as a real bus writes it: read back by `audit_rows`

    def shown(self, interaction_id: str) -> list[str]:
        """The states the hostbridge was told of the interaction, in order."""
        return [
            view.state
            for peer, event in self.told
            if peer == "hostbridge" and isinstance(event, InteractionsUpdatedEvent)
            for view in event.interactions
            if view.interaction_id == interaction_id
        ]


@dataclass
class Router:
    service: InteractionService
    questions: AppQuestions
    sessions: AppSessions
    lifecycle: InstanceLifecycle
    calls: ToolCalls
    tools: ToolPipeline
    bus: FakeBus
    harness: StoreHarness  # reads what the router may not (the outbox, as the transport)

    async def ask(
        self,
        call_id: str,
        tool: str,
        arguments: dict[str, Any],
        *,
        agent: str = "agent-1",
        context: object = None,
    ) -> None:
        facts = ToolCallFacts(
            tool=tool,
            inventory_revision="1",
            app_scope="interaction",
            conversation_id="conv-1",
            handling="interactive",
            input=arguments,
            timeout_ms=86_400_000,
        )
        # As the router's inbound side hands a checked interactive call over (`_inbound`).
        asked = envelope(agent, {"call_id": call_id})
        refused = await self.service.ask(call_id, facts, asked, context)
        if refused is not None:
            await self.tools.refuse(call_id, facts, refused.code, pointer=pointer_of(refused))

    async def interaction(self, call_id: str) -> InteractionRow | None:
        reply = await self.bus.store.request(
            "store", InteractionGetRequest(call_id=call_id), expect=InteractionGetReply
        )
        return reply.interaction

    async def call(self, call_id: str) -> ToolCallRow:
        reply = await self.bus.store.request(
            "store", ToolCallGetRequest(call_id=call_id), expect=ToolCallGetReply
        )
        assert reply.call is not None
        return reply.call

    async def answer(self, interaction_id: str, answer: dict[str, Any]) -> Any:
        return await self.service.answer(
            InteractionAnswerRequest(interaction_id=interaction_id, answer=answer)
        )

    async def terminal_rows(self, call_id: str) -> list[dict[str, Any]]:
        return [r.body for r in await self.outbox() if r.outbox_id == ids.terminal_id(call_id)]

    async def outbox(self) -> tuple[OutboxRow, ...]:
        pending = await self.harness.ask(OutboxPendingRequest(limit=1000), OutboxPendingReply)
        return pending.rows


def envelope(agent: str, payload: dict[str, Any]) -> RuntimeEnvelope:
    return RuntimeEnvelope(
        id=f"env-{payload['call_id']}-{agent}",
        type="lineup.v1.tool.call",
        timestamp="2026-01-01T00:00:00Z",
        sender=Sender(kind="agent", id=agent),
        target=Target(kind="app", app_scope="chat"),
        scope=Scope(app_scope="chat", conversation_id="conv-1"),
        payload=payload,
    )


def make_router(harness: StoreHarness) -> Router:
    bus = FakeBus(harness.router)

    async def session() -> AppServerSession:
        return SESSION

    me = Identity(ActorKind.ROUTER, "router")
    service = InteractionService(cast(Bus, bus), me, session)
    inventory = Inventory(cast(Bus, bus), session)
    calls = ToolCalls(cast(Bus, bus), me, session, inventory)
    tools = ToolPipeline(calls, inventory)
    sessions = AppSessions(cast(Bus, bus), session)
    lifecycle = InstanceLifecycle(cast(Bus, bus), calls, service, sessions)
    questions = AppQuestions(service)
    return Router(service, questions, sessions, lifecycle, calls, tools, bus, harness)


@pytest.fixture
async def router(nursery: trio.Nursery, tmp_path: Path) -> Router:
    return make_router(await start_store(nursery, tmp_path / "data"))


async def test_an_ask_records_the_question_and_its_call_in_one_step_then_presents_it(
    router: Router,
) -> None:
    await router.ask("c1", "interaction.confirm", CONFIRM)
    row = await router.interaction("c1")
    assert row is not None
    assert (row.state, row.source, row.owner_scope, row.agent_id, row.conversation_id) == (
        "presented",
        "agent_tool",
        "interaction",
        "agent-1",
        "conv-1",
    )
    call = await router.call("c1")
    assert (call.state, call.handling, call.app_scope, call.timeout_ms) == (
        "running",
        "interactive",
        "interaction",
        900_000,
    )
    assert row.expires_at is not None
    assert row.expires_at == pytest.approx(time.time() + 900, abs=5)
    assert router.bus.shown(row.interaction_id) == ["pending", "presented"]


async def test_a_notice_is_answered_at_once_with_its_call_result(router: Router) -> None:
    await router.ask("n1", "interaction.notice", {"title": "FYI", "message": "Done."})
    row = await router.interaction("n1")
    assert row is not None
    assert (row.state, row.result, row.expires_at) == ("submitted", {"acknowledged": False}, None)
    call = await router.call("n1")
    assert (call.state, call.result) == ("submitted", {"acknowledged": False})
    [result] = await router.terminal_rows("n1")
    assert result["payload"] == {"call_id": "n1", "result": {"acknowledged": False}}


async def test_the_first_ending_wins_and_a_later_answer_changes_nothing(router: Router) -> None:
    await router.ask("c1", "interaction.choice", CHOICE)
    row = await router.interaction("c1")
    assert row is not None
    await router.service._expire(row.interaction_id)
    late = await router.answer(row.interaction_id, {"action_ids": ["soup"]})
    assert (late.changed, late.interaction.state) == (False, "expired")
    call = await router.call("c1")
    assert (call.state, call.error_code) == ("expired", ErrorCode.OPERATION_EXPIRED.value)
    assert len(await router.terminal_rows("c1")) == 1

    await router.ask("c2", "interaction.choice", CHOICE)
    other = await router.interaction("c2")
    assert other is not None
    first = await router.answer(other.interaction_id, {"action_ids": ["salad", "salad"]})
    assert (first.changed, first.interaction.result) == (True, {"action_ids": ["salad"]})
    # Submitted (its result not yet delivered: no transport here) is no longer waiting.
    again = await router.answer(other.interaction_id, {"action_ids": ["soup"]})
    assert (again.changed, again.interaction.state) == (False, "submitted")
    await router.service._expire(other.interaction_id)  # too late: answered
    assert (await router.call("c2")).state == "submitted"
    assert [r["payload"]["result"] for r in await router.terminal_rows("c2")] == [
        {"action_ids": ["salad"]}
    ]


async def test_an_invalid_answer_records_nothing(router: Router) -> None:
    await router.ask("c1", "interaction.confirm", CONFIRM)
    row = await router.interaction("c1")
    assert row is not None
    for answer in ({"approved": "yes"}, {"action_ids": ["a"]}, {"cancelled": True}):
        with pytest.raises(LineUpError) as refused:
            await router.answer(row.interaction_id, answer)
        assert refused.value.code is ErrorCode.ANSWER_INVALID
    assert (await router.interaction("c1")) == row


async def test_a_timer_rebuilt_at_start_expires_a_question_once(
    router: Router, nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    await router.ask("c1", "interaction.confirm", {**CONFIRM, "expires_in_ms": 60_000})

    class Later:  # the next router starts a minute and a bit later
        @staticmethod
        def time() -> float:
            return time.time() + 61

    monkeypatch.setattr(_deadlines, "time", Later)  # the clock the deadlines read
    successor = make_router(router.harness)
    await nursery.start(successor.service.run)
    with trio.fail_after(5):
        while (row := await router.interaction("c1")) is not None and row.state != "expired":
            await trio.testing.wait_all_tasks_blocked()
    assert row is not None and row.terminal_code == ErrorCode.OPERATION_EXPIRED.value
    assert (await router.call("c1")).state == "expired"
    assert len(await router.terminal_rows("c1")) == 1


async def test_an_app_session_context_of_another_agent_is_refused_and_asks_nothing(
    router: Router,
) -> None:
    await router.sessions.opened(INSTANCE, "task-dashboard")
    session_id = ids.app_session_id(INSTANCE)
    await router.ask(
        "c1",
        "interaction.confirm",
        CONFIRM,
        agent="agent-2",
        context={"app_session_id": session_id},
    )
    assert await router.interaction("c1") is None
    call = await router.call("c1")
    assert (call.state, call.error_code) == ("rejected", ErrorCode.APP_SESSION_INVALID.value)

    await router.ask("c2", "interaction.confirm", CONFIRM, context={"app_session_id": session_id})
    row = await router.interaction("c2")
    assert row is not None
    assert (row.app_session_id, row.instance_id) == (session_id, INSTANCE)


async def test_closing_an_instance_names_its_pending_questions_and_ends_the_apps_own(
    router: Router,
) -> None:
    await router.sessions.opened(INSTANCE, "task-dashboard")
    await router.sessions.opened(INSTANCE, "task-dashboard")  # told twice: one session
    session_id = ids.app_session_id(INSTANCE)
    await router.ask("c1", "interaction.confirm", CONFIRM, context={"app_session_id": session_id})
    # Answered, its result not yet delivered (no transport here): submitted, not pending.
    await router.ask("c2", "interaction.confirm", CONFIRM, context={"app_session_id": session_id})
    answered = await router.interaction("c2")
    assert answered is not None
    await router.answer(answered.interaction_id, {"approved": True})
    own = await router.questions.request(
        APP,
        sdk.InteractionAskRequest(
            instance_id=INSTANCE, request_id="r1", request={"kind": "confirm", **CONFIRM}
        ),
    )
    await router.lifecycle.close(INSTANCE, "task-dashboard")
    await router.lifecycle.close(INSTANCE, "task-dashboard")  # a repeat: nothing more

    session = await router.bus.store.request(
        "store", AppSessionGetRequest(app_session_id=session_id), expect=AppSessionGetReply
    )
    assert session.session is not None and session.session.state == "closed"
    rows = await router.outbox()
    closed = [r.body for r in rows if r.kind == "lineup.v1.app_session.closed"]
    assert [c["payload"]["pending_interaction_call_ids"] for c in closed] == [["c1"]]
    assert len([r for r in rows if r.kind == "lineup.v1.app_session.opened"]) == 1
    agents = await router.interaction("c1")
    assert agents is not None and agents.state == "presented"  # the main IM keeps it
    mine = await router.questions.get(
        APP, sdk.InteractionGetRequest(interaction_id=own.interaction.interaction_id)
    )
    assert (mine.interaction.state, mine.interaction.terminal_code) == ("cancelled", "app_closed")
    told = [e for p, e in router.bus.told if p == "miniapp:task-dashboard"]
    assert [e.interaction.state for e in told if isinstance(e, sdk.InteractionUpdatedEvent)] == [
        "cancelled"
    ]
    sessions = [e for p, e in router.bus.told if isinstance(e, AppSessionsUpdatedEvent)]
    assert [s.state for e in sessions for s in e.sessions] == ["open", "closed"]


async def test_a_miniapps_answer_goes_to_it_alone_and_another_app_cannot_reach_it(
    router: Router,
) -> None:
    asked = await router.questions.request(
        APP,
        sdk.InteractionAskRequest(
            instance_id=INSTANCE, request_id="r1", request={"kind": "choice", **CHOICE}
        ),
    )
    interaction_id = asked.interaction.interaction_id
    again = await router.questions.request(  # a retry asks nothing new
        APP,
        sdk.InteractionAskRequest(
            instance_id=INSTANCE, request_id="r1", request={"kind": "choice", **CHOICE}
        ),
    )
    assert (again.interaction.interaction_id, again.changed) == (interaction_id, False)
    for attempt in (
        router.questions.get(OTHER_APP, sdk.InteractionGetRequest(interaction_id=interaction_id)),
        router.questions.cancel(
            OTHER_APP, sdk.InteractionCancelRequest(interaction_id=interaction_id)
        ),
    ):
        with pytest.raises(LineUpError) as refused:
            await attempt
        assert refused.value.code is ErrorCode.INTERACTION_NOT_FOUND
    denied = [a for a in router.bus.audits if a.event == "router.interaction_denied"]
    assert [(a.peer, a.subject_id) for a in denied] == [(OTHER_APP.name, interaction_id)] * 2
    with pytest.raises(LineUpError) as foreign:  # another app's instance is not its own
        await router.questions.request(
            OTHER_APP,
            sdk.InteractionAskRequest(
                instance_id=INSTANCE, request_id="r2", request={"kind": "confirm", **CONFIRM}
            ),
        )
    assert foreign.value.code is ErrorCode.APP_INSTANCE_NOT_FOUND

    await router.answer(interaction_id, {"action_ids": ["soup"]})
    told = [(p, e) for p, e in router.bus.told if isinstance(e, sdk.InteractionUpdatedEvent)]
    assert [(p, e.interaction.result) for p, e in told] == [
        ("miniapp:task-dashboard", {"action_ids": ["soup"]})
    ]
    settled = await router.questions.get(
        APP, sdk.InteractionGetRequest(interaction_id=interaction_id)
    )
    assert settled.interaction.state == "completed"  # told: delivered
    assert [p for p, _ in router.bus.told if p.startswith("miniapp:")] == ["miniapp:task-dashboard"]


async def test_a_miniapp_naming_an_instance_not_its_own_is_refused_and_audited_by_ids_only(
    router: Router,
) -> None:
    asked = sdk.InteractionAskRequest(
        instance_id=INSTANCE, request_id="r1", request={"kind": "confirm", **CONFIRM}
    )
    with pytest.raises(LineUpError) as refused:  # INSTANCE is live, and the dashboard's
        await router.questions.request(OTHER_APP, asked)
    assert refused.value.code is ErrorCode.APP_INSTANCE_NOT_FOUND
    rows = await audit_rows(
        router.bus.store,
        lambda rows: any(r.event == "router.interaction_refused" for r in rows),
        event_prefix="router.interaction_",
        peer=OTHER_APP.name,
    )
    assert [(r.event, r.actor, r.code, r.message_type, r.subject_id) for r in rows] == [
        (
            "router.interaction_refused",
            "router",
            ErrorCode.APP_INSTANCE_NOT_FOUND.value,
            asked.TYPE,
            INSTANCE,
        )
    ]
    assert CONFIRM["prompt"] not in rows[0].model_dump_json()  # ids and the code, never text
    nothing = await router.bus.store.request(
        "store",
        InteractionGetRequest(interaction_id=ids.app_interaction_id("other", INSTANCE, "r1")),
        expect=InteractionGetReply,
    )
    assert nothing.interaction is None  # no question was created


async def test_the_agents_open_questions_are_bounded_and_a_repeat_of_one_still_answers(
    router: Router,
) -> None:
    for n in range(MAX_OPEN_AGENT):
        await router.ask(f"c{n}", "interaction.confirm", CONFIRM)
    await router.ask("c-over", "interaction.confirm", CONFIRM)
    over = await router.call("c-over")
    assert (over.state, over.error_code) == ("rejected", ErrorCode.QUOTA_EXCEEDED.value)
    assert await router.interaction("c-over") is None  # nothing was asked
    await router.ask("c0", "interaction.confirm", CONFIRM)  # a repeat of an open one: no quota
    assert (await router.interaction("c0")) is not None
    first = await router.interaction("c0")
    assert first is not None
    await router.answer(first.interaction_id, {"approved": True})  # one closes: room again
    await router.ask("c-room", "interaction.confirm", CONFIRM)
    assert (await router.call("c-room")).state == "running"


async def test_a_miniapps_open_questions_are_bounded_and_refused_past_it_audited(
    router: Router,
) -> None:
    def ask(request_id: str) -> sdk.InteractionAskRequest:
        return sdk.InteractionAskRequest(
            instance_id=INSTANCE, request_id=request_id, request={"kind": "confirm", **CONFIRM}
        )

    for n in range(MAX_OPEN_PER_APP):
        await router.questions.request(APP, ask(f"r{n}"))
    with pytest.raises(LineUpError) as refused:
        await router.questions.request(APP, ask("r-over"))
    assert refused.value.code is ErrorCode.QUOTA_EXCEEDED
    again = await router.questions.request(APP, ask("r0"))  # a retry of an open one answers
    assert again.changed is False
    rows = [a for a in router.bus.audits if a.event == "router.interaction_refused"]
    assert [(a.peer, a.code) for a in rows] == [(APP.name, ErrorCode.QUOTA_EXCEEDED.value)]
    await router.ask("agent-still", "interaction.confirm", CONFIRM)  # the Agent's are apart
    assert (await router.call("agent-still")).state == "running"


async def test_a_parent_call_must_be_one_of_the_instances_own_open_calls(router: Router) -> None:
    await router.ask("agent-call", "interaction.confirm", CONFIRM)
    with pytest.raises(LineUpError) as refused:
        await router.questions.request(
            APP,
            sdk.InteractionAskRequest(
                instance_id=INSTANCE,
                request_id="r1",
                request={"kind": "confirm", **CONFIRM},
                parent_call_id="agent-call",
            ),
        )
    assert refused.value.code is ErrorCode.APP_SCOPE_MISMATCH


async def test_a_dismiss_ends_once_and_a_replay_is_an_audited_receipt(router: Router) -> None:
    await router.ask("c1", "interaction.confirm", CONFIRM)
    dismiss = envelope("agent-1", {"control_id": "ctl", "call_id": "c1"})
    payload = wire.DismissPayload(control_id="ctl", call_id="c1")
    await router.service.dismiss(dismiss, payload, "transport")
    await router.service.dismiss(dismiss, payload, "transport")
    call = await router.call("c1")
    assert (call.state, call.error_code) == (
        "cancelled",
        ErrorCode.INTERACTION_DISMISSED.value,
    )
    assert len(await router.terminal_rows("c1")) == 1
    events = [
        a.event for a in router.bus.audits if a.message_type == "lineup.v1.interaction.dismiss"
    ]
    assert events == ["router.interaction_dismissed", "router.dismiss_repeated"]
    with pytest.raises(LineUpError) as foreign:  # another Agent's dismiss finds nothing
        await router.service.dismiss(
            envelope("agent-2", {"control_id": "ctl", "call_id": "c1"}), payload, "transport"
        )
    assert foreign.value.code is ErrorCode.INTERACTION_NOT_FOUND


def test_ids_are_deterministic() -> None:
    assert ids.interaction_id("c1") == ids.interaction_id("c1") != ids.interaction_id("c2")
    assert ids.app_interaction_id("a", "i", "r") != ids.app_interaction_id("b", "i", "r")
    assert ids.app_session_id("task-dashboard:x") == "lu:app_session:task-dashboard:x"


def test_only_the_hostbridge_may_answer_and_only_an_app_may_ask_its_own() -> None:
    answer = InteractionAnswerRequest.model_fields["type"].default
    assert message_allowed(ActorKind.HOSTBRIDGE, ActorKind.ROUTER, answer)
    for kind in (ActorKind.MINIAPP, ActorKind.TRANSPORT, ActorKind.FOCUS):
        assert not message_allowed(kind, ActorKind.ROUTER, answer), kind
    ask = sdk.InteractionAskRequest.model_fields["type"].default
    assert message_allowed(ActorKind.MINIAPP, ActorKind.ROUTER, ask)
    assert not message_allowed(ActorKind.HOSTBRIDGE, ActorKind.ROUTER, ask)
