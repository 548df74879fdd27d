"""The gateway actor's own life: what it does once it is shutting down."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import trio
from trio.testing import wait_all_tasks_blocked

from lineup.actors.gateway import GatewayActor
from lineup.actors.kernel import ActorContext, ActorKind, Bus, Identity, Message
from lineup.actors.store.messages import CapabilityRequestListReply


class StoreOnly:
    """The bus as the gateway's start uses it: the store has no capability request kept."""

    async def request(self, peer: str, body: Message, **_: object) -> Message:
        return CapabilityRequestListReply(rows=())

    async def tell(self, peer: str, body: Message, **_: object) -> None:
        return None  # the hostbridge hears the gateway started


async def test_a_fast_path_tell_after_shutdown_began_is_dropped_not_raised(tmp_path: Path) -> None:
    bus = cast(Bus, StoreOnly())
    ctx = ActorContext(Identity(ActorKind.GATEWAY, "gateway"), 1, tmp_path, {}, bus)
    gateway = GatewayActor(ctx)
    ran: list[str] = []

    async def tell() -> None:
        ran.append("told")

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await nursery.start(gateway.run)
            gateway._soon(tell)  # while it runs: the tell runs
            await wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    # A request answered during shutdown ends its prompt after the actor's nursery closed.
    gateway._soon(tell)
    assert ran == ["told"]
