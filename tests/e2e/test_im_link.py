"""The IM through the whole runtime: real processes, the real AppServer, the real WebSocket."""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import apsw
import pytest
import trio

from lineup import wire
from lineup.actors.kernel import ActorKind
from lineup.actors.store._db import DB_FILENAME
from lineup.actors.store.messages import (
    AuditQueryReply,
    AuditQueryRequest,
    InboxListReply,
    InboxListRequest,
    InboxPutReply,
    InboxPutRequest,
)
from lineup.ops.bench._relay import LinkRelay
from lineup.tests.support.process import LineupProcess, wait_pid_gone
from lineup.tests.support.runtime import (
    AGENT_ID,
    CONVERSATION,
    agent_client,
    messages_at_agent,
    start_runtime,
)
from lineup.tests.support.shell import ShellClient, connect_shell, tree_text, ws_url
from lineup.tests.support.tree import attach

WAIT = 20.0  # seconds for a real tree to converge after a fault


def texts(shell: ShellClient, author: str) -> list[str]:
    return [tree_text(i["tree"]) for i in shell.timeline() if i["author"] == author]


async def test_the_shell_socket_is_refused_without_the_token_or_from_a_foreign_origin_or_host(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    socket = ws_url(runtime.shell_url)
    port = urlsplit(socket.url).port
    assert port is not None
    token = {"Sec-WebSocket-Protocol": ", ".join(socket.subprotocols)}
    stale = {"Sec-WebSocket-Protocol": ", ".join(socket.subprotocols) + "x"}
    upgrade = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    }
    ours = {"Origin": socket.origin}
    rebound = {"Host": f"rebind.example:{port}", "Origin": f"http://rebind.example:{port}"}
    # Our own page with no token or a stale one is let in only to be told so: closed at once
    # with 4401 (tests/hostbridge/test_actor.py), so the Shell stops reconnecting.
    for offered in ({}, stale):
        assert await http_status(port, "/ws", upgrade | ours | offered) == 101, offered
    attempts = [
        {"Origin": "http://evil.example"},  # a page from another origin
        {"Origin": "null"},  # a sandboxed or file: page
        {},  # no Origin at all
        rebound,  # DNS rebinding: a name that is not ours in Host
    ]
    for headers in attempts:
        assert await http_status(port, "/ws", upgrade | token | headers) == 403, headers
    for path in ("/", "/js/main.js", "/no-such-file.js"):  # the Host is checked first
        assert await http_status(port, path, rebound) == 403, path
    assert await http_status(port, "/js/main.js", {}) == 200
    assert await http_status(port, "/", {}) == 200
    # The real Shell, with the token and its own origin, gets in.
    shell = await connect_shell(nursery, runtime.shell_url)
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: s.runtime_state == "online")


async def http_status(port: int, path: str, headers: dict[str, str]) -> int:
    """One raw HTTP/1.1 request (so that any Host header can be sent); the status code."""
    lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    if "Host" in headers:
        lines[1] = f"Host: {headers['Host']}"
    lines += [f"{k}: {v}" for k, v in headers.items() if k != "Host"]
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = b""
        while b"\r\n" not in head:
            chunk = await stream.receive_some(4096)
            if not chunk:
                break
            head += chunk
    return int(head.split(b" ", 2)[1])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def devserver(port: int, db: Path, *, task_status: trio.TaskStatus[LineupProcess]) -> None:
    """A real `lineup devserver` subprocess, killed when the task ends however the test does."""
    process = await LineupProcess.start("devserver", "--port", str(port), "--db", str(db))
    try:
        with trio.fail_after(WAIT):
            await process.wait_for_line("listening on")
        task_status.started(process)
        await trio.sleep_forever()
    finally:
        with trio.CancelScope(shield=True):
            process.kill()
            await process.wait()


