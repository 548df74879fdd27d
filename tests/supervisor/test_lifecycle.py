"""The runtime's lifecycle (seed 004 §3.3) as `lineup status --json` sees it, against the real
`lineup run`: restoring until every child is ready, the link's states up to online, stopped once
it has shut down. The Shell's side: tests/browser/test_lifecycle_e2e.py."""

from __future__ import annotations

import signal
import stat
from pathlib import Path

import pytest
import trio
import trio.testing

from lineup.actors.kernel import ActorKind, Bus, Channel, Identity, channel_pair
from lineup.actors.kernel.control import RuntimeLink, RuntimeLinkEvent, StatusReply, StatusRequest
from lineup.hostbridge.messages import SUPERVISOR_PHASES
from lineup.supervisor import Supervisor
from lineup.supervisor._control import STATE_FILE, NotRunning, control_request
from lineup.supervisor._lifecycle import link_state
from lineup.tests.support.interactions import POLL
from lineup.tests.support.process import SHELL_LINE, LineupProcess, lineup_status

# The link's states on the way up, in the order the transport goes through them.
RISING = ("restoring", "authenticating", "synchronizing", "online")


def _status(data_dir: Path) -> StatusReply | None:
    try:
        return control_request(data_dir, StatusRequest(), StatusReply)
    except NotRunning:
        return None


def _not_online(seen: list[tuple[str, bool]], last: StatusReply | None) -> str:
    """What a start that did not come online within the bound looked like, for its failure."""
    link = last.runtime if last is not None else None
    children = [(c.name, c.state, c.restarts) for c in last.children] if last else []
    return f"not online after 30 s: seen {seen}, link {link}, children {children}"


async def test_status_says_restoring_until_every_child_is_ready_then_the_links_states_to_online(
    data_dir: Path,
) -> None:
    process = await LineupProcess.start("run", "--data-dir", str(data_dir))
    # (runtime.state, every child the tree's ready waits for running), each change once; the
    # demo Agent is started once the tree is ready.
    seen: list[tuple[str, bool]] = []
    last: StatusReply | None = None
    try:
        with trio.move_on_after(30) as waited:
            while True:
                # Paced: a look as fast as the loop turns (~2,000 a second) is served by the
                # supervisor, on the start's own path; under load it held the start past 30 s.
                await trio.sleep(POLL)
                reply = await trio.to_thread.run_sync(_status, data_dir)
                if reply is None or reply.runtime is None:
                    continue
                last = reply
                observed = (
                    reply.runtime.state,
                    all(
                        child.state == "running"
                        for child in reply.children
                        if child.name != "demo-agent"
                    ),
                )
                if not seen or seen[-1] != observed:
                    seen.append(observed)
                if reply.runtime.state == "online":
                    break
        assert not waited.cancelled_caught, _not_online(seen, last)
        await process.wait_for_line(SHELL_LINE)
    finally:
        process.kill()
        await process.wait()
    states = [state for state, _ in seen]
    # The control socket answers from the start, before any child is ready: restoring first,
    # while a child was still starting; never again once the link's states began.
    assert seen[0] == ("restoring", False), seen
    assert states[-1] == "online"
    assert all(state in RISING for state in states), seen
    ranks = [RISING.index(state) for state in states]
    assert ranks == sorted(ranks), seen
    assert all(every for state, every in seen if state != "restoring"), seen


