"""Ids the Agent or a MiniApp chooses never clash with the runtime's (issue 11), with real
processes: a clash is refused `message_id_conflict` and audited, the runtime keeps serving,
and it starts again on the same data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw
import trio

from lineup.actors.kernel import ActorKind
from lineup.actors.store._db import DB_FILENAME
from lineup.facts.link import SYNC_CURSOR
from lineup.tests.e2e.test_im_link import texts
from lineup.tests.support.runtime import (
    AGENT_ID,
    CONVERSATION,
    Runtime,
    agent_client,
    messages_at_agent,
    start_runtime,
)
from lineup.tests.support.shell import ShellClient, connect_shell
from lineup.tests.support.tree import attach, audit_rows

WAIT = 20.0


def agent_text(message_id: str, markdown: str) -> dict[str, Any]:
    return {
        "v": 1,
        "id": message_id,
        "type": "lineup.v1.text",
        "conversation_id": CONVERSATION,
        "sender": {"kind": "agent", "id": AGENT_ID},
        "payload": {"markdown": markdown},
    }


async def submit(shell: ShellClient, text: str, client_id: str) -> None:
    event = {"kind": "composer.submit", "text": text, "client_id": client_id}
    await shell.send(
        {"type": "ui.event", "app_scope": "chat", "instance_id": "chat", "event": event}
    )


def user_states(shell: ShellClient) -> list[str]:
    return [i["state"] for i in shell.timeline() if i["author"] == "user"]


def restarts(runtime: Runtime) -> dict[str, int]:
    return {name: child.restarts for name, child in runtime.supervisor.children.items()}


def replay_from_the_start(data_dir: Path) -> None:
    """What an older runtime left behind: its transport never got past the clashing message,
    so the next start reads it again."""
    conn = apsw.Connection(str(data_dir / DB_FILENAME))
    try:
        conn.execute("DELETE FROM cursors WHERE name = ?", (SYNC_CURSOR,))
    finally:
        conn.close()


async def test_an_agent_text_reusing_a_users_message_id_is_refused_and_the_runtime_lives_on(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    async with trio.open_nursery() as first:
        runtime = await start_runtime(first, data_dir, demo_agent=False)
        shell = await connect_shell(first, runtime.shell_url)
        await submit(shell, "hello", "client-id-0001")
        with trio.fail_after(WAIT):
            await shell.wait_until(lambda s: user_states(s) == ["sent"])
        agent = await agent_client(first, runtime.appserver_url)
        [sent] = await messages_at_agent(agent)

        await agent.send(agent_text(sent["id"], "I am your message now"), "clash-1")
        await agent.say(CONVERSATION, "next", idempotency_key="next-1")

        with trio.fail_after(WAIT):
            await shell.wait_until(lambda s: texts(s, "agent") == ["next"])
        auditor = await attach(first, runtime.supervisor, ActorKind.ROUTER, "auditor")
        rows = await audit_rows(
            auditor,
            lambda rows: any(r.subject_id == sent["id"] for r in rows),
            event_prefix="router.envelope_rejected",
        )
        assert [(r.code, r.message_type) for r in rows if r.subject_id == sent["id"]] == [
            ("message_id_conflict", "lineup.v1.text")
        ]
        assert texts(shell, "user") == ["hello"]
        assert set(restarts(runtime).values()) == {0}
        first.cancel_scope.cancel()

    replay_from_the_start(data_dir)
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    shell = await connect_shell(nursery, runtime.shell_url)
    agent = await agent_client(nursery, runtime.appserver_url)
    await agent.say(CONVERSATION, "after the restart", idempotency_key="after-1")
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: texts(s, "agent") == ["next", "after the restart"])
    assert texts(shell, "user") == ["hello"]
    assert user_states(shell) == ["sent"]
    auditor = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "auditor")
    await audit_rows(  # the replayed clash was refused again, not crashed on
        auditor,
        lambda rows: len([r for r in rows if r.subject_id == sent["id"]]) == 2,
        event_prefix="router.envelope_rejected",
    )
    assert set(restarts(runtime).values()) == {0}


async def test_an_id_a_miniapp_chose_never_blocks_an_agent_message_that_uses_it_later(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    # Finding 2: the chat's own id for a message (its retry key, `user-<client id>`) is the id
    # an Agent uses next. The wire id was the runtime's, so the two never meet.
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    shell = await connect_shell(nursery, runtime.shell_url)
    await submit(shell, "hello", "msg-0042-chosen")
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: user_states(s) == ["sent"])
    agent = await agent_client(nursery, runtime.appserver_url)
    [sent] = await messages_at_agent(agent)
    assert sent["id"].startswith("lu:")
    assert "msg-0042-chosen" not in sent["id"]

    await agent.send(agent_text("user-msg-0042-chosen", "an Agent's own message"), "own-1")
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: texts(s, "agent") == ["an Agent's own message"])
    assert texts(shell, "user") == ["hello"]
    assert set(restarts(runtime).values()) == {0}
