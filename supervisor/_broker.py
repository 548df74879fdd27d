"""The bus's broker (DESIGN §2, Mojo's model): a peer asks to be introduced to another; the
broker checks the ACL table, waits until that peer is up, and hands each side one end of a new
socketpair with the other side's identity. Frames then go directly, never through the
supervisor. `attach` lets a test or a benchmark join the tree as a peer of any kind, through
exactly the same channels and checks a child gets.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

import trio

from lineup.actors.kernel import (
    ActorKind,
    AuditRecord,
    Bus,
    Channel,
    Envelope,
    ErrorCode,
    Handler,
    HealthReply,
    HealthRequest,
    Identity,
    LineUpError,
    Outcome,
    channel_allowed,
    channel_pair,
)
from lineup.actors.kernel.control import ChannelOpenedEvent, IntroduceReply

from ._peers import Changes, Child, Peer

__all__ = ["INTRODUCE_WAIT", "Broker", "Introductions"]

INTRODUCE_WAIT: Final = 10.0  # how long an introduction waits for the peer to become ready


class Introductions:
    """The pairs of incarnations introduced to each other, each once: a child's are forgotten
    when it exits, an attached peer's when it leaves."""

    def __init__(self) -> None:
        self._made: set[tuple[str, int, str, int]] = set()

    def __contains__(self, key: tuple[str, int, str, int]) -> bool:
        return key in self._made

    def add(self, key: tuple[str, int, str, int]) -> None:
        self._made.add(key)

    def forget(self, name: str, incarnation: int) -> None:
        self._made = {
            k
            for k in self._made
            if (k[0], k[1]) != (name, incarnation) and (k[2], k[3]) != (name, incarnation)
        }


class Broker:
    """Introduces the tree's peers to each other (see the module's docstring)."""

    def __init__(self, bus: Bus, children: Mapping[str, Child], changes: Changes) -> None:
        self.bus = bus
        self._children = children
        self._changes = changes
        self._attached: dict[str, Peer] = {}
        self.introductions = Introductions()

    def peer(self, name: str) -> Peer | None:
        peer = self._children.get(name) or self._attached.get(name)
        conn = self.bus.connection(name) if peer is None else None
        if conn is not None and conn.identity.kind is ActorKind.CLI:
            peer = Peer(conn.identity, conn.incarnation)  # a `lineup` command, while connected
            peer.ready.set()
        return peer

    async def introduce(self, asker: Identity, name: str) -> IntroduceReply:
        me = self.peer(asker.name)
        target = self.peer(name)
        if me is None or target is None or name == asker.name:
            raise LineUpError(ErrorCode.ACTOR_UNAVAILABLE, name)
        if not channel_allowed(asker.kind, target.identity.kind):
            self.bus.audit(
                AuditRecord(
                    event="supervisor.introduce_denied",
                    actor="supervisor",
                    peer=asker.name,
                    code=ErrorCode.ACL_DENIED.value,
                    subject_id=name,
                )
            )
            raise LineUpError(ErrorCode.ACL_DENIED, name)
        with trio.move_on_after(INTRODUCE_WAIT):
            await self._changes.wait_until(target.is_up)  # e.g. while it restarts
        if not target.is_up():
            raise LineUpError(ErrorCode.ACTOR_UNAVAILABLE, name)
        a, b = sorted(((asker.name, me.incarnation), (name, target.incarnation)))
        key = (a[0], a[1], b[0], b[1])
        # A command asks once, on a connection of its own: nothing to remember of it.
        once = asker.kind is ActorKind.CLI
        if once or key not in self.introductions:
            ours, theirs = channel_pair()
            try:
                # Either side may die meanwhile: the asker then retries, as after any restart.
                await self.bus.notify(
                    name,
                    ChannelOpenedEvent(
                        peer=asker.name, kind=asker.kind.value, incarnation=me.incarnation
                    ),
                    fds=(theirs.fileno(),),
                )
                await self.bus.notify(
                    asker.name,
                    ChannelOpenedEvent(
                        peer=name, kind=target.identity.kind.value, incarnation=target.incarnation
                    ),
                    fds=(ours.fileno(),),
                )
            except LineUpError as exc:
                raise LineUpError(ErrorCode.ACTOR_RESTARTED, name) from exc
            finally:
                ours.close()
                theirs.close()
            if not once:
                self.introductions.add(key)
        return IntroduceReply(peer=name, incarnation=target.incarnation)

    async def attach(
        self,
        identity: Identity,
        handler: Handler | None = None,
        *,
        task_status: trio.TaskStatus[Bus] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Join the tree as a peer of `identity.kind` (tests, benchmarks, in-process tools).

        `await nursery.start(sup.attach, identity)` returns a running `Bus`; the peer is subject
        to the same ACL as a child of that kind. It leaves the tree when the task is cancelled.
        """
        if self.peer(identity.name) is not None:
            raise ValueError(f"{identity.name} is already in the tree")
        peer = Peer(identity, incarnation=1)

        def answer(env: Envelope) -> Outcome:
            if isinstance(env.body, HealthRequest):
                return HealthReply(name=identity.name, pid=os.getpid(), incarnation=1, uptime_s=0.0)
            if handler is not None:
                return handler(env)
            raise LineUpError(ErrorCode.NO_HANDLER, env.body.TYPE)

        bus = Bus(identity, answer, incarnation=1)
        ours, theirs = channel_pair()
        self._attached[identity.name] = peer
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(bus.run)
                self.bus.connect(identity, 1, Channel(ours))
                bus.connect(
                    Identity(ActorKind.SUPERVISOR, "supervisor"),
                    0,
                    Channel(theirs, carries_fds=True),
                )
                peer.ready.set()
                task_status.started(bus)
                await trio.sleep_forever()
        finally:
            del self._attached[identity.name]
            self.bus.disconnect(identity.name)
            self.introductions.forget(identity.name, 1)