async def test_with_the_appserver_down_messages_stay_pending_then_arrive_once_in_order(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    port = free_port()
    db = data_dir / "appserver.db"
    appserver = await nursery.start(devserver, port, db)
    url = f"http://127.0.0.1:{port}"
    runtime = await start_runtime(nursery, data_dir / "rt", appserver=url)
    shell = await connect_shell(nursery, runtime.shell_url)
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: s.runtime_state == "online")

    appserver.signal(15)
    assert await appserver.wait() == 0
    for word in ("one", "two", "three"):
        await shell.say(word)
    with trio.fail_after(WAIT):
        await shell.wait_until(
            lambda s: (
                s.runtime_state in {"reconnecting", "offline_degraded"}
                and [i["state"] for i in s.timeline() if i["author"] == "user"] == ["pending"] * 3
            )
        )
        await shell.wait_until(lambda s: s.runtime_state == "offline_degraded")

    await nursery.start(devserver, port, db)
    with trio.fail_after(WAIT):
        await shell.wait_until(
            lambda s: (
                s.runtime_state == "online"
                and [i["state"] for i in s.timeline() if i["author"] == "user"] == ["sent"] * 3
            )
        )
    agent = await agent_client(nursery, url)
    received = [m["payload"]["markdown"] for m in await messages_at_agent(agent)]
    assert received == ["one", "two", "three"]  # each exactly once, in order


