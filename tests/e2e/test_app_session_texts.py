"""The Agent's short results in an app sub-session (seed 000 §7.3: the folded group records "the
Agent's questions, the user's answers and the Agent's short results"), through the real
runtime: a `lineup.v1.text` naming an open sub-session of this Agent reaches the chat's
timeline as an item carrying its `app_session_id`, also after a restart of the whole runtime
(from the chat's history); one naming anything else, or a sub-session that has ended, is
refused `app_session_invalid`, audited, and stored nowhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import trio

from lineup import wire
from lineup.actors.focus.messages import InstanceReply, UiIntentRequest
from lineup.actors.kernel import ActorKind, ErrorCode
from lineup.ops.agent import AgentClient
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.interactions import POLL, WAIT, Scene, scene
from lineup.tests.support.runtime import AGENT_ID, CONVERSATION, agent_client, start_runtime
from lineup.tests.support.shell import ShellClient, connect_shell, tree_text
from lineup.tests.support.tree import attach, audit_rows, stored

INSTANCE: Final = "task-dashboard:open-1"
SESSION: Final = f"lu:app_session:{INSTANCE}"
INVALID: Final = ErrorCode.APP_SESSION_INVALID.value


async def open_dashboard(agent: AgentView, revision: str) -> None:
    """`task-dashboard.open` as `open-1`, until the Agent is told its sub-session opened."""
    await agent.client.call_tool(
        CONVERSATION,
        "task-dashboard.open",
        {"task_id": "t-1", "title": "Quarterly report"},
        revision,
        call_id="open-1",
    )
    await agent.pull(
        "lineup.v1.app_session.opened", lambda m: m["payload"]["app_session_id"] == SESSION
    )


def results(shell: ShellClient) -> list[tuple[str, str | None, str]]:
    """The Agent's items in the chat's timeline: (message id, app_session_id, text)."""
    return [
        (i["id"].removeprefix("agent:"), i.get("app_session_id"), tree_text(i["tree"]))
        for i in shell.timeline()
        if i["author"] == "agent"
    ]


async def shown(shell: ShellClient, message_id: str) -> None:
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: message_id in s.agent_message_ids())


def text(
    message_id: str, context: Any, *, app_scope: str | None = None, markdown: str | None = None
) -> dict[str, Any]:
    """An Agent's text with `context` as it is on the wire (`app_scope` None: the main IM)."""
    return wire.dump(
        wire.envelope(
            wire.TEXT,
            wire.TextPayload(markdown=markdown or f"bad {message_id}", app_session_context=context),
            conversation_id=CONVERSATION,
            sender_kind="agent",
            sender_id=AGENT_ID,
            message_id=message_id,
            app_scope=app_scope,
        )
    )


async def say(client: AgentClient, envelope: dict[str, Any]) -> None:
    """Send one of `text`'s envelopes: its id is the message id the chat shows it by."""
    await client.send(envelope, idempotency_key=envelope["id"])


async def refused(s: Scene, shell: ShellClient, *texts: dict[str, Any]) -> None:
    """Send each of `texts`, then a good one: each is refused `app_session_invalid` (audited),
    stored nowhere, and never shown."""
    client: AgentClient = s.agent.client
    for envelope in texts:
        await say(client, envelope)
    ids = [envelope["id"] for envelope in texts]
    rows = await audit_rows(
        s.reader,
        lambda rows: {r.subject_id for r in rows} >= set(ids),
        event_prefix="router.envelope_rejected",
    )
    audited = sorted((r.subject_id, r.code, r.message_type) for r in rows if r.subject_id in ids)
    assert audited == sorted((m, INVALID, wire.TEXT) for m in ids)
    # The transport takes the Agent's messages in order: once a later text shows, these were
    # all handled.
    marker = f"after-{ids[0]}"
    await say(client, text(marker, None, markdown="still here"))
    await shown(shell, marker)
    assert not set(ids) & shell.agent_message_ids()
    assert [m for m in ids if await stored(s.reader, m)] == []


async def test_a_short_result_reaches_the_chat_with_its_sub_session_and_others_are_refused(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    shell = await connect_shell(nursery, s.runtime.shell_url)
    await open_dashboard(s.agent, s.revision)

    client = s.agent.client
    await say(client, text("r-1", {"app_session_id": SESSION}, markdown="At **60 %**."))
    await say(client, text("plain-1", None, markdown="A plain message."))
    await shown(shell, "plain-1")
    await shown(shell, "r-1")
    assert results(shell) == [("r-1", SESSION, "At 60 %."), ("plain-1", None, "A plain message.")]

    await refused(
        s,
        shell,
        text("unknown", {"app_session_id": "lu:app_session:task-dashboard:nope"}),
        text("forged", {"app_session_id": "lu:app_session:chat"}),
        text("malformed", {"app_session_id": 7}),
        text("no-id", {}),
        text("not-im", {"app_session_id": SESSION}, app_scope="task-dashboard"),
    )

    # Ended, the sub-session is history: nothing new is recorded in it.
    await s.ui.request(
        "focus", UiIntentRequest(intent="close", instance_id=INSTANCE), expect=InstanceReply
    )
    await s.agent.pull(
        "lineup.v1.app_session.closed", lambda m: m["payload"]["app_session_id"] == SESSION
    )
    with trio.fail_after(WAIT):
        while True:
            sessions = (await s.listed()).sessions
            if any(x.app_session_id == SESSION and x.state == "closed" for x in sessions):
                break
            await trio.sleep(POLL)
    await refused(s, shell, text("late", {"app_session_id": SESSION}))
    assert ("r-1", SESSION, "At 60 %.") in results(shell)  # what it recorded stays


async def test_a_short_result_keeps_its_sub_session_across_a_restart_of_the_runtime(
    data_dir: Path,
) -> None:
    async with trio.open_nursery() as first:
        runtime = await start_runtime(first, data_dir, demo_agent=False)
        agent = AgentView(await agent_client(first, runtime.appserver_url), wait_s=WAIT)
        await open_dashboard(agent, await agent.inventory())
        await say(
            agent.client, text("r-1", {"app_session_id": SESSION}, markdown="Done: **60 %**.")
        )
        shell = await connect_shell(first, runtime.shell_url)
        await shown(shell, "r-1")
        first.cancel_scope.cancel()

    async with trio.open_nursery() as second:
        runtime = await start_runtime(second, data_dir, demo_agent=False)
        shell = await connect_shell(second, runtime.shell_url)
        await shown(shell, "r-1")  # from the chat's history: the inbox delivery was acked
        assert results(shell) == [("r-1", SESSION, "Done: 60 %.")]
        reader = await attach(second, runtime.supervisor, ActorKind.ROUTER, "reader")
        assert await stored(reader, "r-1")
        second.cancel_scope.cancel()
