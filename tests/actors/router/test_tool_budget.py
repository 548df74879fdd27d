"""A busy app's calls are bounded by the calls it is given, not by its own rate budget: the
router grants an app the answers a call asks of it (its take and its outcome) with the call,
and only those (`Bus.grant`)."""

from __future__ import annotations

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
from lineup.tests.actors.store._harness import WAIT, router_peer


async def test_an_app_that_spent_its_budget_still_takes_and_answers_the_call_it_is_given(
    nursery: trio.Nursery, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_connection, "MINIAPP_RATE", 0.001)  # no refill within the test
    store = await store_and_focus(nursery, tmp_path, ends=False)
    pipeline = pipeline_of(store.router)
    app_calls = AppCalls(pipeline.calls)

    def router(env: Envelope) -> Outcome:  # the router actor's handlers for an app's calls
        if isinstance(env.body, sdk.ToolAcceptRequest):
            return app_calls.accept_call(env.sender, env.body)
        if isinstance(env.body, sdk.ToolCompleteRequest):
            return app_calls.complete(env.sender, env.body)
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
        try:
            await app.request("router", body, expect=sdk.CommandReceipt, timeout=WAIT)
        except LineUpError as exc:
            return exc.code
        return None

    with trio.fail_after(WAIT):
        await agent_calls(pipeline, f"{SCOPE}.direct")
        await told.wait()
        assert await ask(sdk.ToolAcceptRequest(call_id="call-1")) is None
        assert await ask(sdk.ToolCompleteRequest(call_id="call-1", result={})) is None
        assert await call_state(store) == ("submitted", None)
        # The grant was those two answers: the app's next request is its budget's again.
        assert await ask(sdk.ToolAcceptRequest(call_id="call-1")) is ErrorCode.RATE_LIMITED
