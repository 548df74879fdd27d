"""One Agent, as the MVP says (seed 000 §7.3): the logged-in session's `agent_id` is stored with
every interaction (the Agent's, in the main IM or a sub-session, and a MiniApp's own) and every
app sub-session. Through real processes; the rows are read from the store's file after the
runtime stopped, and compared with what the AppServer answers the user's login."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import trio

from lineup.actors.store._db import DB_FILENAME
from lineup.tests.actors.store._harness import independent_rows
from lineup.tests.support.asker_app import Asker
from lineup.tests.support.interactions import CONFIRM, scene_on
from lineup.tests.support.runtime import AGENT_ID, CONVERSATION, start_runtime_with_app

OPENED = "lineup.v1.app_session.opened"
INSTANCE = "asker:a-ask"


async def test_the_logged_in_agent_is_stored_with_every_interaction_and_sub_session(
    data_dir: Path,
) -> None:
    async with trio.open_nursery() as run:
        runtime = await start_runtime_with_app(run, data_dir, Asker, title="Asker")
        s = await scene_on(run, runtime)
        async with httpx.AsyncClient(base_url=runtime.appserver_url) as http:
            login = await http.post("/v1/auth/login", json={"username": "demo", "password": "demo"})
        login.raise_for_status()
        appserver_agent = login.json()["agent_id"]

        # The app asks its own question (its launch opens the instance's sub-session)...
        await s.agent.client.call_tool(
            CONVERSATION, "asker.run", {"mode": "ask"}, s.revision, call_id="a-ask"
        )
        assert (await s.agent.terminal("a-ask"))["type"] == "lineup.v1.tool.result"
        opened = await s.agent.pull(OPENED, lambda m: m["payload"]["instance_id"] == INSTANCE)
        session_id = opened["payload"]["app_session_id"]
        # ...and the Agent asks one in that sub-session and one in the main IM.
        context = {"app_session_context": {"app_session_id": session_id}}
        await s.ask("interaction.confirm", {**CONFIRM, **context}, "c-sub")
        await s.ask("interaction.confirm", CONFIRM, "c-main")
        run.cancel_scope.cancel()

    assert appserver_agent == AGENT_ID  # the AppServer's Agent of this user's conversation
    assert opened["payload"]["agent_id"] == appserver_agent
    db = data_dir / "rt" / DB_FILENAME
    [(cursor,)] = independent_rows(db, "SELECT value FROM cursors WHERE name = 'transport.session'")
    assert isinstance(cursor, str)  # a JSON text
    assert json.loads(cursor)["agent_id"] == appserver_agent  # the session the runtime holds
    interactions = independent_rows(
        db,
        "SELECT source, instance_id, call_id, app_session_id, agent_id FROM interactions"
        " ORDER BY created_at",
    )
    assert interactions == [
        ("miniapp", INSTANCE, None, None, appserver_agent),
        ("agent_tool", INSTANCE, "c-sub", session_id, appserver_agent),
        ("agent_tool", None, "c-main", None, appserver_agent),
    ]
    sessions = independent_rows(
        db, "SELECT app_session_id, instance_id, agent_id FROM app_sessions"
    )
    assert sessions == [(session_id, INSTANCE, appserver_agent)]
