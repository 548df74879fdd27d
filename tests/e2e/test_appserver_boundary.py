"""The AppServer boundary, with real processes: no answer a network gives and no message an
Agent relays stops the tree; the link shows why it is down and recovers by itself."""

from __future__ import annotations

import os
import random
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from lineup.actors.kernel import ActorKind, ErrorCode
from lineup.ops.agent import AppServerError
from lineup.ops.drill._proxy import LinkProxy
from lineup.tests.e2e.test_im_link import devserver, free_port, texts
from lineup.tests.support.process import LineupProcess, lineup_status
from lineup.tests.support.runtime import AGENT_ID, CONVERSATION, agent_client, start_runtime
from lineup.tests.support.shell import ShellClient, connect_shell
from lineup.tests.support.tree import attach, audit_rows

WAIT = 20.0  # the transport backs off up to 5 s between tries
PORTAL_WINDOW_S = 60.0  # the measure: the tree must ride out a minute of it
FUZZ_DOCUMENTS = 80
FROZEN_NOTICED_S = 10.0  # the bound on noticing an AppServer that stopped answering


def link_down_because(reason: str) -> Callable[[ShellClient], bool]:
    return lambda s: (
        s.runtime_state in {"reconnecting", "offline_degraded"} and s.runtime_reason == reason
    )


@pytest.mark.slow
@pytest.mark.timeout(PORTAL_WINDOW_S + 90)
async def test_a_captive_portal_answering_html_for_a_minute_never_stops_the_tree(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """A minute of HTML where the AppServer should be: the issue's measure, and long past the
    transport's backoff cap, so only that time proves the tree rides it out."""
    port = free_port()
    await nursery.start(devserver, port, data_dir / "appserver.db")
    upstream = f"http://127.0.0.1:{port}"
    portal = LinkProxy(upstream, seed=1)
    await nursery.start(portal.serve)
    portal.garbage("html")
    runtime_dir = data_dir / "rt"
    process = await LineupProcess.start(
        "run",
        "--data-dir",
        str(runtime_dir),
        "--appserver",
        portal.url,
        "--no-demo-agent",
        env={"LINEUP_PASSWORD": "demo"},  # the devserver's user; never on the command line
    )
    shell: ShellClient | None = None
    try:
        with trio.fail_after(30):
            line = await process.wait_for_line("lineup: open the Shell: ")
        shell = await connect_shell(nursery, line.split("lineup: open the Shell: ", 1)[1])
        with trio.fail_after(WAIT):
            await shell.wait_until(link_down_because("appserver_protocol_error"))

        with trio.move_on_after(PORTAL_WINDOW_S):
            exit_code = await process.wait()
            pytest.fail(f"lineup run exited {exit_code} behind a captive portal")
        assert portal.counts.garbage > 5  # it kept trying, all along
        status = await trio.to_thread.run_sync(lineup_status, runtime_dir)
        assert status["runtime"] == {
            "state": "offline_degraded",
            "reason": "appserver_protocol_error",
        }
        children = status["children"]
        assert isinstance(children, list)
        assert {c["name"]: c["restarts"] for c in children if c["restarts"]} == {}

        portal.restore()
        with trio.fail_after(WAIT):
            await shell.wait_until(lambda s: s.runtime_state == "online")
        agent = await agent_client(nursery, upstream)
        await agent.say(CONVERSATION, "the portal is gone")
        with trio.fail_after(WAIT):
            await shell.wait_until(lambda s: texts(s, "agent") == ["the portal is gone"])
    finally:
        with trio.CancelScope(shield=True):
            if shell is not None:  # closed first: trio-websocket leaves a socket the server
                await shell.ws.aclose()  # closes under it to the garbage collector, unclosed
            process.kill()
            await process.wait()


@pytest.mark.parametrize(
    ("garbage", "reason"),
    [("shape", "appserver_protocol_error"), ("redirect", "appserver_protocol_error")],
)
async def test_an_appserver_answering_the_wrong_shape_or_a_redirect_is_shown_then_recovers(
    nursery: trio.Nursery, data_dir: Path, garbage: str, reason: str
) -> None:
    port = free_port()
    await nursery.start(devserver, port, data_dir / "appserver.db")
    proxy = LinkProxy(f"http://127.0.0.1:{port}", seed=2)
    await nursery.start(proxy.serve)
    proxy.garbage(garbage)
    runtime = await start_runtime(nursery, data_dir / "rt", appserver=proxy.url)
    shell = await connect_shell(nursery, runtime.shell_url)
    with trio.fail_after(WAIT):
        await shell.wait_until(link_down_because(reason))
    proxy.restore()
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: s.runtime_state == "online" and s.runtime_reason is None)
    assert all(c.restarts == 0 for c in runtime.supervisor.status().children)


def poison(depth: int) -> dict[str, object]:
    nested: object = "deep"
    for _ in range(depth):
        nested = [nested]
    return {
        "v": 1,
        "id": f"poison-{depth}",
        "type": "lineup.v1.text",
        "conversation_id": CONVERSATION,
        "sender": {"kind": "agent", "id": AGENT_ID},
        "payload": {"markdown": "never shown", "nested": nested},
    }