async def test_a_sigtermed_run_says_stopped_and_a_killed_one_leaves_no_stale_word(
    data_dir: Path,
) -> None:
    """Up to ten seconds or more on a loaded machine, by what it is about: two whole `lineup
    run`s one after another on one data dir, the first ended by SIGTERM, the second by
    SIGKILL, each read by what it leaves."""
    first = await LineupProcess.start("run", "--data-dir", str(data_dir))
    with trio.fail_after(30):
        await first.wait_for_line(SHELL_LINE)
    first.signal(signal.SIGTERM)
    with trio.fail_after(10):
        assert await first.wait() == 0
    document = lineup_status(data_dir)
    assert document["running"] is False
    assert document["state"] == "stopped"
    assert type(document["stopped_at"]) is float
    mode = (data_dir / STATE_FILE).stat().st_mode
    assert stat.S_IMODE(mode) == 0o600

    # A new run clears the old word at once; killed, it has said nothing of its end.
    second = await LineupProcess.start("run", "--data-dir", str(data_dir))
    try:
        with trio.fail_after(30):
            await second.wait_for_line(SHELL_LINE)
        running = lineup_status(data_dir)
        assert running["running"] is True
        assert isinstance(running["runtime"], dict)
        assert running["runtime"]["state"] != "stopped"
    finally:
        second.kill()
        await second.wait()
    document = lineup_status(data_dir)
    assert document == {"running": False, "data_dir": str(data_dir), "state": None}


async def test_a_phase_the_hostbridge_was_not_told_is_told_again_though_nothing_changes(
    nursery: trio.Nursery, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a busy machine the tell that ends `restoring` may time out; the tree may then never
    change again, so the supervisor tries again by itself (else the Shell says Restoring… for
    good)."""
    from lineup.actors.kernel import ActorKind, ErrorCode, Message
    from lineup.hostbridge.messages import RuntimeStateEvent
    from lineup.supervisor import ChildSpec, Supervisor

    hostbridge = ChildSpec("hostbridge", ActorKind.HOSTBRIDGE, "lineup.hostbridge:HostbridgeActor")
    supervisor = Supervisor([hostbridge], data_dir=data_dir)
    real = supervisor.bus.tell
    refused: list[str] = []

    async def tell(peer: str, body: Message, *, timeout: float = 5.0) -> ErrorCode | None:
        if isinstance(body, RuntimeStateEvent) and body.state != "restoring" and not refused:
            refused.append(body.state)  # the first tell of the link's phase does not get through
            return ErrorCode.DEADLINE_EXCEEDED
        return await real(peer, body, timeout=timeout)

    monkeypatch.setattr(supervisor.bus, "tell", tell)
    await nursery.start(supervisor.run)

    def told_the_link() -> bool:
        told = supervisor._lifecycle.told
        return told is not None and told[2] is None  # the link's part

    with trio.fail_after(10):
        await supervisor.wait_until(told_the_link)
    assert refused == ["created"]  # this tree has no transport: the link never spoke


@pytest.mark.parametrize("link", [None, *sorted(SUPERVISOR_PHASES), "authenticating", "online"])
def test_the_end_of_the_supervisors_part_is_never_told_as_one_of_its_phases(
    link: str | None,
) -> None:
    """The transport's first state, `restoring`, is also a word of the supervisor's: told as the
    link's when every child was ready, it began the supervisor's part again in the hostbridge,
    and the Shell said Restoring… for good."""
    told = link_state(None if link is None else RuntimeLink(state=link), SUPERVISOR_PHASES)
    assert told not in SUPERVISOR_PHASES
    assert told == (link if link in {"authenticating", "online"} else "created")


async def test_the_links_states_are_taken_in_the_order_the_transport_told_them(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """Two states told a moment apart (`synchronizing`, then `online` once the first sync
    answered) arrive together. Handled as a task each, trio ran them in either order, and the
    status said synchronizing for good: the cause of the status test's 30 s failures under
    load (1 run in 16). Over twenty rounds the old order holds by chance once in a million."""
    supervisor = Supervisor([], data_dir=data_dir)
    await nursery.start(supervisor.bus.run)
    transport = Bus(Identity(ActorKind.TRANSPORT, "transport"), lambda env: None)
    await nursery.start(transport.run)
    ours, theirs = channel_pair()
    supervisor.bus.connect(transport.me, 1, Channel(ours))
    transport.connect(supervisor.bus.me, 0, Channel(theirs))

    for states in [("synchronizing", "online"), ("online", "reconnecting")] * 10:
        for state in states:
            assert await transport.tell("supervisor", RuntimeLinkEvent(state=state)) is None
        await trio.testing.wait_all_tasks_blocked()
        assert supervisor._lifecycle.runtime == RuntimeLink(state=states[-1])
