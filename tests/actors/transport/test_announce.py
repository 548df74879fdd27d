"""The transport tells each peer of the link's state on its own: a hostbridge that is not up
yet (a tell to it waits for its channel) never holds up what the supervisor is told, which the
tree's `ready` waits for. The bus is a fake; the announce loops are the transport's own."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import trio

from lineup.actors.kernel import ErrorCode, Message
from lineup.actors.kernel.control import RuntimeLinkEvent
from lineup.actors.transport._actor import ANNOUNCED_TO, TransportActor
from lineup.actors.transport.messages import RuntimeStateRequest
from lineup.facts.link import LinkEvent
from lineup.hostbridge.messages import RuntimeStateEvent


class Bus:
    """The supervisor takes every tell at once; the hostbridge's tells wait out their timeout
    until `hostbridge_up` is set (its channel is not there yet), then are taken."""

    def __init__(self) -> None:
        self.told: list[tuple[str, str]] = []
        self.hostbridge_up = trio.Event()
        self.changed = trio.Event()

    async def tell(self, peer: str, body: Message, *, timeout: float) -> ErrorCode | None:
        if peer == "hostbridge":
            with trio.move_on_after(timeout):
                await self.hostbridge_up.wait()
            if not self.hostbridge_up.is_set():
                return ErrorCode.DEADLINE_EXCEEDED
        assert isinstance(body, RuntimeLinkEvent if peer == "supervisor" else RuntimeStateEvent)
        state = body.state
        self.told.append((peer, state))
        self.changed.set()
        self.changed = trio.Event()
        return None

    async def until(self, peer: str, state: str) -> None:
        while (peer, state) not in self.told:
            await self.changed.wait()


def transport(bus: Bus) -> TransportActor:
    # Only `bus` and `config` of its context are read by the announce loops.
    return TransportActor(SimpleNamespace(bus=bus, config={}))


async def test_the_supervisor_hears_the_link_online_while_the_hostbridge_is_not_up(
    autojump_clock: trio.abc.Clock,
) -> None:
    bus = Bus()
    actor = transport(bus)
    async with trio.open_nursery() as nursery:
        for peer in ANNOUNCED_TO:
            nursery.start_soon(actor._announce_loop, peer)
        actor._move("restore")
        actor._move("log_in")
        actor._move("synced")
        with trio.fail_after(0.5):  # well before one hostbridge tell has timed out (2 s)
            await bus.until("supervisor", "online")
        assert not [s for p, s in bus.told if p == "hostbridge"]
        bus.hostbridge_up.set()
        with trio.fail_after(5):
            await bus.until("hostbridge", "online")
        nursery.cancel_scope.cancel()
    # Each peer heard the states in the order they came (the latest only, when it was late),
    # and the last it heard is the one the link is in.
    order = ["restoring", "authenticating", "online"]
    for peer in ANNOUNCED_TO:
        states = [s for p, s in bus.told if p == peer]
        assert states[-1] == "online"
        assert [order.index(s) for s in states] == sorted({order.index(s) for s in states})


def test_news_the_link_has_overtaken_keeps_its_state_and_tells_no_one() -> None:
    actor = transport(Bus())
    actor._move("synced")  # before any login: the table has no such move
    assert (actor.state, actor.reason) == ("created", None)
    changed = actor._state_changed
    actor._move("restore")
    assert actor.state == "restoring" and changed.is_set()


def test_each_state_is_stamped_when_it_is_entered_and_the_reply_says_the_same() -> None:
    """The hostbridge keeps the later-entered of a tell and a reply that crossed
    (tests/hostbridge/test_actor.py): every move stamps the state anew, a kept one does not."""
    actor = transport(Bus())
    stamps = [actor.since_ns]
    events: list[LinkEvent] = ["restore", "log_in", "logged_in", "synced"]
    for event in events:
        actor._move(event)
        stamps.append(actor.since_ns)
    assert stamps == sorted(stamps) and stamps[-1] > stamps[0]
    actor._move("synced")  # online already: kept, not entered again
    assert actor.since_ns == stamps[-1]
    reply = actor.on_state(*_request())
    assert (reply.state, reply.since_ns) == ("online", stamps[-1])


def _request() -> tuple[RuntimeStateRequest, Any]:
    return RuntimeStateRequest(), SimpleNamespace()
