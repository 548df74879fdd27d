"""Agent messages the router refuses by what is installed, with real processes."""

from __future__ import annotations

from pathlib import Path

import trio

from lineup.actors.kernel import ActorKind
from lineup.actors.store.messages import InboxListReply, InboxListRequest
from lineup.tests.e2e.test_im_link import texts
from lineup.tests.support.runtime import AGENT_ID, CONVERSATION, agent_client, start_runtime
from lineup.tests.support.shell import connect_shell
from lineup.tests.support.tree import attach, audit_rows

WAIT = 10.0


async def test_a_message_for_an_app_that_is_not_installed_is_refused_audited_and_kept_nowhere(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    shell = await connect_shell(nursery, runtime.shell_url)
    agent = await agent_client(nursery, runtime.appserver_url)
    stray = {
        "v": 1,
        "id": "stray-1",
        "type": "lineup.v1.text",
        "conversation_id": CONVERSATION,
        "app_scope": "not-installed",
        "sender": {"kind": "agent", "id": AGENT_ID},
        "payload": {"markdown": "for nobody"},
    }
    await agent.send(stray, idempotency_key="stray-1")
    await agent.say(CONVERSATION, "for the chat", idempotency_key="good-1")
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: texts(s, "agent") == ["for the chat"])
    router = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "auditor")
    rows = await audit_rows(
        router,
        lambda rows: any(r.subject_id == "stray-1" for r in rows),
        event_prefix="router.envelope_rejected",
    )
    assert [(r.code, r.message_type) for r in rows if r.subject_id == "stray-1"] == [
        ("app_not_installed", "lineup.v1.text")
    ]
    inbox = await router.request(
        "store",
        InboxListRequest(app_scope="not-installed", conversation_id=CONVERSATION),
        expect=InboxListReply,
    )
    assert inbox.rows == ()
