"""Poison is quarantined (issue 11), with real processes: `lineup run` on a data dir that a
hostile message has touched comes up, moves what it cannot decode to the dead letters with an
audit row, `lineup status` says what (a count and kinds, no content), and the chat answers."""

from __future__ import annotations

from pathlib import Path

import apsw
import trio

from lineup.actors.kernel import ActorKind
from lineup.actors.store._db import DB_FILENAME
from lineup.tests.e2e.test_im_link import texts
from lineup.tests.support.process import lineup_status
from lineup.tests.support.runtime import CONVERSATION, Runtime, agent_client, start_runtime
from lineup.tests.support.shell import connect_shell
from lineup.tests.support.tree import attach, audit_rows

WAIT = 20.0
# Rows SQLite's own checks take (`json_valid` passes a lone surrogate escape) but no reader can
# decode: what a hostile Agent left in the chat's inbox while the bus still let such JSON through.
POISON = ('{"id":"m-poison","payload":{"markdown":"\\ud800"}}', "[1, 2, 3]")
SECRET = "do-not-show-this"


def restarts(runtime: Runtime) -> dict[str, int]:
    return {name: child.restarts for name, child in runtime.supervisor.children.items()}


def poison(data_dir: Path) -> None:
    """Written straight into the database while the runtime is stopped."""
    conn = apsw.Connection(str(data_dir / DB_FILENAME))
    try:
        for n, body in enumerate(POISON):
            conn.execute(
                "INSERT INTO app_inbox (app_scope, conversation_id, instance_id, delivery_id,"
                " body, created_at) VALUES ('chat', ?, NULL, ?, ?, 1.0)",
                (CONVERSATION, f"poison-{n}", body),
            )
        # The session cursor the router reads on every call, as no transport ever wrote it.
        conn.execute(
            "UPDATE cursors SET value = ? WHERE name = 'transport.session'",
            (f'{{"conversation_id": 7, "secret": "{SECRET}"}}',),
        )
        assert conn.changes() == 1
    finally:
        conn.close()


async def test_a_poisoned_data_dir_starts_quarantines_reports_and_the_chat_answers(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    async with trio.open_nursery() as first:
        runtime = await start_runtime(first, data_dir, demo_agent=False)
        shell = await connect_shell(first, runtime.shell_url)
        agent = await agent_client(first, runtime.appserver_url)
        await agent.say(CONVERSATION, "before", idempotency_key="before-1")
        with trio.fail_after(WAIT):
            await shell.wait_until(lambda s: texts(s, "agent") == ["before"])
        first.cancel_scope.cancel()

    poison(data_dir)
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    shell = await connect_shell(nursery, runtime.shell_url)
    agent = await agent_client(nursery, runtime.appserver_url)
    await agent.say(CONVERSATION, "after", idempotency_key="after-1")
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: texts(s, "agent") == ["before", "after"])

    auditor = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "auditor")
    rows = await audit_rows(
        auditor, lambda rows: len(rows) >= 3, event_prefix="store.dead_lettered"
    )
    assert sorted((r.code, (r.subject_id or "").split(":")[0]) for r in rows) == [
        ("envelope_malformed", "cursor"),
        ("envelope_malformed", "inbox"),
        ("envelope_malformed", "inbox"),
    ]
    document = await trio.to_thread.run_sync(lineup_status, data_dir)
    assert document["running"] is True
    assert document["quarantine"] == {
        "count": 3,
        "kinds": {"cursor:envelope_malformed": 1, "inbox:envelope_malformed": 2},
    }
    assert SECRET not in str(document)
    assert set(restarts(runtime).values()) == {0}  # input never costs a restart
