"""A capability request waiting on the user when the gateway is SIGKILLed ends once, with one
final audit row (issue 27): its requester asks again under its id and the restarted gateway
asks the user again and ends it; or its requester has gone, and the restarted gateway ends it
`failed actor_restarted` once nobody can ask again. Real processes, a real SIGKILL, the store's
own rows; the user is a peer in the hostbridge's place (`tests/support/capability_user.py`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from lineup.actors.kernel import ActorKind
from lineup.actors.store.messages import AuditRecord
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.capability_user import User, start_with_user
from lineup.tests.support.runtime import CONVERSATION, agent_client, kill_and_wait_restarted
from lineup.tests.support.tree import attach, audit_rows

WAIT = 20.0
FINAL = ("completed", "refused", "failed", "cancelled")


def finals(rows: tuple[AuditRecord, ...], request_id: str) -> list[tuple[str, str | None]]:
    return [
        (r.event, r.code)
        for r in rows
        if r.subject_id == request_id
        and r.event.startswith("gateway.capability.")
        and r.event.rsplit(".", 1)[-1] in FINAL
    ]


async def start(nursery: trio.Nursery, data_dir: Path) -> tuple[Any, User, AgentView, str, Any]:
    runtime, user = await start_with_user(nursery, data_dir, {"orphan_grace_s": 2.0})
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT)
    reader = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "reader")
    return runtime, user, agent, await agent.inventory(), reader


async def ask(
    agent: AgentView, revision: str, request_id: str, call_id: str | None = None, **options: Any
) -> str:
    arguments = {
        "capability": "notification.show",
        "purpose": "tell you",
        "input_json": json.dumps({"title": "t"}),
        "request_id": request_id,
        **options,
    }
    call_id = call_id or f"c-{request_id}"
    await agent.client.call_tool(CONVERSATION, "capapp.ask", arguments, revision, call_id=call_id)
    return call_id


async def results(agent: AgentView, call_id: str) -> list[dict[str, Any]]:
    done = await agent.terminal(call_id)
    results: list[dict[str, Any]] = json.loads(done["payload"]["result"]["results_json"])
    return results


async def test_a_request_asked_again_after_the_kill_is_asked_of_the_user_and_ends_once(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime, user, agent, revision, reader = await start(nursery, data_dir)
    call_id = await ask(agent, revision, "again-1")
    first = await user.prompt("notification.show", 0)

    await kill_and_wait_restarted(runtime, "gateway", wait=WAIT)
    # The app got no answer and asks again under the same id (its channel does): the row is
    # adopted, and the user is asked again (the first prompt went with the killed gateway).
    second = await user.prompt("notification.show", 1)
    assert second.prompt_id != first.prompt_id
    await user.answer(second.prompt_id, "allow_once")
    run = await user.run("notification.show", 0)
    await user.done(run.run_id, "completed")

    got = await results(agent, call_id)
    assert [r.get("status") for r in got if "status" in r] == ["completed"]
    rows = await audit_rows(reader, lambda rows: bool(finals(rows, "again-1")))
    assert finals(rows, "again-1") == [("gateway.capability.completed", "completed")]


async def test_a_request_whose_requester_has_gone_ends_actor_restarted_once(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime, user, agent, revision, reader = await start(nursery, data_dir)
    call_id = await ask(agent, revision, "gone-1", give_up_after_s=0.5)
    await user.prompt("notification.show", 0)
    # The requester stops waiting (nobody asks again under the id); then the gateway that
    # holds the request, still waiting on the user, is killed.
    assert await results(agent, call_id) == [{"error": "given_up"}]
    await kill_and_wait_restarted(runtime, "gateway", wait=WAIT)
    # Nothing else ends it: the restarted gateway does, once its grace (2 s here) is over.
    rows = await audit_rows(reader, lambda rows: bool(finals(rows, "gone-1")))
    assert finals(rows, "gone-1") == [("gateway.capability.failed", "actor_restarted")]
    # Asked again later under the same id, it is answered from its row, not asked again.
    again = await ask(agent, revision, "gone-1", call_id="c-gone-1-later")
    (result,) = await results(agent, again)
    assert (result["status"], result["code"]) == ("failed", "actor_restarted")
    rows = await audit_rows(reader, lambda rows: True)
    assert finals(rows, "gone-1") == [("gateway.capability.failed", "actor_restarted")]
    assert len(user.prompts) == 1
