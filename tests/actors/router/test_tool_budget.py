"""A busy app's calls are bounded by the calls it is given, not by its own rate budget: the
router grants an app the answers a call asks of it (its take and its outcome) with the call,
and only those (`Bus.grant`): listing its calls grants nothing, or an app could mint budget."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio

from lineup.actors.kernel import Envelope, ErrorCode, LineUpError, Message, _connection
from lineup.actors.kernel._connection import Outcome
from lineup.actors.router._app_calls import AppCalls
from lineup.sdk import protocol as sdk
from lineup.tests.actors.router.test_tool_instance_end import (
    APP,
    SCOPE,
    agent_calls,
    call_state,
    pipeline_of,
    store_and_focus,
)
from lineup.tests.actors.store._harness import WAIT, StoreHarness, router_peer


@dataclass
class BudgetedApp:
    """An app whose call `call-1` the Agent made and the router told it of, its own budget
    spent: `ask` sends a request as the app and answers its refusal's code, if any."""

    ask: Callable[[Message], Awaitable[ErrorCode | None]]
    store: StoreHarness


async def budgeted_app(nursery: trio.Nursery, tmp_path: Path) -> BudgetedApp:
    store = await store_and_focus(nursery, tmp_path, ends=False)
    pipeline = pipeline_of(store.router)
    app_calls = AppCalls(pipeline.calls)

    def router(env: Envelope) -> Outcome:  # the router actor's handlers for an app's calls
        if isinstance(env.body, sdk.ToolAcceptRequest):
            return app_calls.accept_call(env.sender, env.body)
        if isinstance(env.body, sdk.ToolCompleteRequest):
            return app_calls.complete(env.sender, env.body)
        if isinstance(env.body, sdk.ToolPendingRequest):
            return app_calls.pending(env.sender)
        raise LineUpError(ErrorCode.NO_HANDLER, env.body.TYPE)

    store.router.set_handler(router)
    told = trio.Event()

    async def app_side(env: Envelope) -> Message | None:
        if isinstance(env.body, sdk.ToolCallEvent):
            told.set()
        return None

    app = await router_peer(nursery, store, APP, app_side)
    conn = store.router.connection(APP.name)
    assert conn is not None
    conn.tokens = 0.0  # the app has spent its own budget on other requests
    await nursery.start(pipeline.run)

    async def ask(body: Message) -> ErrorCode | None:
        expect = sdk.ToolPendingReply if isinstance(body, sdk.ToolPendingRequest) else None
        try:
            await app.request("router", body, expect=expect or sdk.CommandReceipt, timeout=WAIT)
        except LineUpError as exc:
            return exc.code
        return None

    with trio.fail_after(WAIT):
        await agent_calls(pipeline, f"{SCOPE}.direct")
        await told.wait()
    return BudgetedApp(ask=ask, store=store)


async def test_an_app_that_spent_its_budget_still_takes_and_answers_the_call_it_is_given(
    nursery: trio.Nursery, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_connection, "MINIAPP_RATE", 0.001)  # no refill within the test
    app = await budgeted_app(nursery, tmp_path)
    with trio.fail_after(WAIT):
        assert await app.ask(sdk.ToolAcceptRequest(call_id="call-1")) is None
        assert await app.ask(sdk.ToolCompleteRequest(call_id="call-1", result={})) is None
        assert await call_state(app.store) == ("submitted", None)
        # The grant was those two answers: the app's next request is its budget's again.
        assert await app.ask(sdk.ToolAcceptRequest(call_id="call-1")) is ErrorCode.RATE_LIMITED


async def test_listing_its_calls_grants_an_app_nothing_however_often_it_lists(
    nursery: trio.Nursery, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_connection, "MINIAPP_RATE", 0.001)  # no refill within the test
    app = await budgeted_app(nursery, tmp_path)
    with trio.fail_after(WAIT):
        # Its two granted answers, spent on listings (each lists call-1, still pending) ...
        assert await app.ask(sdk.ToolPendingRequest()) is None
        assert await app.ask(sdk.ToolPendingRequest()) is None
        # ... left it nothing more: had a listing granted its calls' answers, this would pass.
        assert await app.ask(sdk.ToolPendingRequest()) is ErrorCode.RATE_LIMITED