async def test_a_chat_started_before_its_session_is_known_shows_the_history_once_logged_in(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """The session's record lost (quarantined, say) and the AppServer down at the start: the
    chat reads an empty history, and the history shows once the transport logs in."""
    port = free_port()
    db = data_dir / "appserver.db"
    url = f"http://127.0.0.1:{port}"
    async with trio.open_nursery() as first:
        await first.start(devserver, port, db)
        runtime = await start_runtime(first, data_dir / "rt", appserver=url)
        shell = await connect_shell(first, runtime.shell_url)
        agent = await agent_client(first, url)
        await agent.say(CONVERSATION, "before", idempotency_key="before-1")
        with trio.fail_after(WAIT):
            await shell.wait_until(lambda s: texts(s, "agent") == ["before"])
        first.cancel_scope.cancel()
    conn = apsw.Connection(str(data_dir / "rt" / DB_FILENAME))
    try:
        conn.execute("DELETE FROM cursors WHERE name = 'transport.session'")
        assert conn.changes() == 1
    finally:
        conn.close()

    runtime = await start_runtime(nursery, data_dir / "rt", appserver=url)
    shell = await connect_shell(nursery, runtime.shell_url)
    with trio.fail_after(WAIT):  # the chat has drawn itself, from no history
        await shell.wait_until(lambda s: "chat" in s.views and s.runtime_state != "online")
    assert texts(shell, "agent") == []
    await nursery.start(devserver, port, db)
    with trio.fail_after(WAIT):
        await shell.wait_until(
            lambda s: s.runtime_state == "online" and texts(s, "agent") == ["before"]
        )


@pytest.mark.parametrize("victims", [("transport", "router", "store", "miniapp:chat")])
async def test_sigkills_during_an_agent_stream_lose_nothing_and_show_each_message_once(
    nursery: trio.Nursery, data_dir: Path, victims: tuple[str, ...]
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    shell = await connect_shell(nursery, runtime.shell_url)
    agent = await agent_client(nursery, runtime.appserver_url)
    total, every = 40, 5
    sent = [f"message {n}" for n in range(total)]
    kills = 0
    for n, text in enumerate(sent):
        await agent.say(CONVERSATION, text, idempotency_key=f"stream-{n}")
        if n % every == every - 1:
            child = runtime.supervisor.children[victims[kills % len(victims)]]
            # A running incarnation: on a loaded machine the stream can outpace a restart,
            # and a kill of the one already dead would be no kill at all.
            with trio.fail_after(WAIT):
                await runtime.supervisor.wait_until(child.is_up)
            pid = child.pid
            assert pid is not None
            runtime.supervisor.kill(child.identity.name)
            await wait_pid_gone(pid)
            kills += 1
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: sorted(texts(s, "agent")) == sorted(sent))
    assert texts(shell, "agent") == sent  # once each, and in the order the Agent sent them
    assert kills == total // every
    children = runtime.supervisor.children
    # The last ones killed are back, each restart counted. Waited for as such: the supervisor
    # may read a reaped child's exit after the test saw its pid gone, and until then the old
    # incarnation still counts as up (fcH1's stress run read a restart count of one).
    with trio.fail_after(WAIT):
        await runtime.supervisor.wait_until(
            lambda: all(children[v].restarts >= 2 and children[v].is_up() for v in victims)
        )
    restarts = {c.name: c.restarts for c in runtime.supervisor.status().children}
    for victim in victims:
        assert restarts[victim] >= 2


async def test_user_messages_through_sigkills_of_the_transport_reach_the_agent_once_in_order(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    shell = await connect_shell(nursery, runtime.shell_url)
    words = [f"word {n}" for n in range(12)]
    for n, word in enumerate(words):
        await shell.say(word)
        if n % 3 == 2:
            pid = runtime.supervisor.children["transport"].pid
            assert pid is not None
            runtime.supervisor.kill("transport")
            await wait_pid_gone(pid)
    with trio.fail_after(WAIT):
        await shell.wait_until(
            lambda s: (
                [i["state"] for i in s.timeline() if i["author"] == "user"] == ["sent"] * len(words)
            )
        )
    agent = await agent_client(nursery, runtime.appserver_url)
    received = [m["payload"]["markdown"] for m in await messages_at_agent(agent)]
    assert received == words


async def test_a_sigkill_between_a_post_and_its_ack_resends_it_under_its_key_and_it_is_kept_once(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """The AppServer took the POST, its answer never reached the transport (held on the
    link), and the transport is SIGKILLed: the row was never acknowledged, so the next
    transport POSTs it again under the same idempotency key (its outbox id, the message's
    wire id), the AppServer answers the same and stores nothing, and the Agent has it once."""
    port = free_port()
    await nursery.start(devserver, port, data_dir / "appserver.db")
    link = LinkRelay(port, record=True)
    await nursery.start(link.serve)
    runtime = await start_runtime(nursery, data_dir / "rt", appserver=link.url)
    shell = await connect_shell(nursery, runtime.shell_url)
    agent = await agent_client(nursery, f"http://127.0.0.1:{port}")

    def states(s: ShellClient) -> list[str]:
        return [i["state"] for i in s.timeline() if i["author"] == "user"]

    await shell.say("before")  # what the runtime sends first (its inventory) is sent by then
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: states(s) == ["sent"])

    link.hold_answers()
    await shell.say("once")
    received: list[dict[str, Any]] = []
    cursor = ""
    with trio.fail_after(WAIT):  # the AppServer has it (the Agent's long poll says so)
        while not received:
            page, cursor = await agent.sync(cursor, timeout_ms=5000)
            received = [m for m in page if m.get("payload", {}).get("markdown") == "once"]
    key = received[0]["id"]
    posts_before_kill = _posts_of(link, key)
    assert posts_before_kill >= 1
    pid = runtime.supervisor.children["transport"].pid
    assert pid is not None
    runtime.supervisor.kill("transport")
    await wait_pid_gone(pid)
    link.release()

    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: states(s) == ["sent", "sent"])
    assert _posts_of(link, key) > posts_before_kill  # sent again, under the same key
    texts = [m["payload"]["markdown"] for m in await messages_at_agent(agent)]
    assert texts == ["before", "once"]


def _posts_of(link: LinkRelay, key: str) -> int:
    """The POSTs the link carried with `key` as their idempotency key."""
    pattern = rb"(?im)^idempotency-key: *" + re.escape(key.encode()) + rb"\r$"
    return len(re.findall(pattern, bytes(link.sent)))


async def test_a_submit_resent_under_its_client_id_after_a_chat_restart_is_one_message(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """A Shell that lost its socket submits again with the same client id: whether the chat
    kept the first submit (it is alive) or reloaded it from the store (it was killed), the
    Agent gets the message once; another client id is another message."""
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    shell = await connect_shell(nursery, runtime.shell_url)

    async def submit(text: str, client_id: str) -> None:
        event = {"kind": "composer.submit", "text": text, "client_id": client_id}
        await shell.send(
            {"type": "ui.event", "app_scope": "chat", "instance_id": "chat", "event": event}
        )

    def states(s: ShellClient) -> list[str]:
        return [i["state"] for i in s.timeline() if i["author"] == "user"]

    await submit("hello", "client-id-0001")
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: states(s) == ["sent"])
    await submit("hello", "client-id-0001")  # the chat still holds it
    pid = runtime.supervisor.children["miniapp:chat"].pid
    assert pid is not None
    runtime.supervisor.kill("miniapp:chat")
    await wait_pid_gone(pid)
    await submit("hello", "client-id-0001")  # the new chat finds it in the store
    await submit("hello again", "client-id-0002")
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: states(s) == ["sent", "sent"])
    agent = await agent_client(nursery, runtime.appserver_url)
    received = [(m["id"], m["payload"]["markdown"]) for m in await messages_at_agent(agent)]
    assert [text for _, text in received] == ["hello", "hello again"]
    # The wire carries the runtime's ids, never the client's (issue 11).
    assert all(i.startswith("lu:msg:") and "client-id" not in i for i, _ in received)
    assert len({i for i, _ in received}) == 2


