"""App sub-sessions (actors/router/_app_sessions.py) on the real store, in one process, with the
in-memory fake of the router's bus of `test_interactions`: an instance's end converges its calls
by the app_closed rule before its sub-session closes (seed 000 §7.3), whether told by focus or
found by the sweep of a router started after one that died in between."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
import trio

from lineup.actors.kernel import Bus, ErrorCode, LineUpError
from lineup.actors.router import _ids as ids
from lineup.actors.router._app_sessions import AppSessions
from lineup.actors.store.messages import AppSessionGetReply, AppSessionGetRequest, ToolCallFacts
from lineup.actors.transport.messages import AppServerSession
from lineup.tests.actors.store._harness import start_store

from .test_interactions import CONFIRM, INSTANCE, Router, make_router

SCOPE = "task-dashboard"
CLOSED = "lineup.v1.app_session.closed"
SESSION_ID = ids.app_session_id(INSTANCE)


@pytest.fixture
async def router(nursery: trio.Nursery, tmp_path: Path) -> Router:
    return make_router(await start_store(nursery, tmp_path / "data"))


async def open_call(router: Router, call_id: str) -> None:
    """A call of the dashboard handed to INSTANCE, not decided yet."""
    facts = ToolCallFacts(
        tool="task-dashboard.update",
        inventory_revision="1",
        app_scope=SCOPE,
        conversation_id="conv-1",
        handling="direct",
        input={"task_id": "t1", "progress": 10},
        timeout_ms=60_000,
    )
    await router.calls.step(call_id, "hand_over", new=facts, instance_id=INSTANCE)
    assert (await router.call(call_id)).state == "waiting_for_app"


async def with_a_call_and_a_question(router: Router) -> None:
    await router.harness.put_live_instances(SCOPE, INSTANCE)
    await router.sessions.opened(INSTANCE, SCOPE)
    await router.ask("q1", "interaction.confirm", CONFIRM, context={"app_session_id": SESSION_ID})
    await open_call(router, "d1")


async def assert_closed_after_the_calls(router: Router) -> None:
    call = await router.call("d1")
    assert (call.state, call.error_code) == ("cancelled", "app_closed")
    rows = await router.outbox()
    order = [r.outbox_id for r in rows]
    closed = [r for r in rows if r.kind == CLOSED]
    assert len(closed) == 1
    assert order.index(ids.terminal_id("d1")) < order.index(closed[0].outbox_id)
    assert closed[0].body["payload"]["pending_interaction_call_ids"] == ["q1"]
    session = await router.bus.store.request(
        "store", AppSessionGetRequest(app_session_id=SESSION_ID), expect=AppSessionGetReply
    )
    assert session.session is not None and session.session.state == "closed"
    question = await router.interaction("q1")
    assert question is not None and question.state == "presented"  # the main IM keeps it


async def test_an_instances_end_writes_its_calls_errors_before_its_sub_sessions_close(
    router: Router,
) -> None:
    await with_a_call_and_a_question(router)
    await router.harness.end_instance(SCOPE, INSTANCE)  # focus records an end, then tells

    await router.lifecycle.ended(INSTANCE, SCOPE, failed=True)
    await router.lifecycle.ended(INSTANCE, SCOPE)  # told twice: nothing more

    await assert_closed_after_the_calls(router)


async def test_the_sweep_of_a_router_started_after_a_lost_end_converges_before_it_closes(
    router: Router,
) -> None:
    # The instance ended (no live instance in the store) and the router that was told died
    # before it did anything: its successor's sweep finds the open sub-session.
    await with_a_call_and_a_question(router)
    await router.harness.end_instance(SCOPE, INSTANCE)

    successor = make_router(router.harness)
    await successor.lifecycle.sweep()
    await successor.lifecycle.sweep()  # again (focus's recovery, a login): a repeat

    await assert_closed_after_the_calls(router)


async def test_an_open_the_store_did_not_answer_is_an_error_not_a_quiet_skip(
    router: Router,
) -> None:
    """Only "never logged in" waits quietly for the sweep after the login; a session read that
    timed out is raised, so that the router sweeps again at once (`_guarded_event`) instead of
    leaving the sub-session unopened until a login that may never come."""

    async def timed_out() -> AppServerSession:
        raise LineUpError(ErrorCode.DEADLINE_EXCEEDED, "the store did not answer")

    async def never_logged_in() -> AppServerSession:
        raise LineUpError(ErrorCode.NOT_CONNECTED, "no AppServer session yet")

    slow = AppSessions(cast(Bus, router.bus), timed_out)
    with pytest.raises(LineUpError) as raised:
        await slow.opened(INSTANCE, SCOPE)
    assert raised.value.code is ErrorCode.DEADLINE_EXCEEDED

    offline = AppSessions(cast(Bus, router.bus), never_logged_in)
    await offline.opened(INSTANCE, SCOPE)
    session = await router.bus.store.request(
        "store", AppSessionGetRequest(app_session_id=SESSION_ID), expect=AppSessionGetReply
    )
    assert session.session is None