async def test_a_deeply_nested_agent_message_costs_one_refusal_and_the_next_is_delivered(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    shell: ShellClient = await connect_shell(nursery, runtime.shell_url)
    agent = await agent_client(nursery, runtime.appserver_url)
    for depth in (100, 900):  # both relayed by the AppServer; both far past the wire's limit
        await agent.send(poison(depth), idempotency_key=f"poison-{depth}")
    await agent.say(CONVERSATION, "after the poison", idempotency_key="good-1")
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: texts(s, "agent") == ["after the poison"])
    auditor = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "auditor")
    rows = await audit_rows(
        auditor,
        lambda rows: len([r for r in rows if r.event == "transport.envelope_refused"]) == 2,
        event_prefix="transport.",
    )
    assert {(r.code, r.subject_id) for r in rows if r.event == "transport.envelope_refused"} == {
        ("envelope_too_deep", "poison-100"),
        ("envelope_too_deep", "poison-900"),
    }
    assert all("never shown" not in str(r) for r in rows)
    assert all(c.restarts == 0 for c in runtime.supervisor.status().children)


async def test_a_frozen_appserver_is_noticed_as_a_timeout_and_the_link_comes_back_when_it_thaws(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """Takes over FROZEN_NOTICED_S: an AppServer that stopped answering is noticed by the
    transport's own timeout, and the bound on noticing it is what is measured."""
    port = free_port()
    appserver = await nursery.start(devserver, port, data_dir / "appserver.db")
    runtime = await start_runtime(nursery, data_dir / "rt", appserver=f"http://127.0.0.1:{port}")
    shell = await connect_shell(nursery, runtime.shell_url)
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: s.runtime_state == "online")
    appserver.signal(signal.SIGSTOP)  # frozen, not closed: connections are accepted, never answered
    try:
        frozen_at = trio.current_time()
        # A long poll is at most 6 s plus a 3.5 s deadline; the rest is scheduling slack.
        with trio.fail_after(FROZEN_NOTICED_S + 5):
            await shell.wait_until(link_down_because("appserver_timeout"))
        noticed_s = trio.current_time() - frozen_at
    finally:
        appserver.signal(signal.SIGCONT)
    assert noticed_s <= FROZEN_NOTICED_S + 5
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: s.runtime_state == "online")


def fuzz_document(rng: random.Random, depth: int = 0) -> object:
    """Any JSON an Agent could send: deep, wide, huge numbers, long or odd strings (bounded,
    so that one document stays within what an AppServer relays)."""
    draw = rng.random()
    if depth > rng.choice((2, 6, 60)) or draw < 0.35:
        return rng.choice(
            [
                None,
                True,
                rng.randint(-(2**70), 2**70),
                rng.uniform(-1e300, 1e300),
                "",
                "x" * rng.choice((1, 1000, 300_000)),
                "\u202e\x1b[31m\x00",
                rng.randint(-10, 10),
            ]
        )
    if draw < 0.45:
        return [rng.randint(0, 9)] * rng.choice((0, 3, 12_000))  # wide
    if draw < 0.55:
        return {f"k{i}": i for i in range(rng.choice((1, 1_200)))}  # many keys
    if draw < 0.8:
        return [fuzz_document(rng, depth + 1)]  # a chain: depth grows fast
    return {f"k{i}": fuzz_document(rng, depth + 1) for i in range(3)}


def fuzz_envelope(rng: random.Random, n: int) -> dict[str, object]:
    envelope: dict[str, object] = {
        "v": 1,
        "id": f"fuzz-{n}",
        "type": "lineup.v1.text",
        "conversation_id": CONVERSATION,
        "sender": {"kind": "agent", "id": AGENT_ID},
        "payload": {"markdown": f"fuzz {n}"},
    }
    where = rng.choice(("markdown", "payload", "extra", "correlation", "app_scope", "v"))
    if where == "markdown":
        envelope["payload"] = {"markdown": fuzz_document(rng)}
    elif where == "payload":
        envelope["payload"] = fuzz_document(rng)
    elif where == "extra":
        envelope["payload"] = {"markdown": f"fuzz {n}", "n": fuzz_document(rng)}
    else:
        envelope[where] = fuzz_document(rng)
    return envelope


async def test_any_json_an_agent_relays_is_delivered_or_refused_with_a_code_and_nothing_restarts(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """Seeded documents of every shape, through the real AppServer into the real tree: each
    one the AppServer relays is either shown by the chat or refused with a stable code and an
    audit row, and no actor restarts. (The wire's own property tests run far more shapes.)"""
    seed = int(os.environ.get("LINEUP_FUZZ_SEED", random.randrange(2**32)))
    rng = random.Random(seed)
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    shell = await connect_shell(nursery, runtime.shell_url)
    agent = await agent_client(nursery, runtime.appserver_url)
    relayed: list[str] = []
    not_relayed: list[int | None] = []  # statuses of what the AppServer itself refused
    for n in range(FUZZ_DOCUMENTS):
        envelope = fuzz_envelope(rng, n)
        try:
            await agent.send(envelope, idempotency_key=str(envelope["id"]))
        except AppServerError as error:  # the AppServer's own limits: it relays nothing
            not_relayed.append(error.status)
            continue
        relayed.append(str(envelope["id"]))
    assert all(s is not None and 400 <= s < 500 for s in not_relayed), seed
    await agent.say(CONVERSATION, "after the fuzz", idempotency_key="good-1")
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: "after the fuzz" in texts(s, "agent"))
    shown = shell.agent_message_ids()
    auditor = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "auditor")
    refusals = ("transport.envelope_refused", "router.envelope_rejected")
    rows = await audit_rows(
        auditor,
        lambda rows: {r.subject_id for r in rows if r.event in refusals} | shown >= set(relayed),
    )
    refused = {r.subject_id: r.code for r in rows if r.event in refusals}
    for message_id in relayed:
        assert (message_id in shown) != (message_id in refused), (seed, message_id)
    assert set(refused.values()) <= {code.value for code in ErrorCode}, seed
    assert all(c.restarts == 0 for c in runtime.supervisor.status().children), seed