async def test_an_envelope_the_filters_refuse_is_audited_and_never_shown(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    shell = await connect_shell(nursery, runtime.shell_url)
    agent = await agent_client(nursery, runtime.appserver_url)
    bad = {
        "v": 1,
        "id": "bad-1",
        "type": "lineup.v1.shell.exec",
        "conversation_id": CONVERSATION,
        "payload": {"markdown": "should never show"},
    }
    await agent.send(bad, idempotency_key="bad-1")
    await agent.say(CONVERSATION, "after the bad one", idempotency_key="good-1")
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: texts(s, "agent") == ["after the bad one"])
    probe = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "auditor")
    reply = await probe.request(
        "store", AuditQueryRequest(event_prefix="router."), expect=AuditQueryReply
    )
    rows = [(r.event, r.code, r.subject_id, r.message_type) for r in reply.records]
    assert (
        "router.envelope_rejected",
        "envelope_type_unknown",
        "bad-1",
        "lineup.v1.shell.exec",
    ) in rows
    assert all("should never show" not in str(r) for r in reply.records)


async def test_a_delivery_stored_but_never_told_reaches_the_running_chat_and_is_taken(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """Up to ten seconds: a delivery is told again once it has waited 5 s, by a round that
    comes every 5 s (`router/_redelivery.py`); only that wait proves the round runs."""
    # A router killed between its commit and its tell leaves a delivery in the inbox of a
    # chat that is running and will not list its inbox again; the transport's replay of the
    # page is then a duplicate, told to no one. Here the row is written as that router did,
    # and nobody tells the chat: the router's reconcile round does.
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    shell = await connect_shell(nursery, runtime.shell_url)
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: s.runtime_state == "online")
    router = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "dead-router")
    envelope = wire.envelope(
        wire.TEXT, wire.TextPayload(markdown="told at last"), conversation_id=CONVERSATION,
        sender_kind="agent", sender_id=AGENT_ID, message_id="m-untold",
    )  # fmt: skip
    put = InboxPutRequest(
        app_scope="chat",
        conversation_id=CONVERSATION,
        delivery_id="m-untold",
        body=wire.dump(envelope),
    )
    await router.request("store", put, expect=InboxPutReply)

    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: texts(s, "agent") == ["told at last"])
        while True:  # the chat acknowledges right after it renders
            waiting = await router.request(
                "store",
                InboxListRequest(app_scope="chat", conversation_id=CONVERSATION),
                expect=InboxListReply,
            )
            if not waiting.rows:
                break
            await trio.sleep(0.1)
