"""An in-process store: the real StoreActor on its own Bus, reached from router, focus and
transport Buses over real socket pairs, exactly as the supervisor would wire them (minus the
processes)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any, TypeVar

import apsw
import pytest
import trio

from lineup.actors.kernel import (
    ActorContext,
    ActorKind,
    Bus,
    Channel,
    Envelope,
    ErrorCode,
    Identity,
    LineUpError,
    Message,
    Outcome,
    channel_pair,
    message_allowed,
)
from lineup.actors.store import StoreActor
from lineup.actors.store._db import Connection, migrate
from lineup.actors.store.instances.operations import instance_put
from lineup.actors.store.messages import InstanceUpsertReply, InstanceUpsertRequest

WAIT = 5.0  # seconds any single wait may take before the test counts it as a hang

M = TypeVar("M", bound=Message)


@dataclass
class StoreHarness:
    router: Bus
    actor: StoreActor
    data_dir: Path
    # One peer per store-area owner (`router` is one of them): `ask` sends each request from a
    # kind the production ACL grants it to.
    peers: dict[ActorKind, Bus]

    @property
    def db_path(self) -> Path:
        return self.data_dir / "lineup.db"

    async def ask(self, request: Message, expect: type[M]) -> M:
        allowed = [
            b for k, b in self.peers.items() if message_allowed(k, ActorKind.STORE, request.TYPE)
        ]
        with trio.fail_after(WAIT):
            return await (allowed or [self.router])[0].request("store", request, expect=expect)

    async def put_live_instances(self, app_scope: str, *instance_ids: str) -> None:
        """`put_live_instances`, through the store as focus does it."""
        for instance_id in instance_ids:
            await self.ask(_live(app_scope, instance_id), InstanceUpsertReply)

    async def end_instance(self, app_scope: str, instance_id: str) -> None:
        """Record a live instance's end (`stopped`), as focus does before it tells the router."""
        live = _live(app_scope, instance_id)
        for state in ("stopping", "stopped"):
            await self.ask(live.model_copy(update={"state": state}), InstanceUpsertReply)


StartStore = Callable[..., Awaitable[StoreHarness]]
T = TypeVar("T")


async def refusal(store: StoreHarness, request: Message) -> ErrorCode:
    """The code the store refuses `request` with (the test fails if it is accepted)."""
    with pytest.raises(LineUpError) as caught:
        await store.ask(request, Message)
    return caught.value.code


@cache
def _migrated_image() -> bytes:
    """A freshly migrated database, serialized: made once per process."""
    source = apsw.Connection(":memory:")
    try:
        migrate(source)
        return source.serialize("main")
    finally:
        source.close()


def memory_database() -> Connection:
    """A migrated in-memory database, for running operations synchronously (property tests).

    Each is a copy of one image, migrated once per process: migrating is ~22 ms of DDL, a copy
    ~0.07 ms, and a property test takes a fresh database for each of its hundreds of examples."""
    conn = apsw.Connection(":memory:")
    conn.deserialize("main", _migrated_image())
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def put_live_instances(conn: Connection, app_scope: str, *instance_ids: str) -> None:
    """Record each instance live (`foreground`), as focus does before it gives one a call: the
    store binds a call only to an instance whose end is not recorded."""
    for instance_id in instance_ids:
        in_savepoint(conn, partial(instance_put, req=_live(app_scope, instance_id), now=0.0))


def _live(app_scope: str, instance_id: str) -> InstanceUpsertRequest:
    return InstanceUpsertRequest(
        instance_id=instance_id, app_scope=app_scope, state="foreground",
        app_session_id=f"session-{instance_id}",
    )  # fmt: skip


def in_savepoint(conn: Connection, op: Callable[[Connection], T]) -> T:
    """Run `op` as the committer does: in a savepoint that is undone if it raises."""
    conn.execute("SAVEPOINT op")
    try:
        return op(conn)
    except BaseException:
        conn.execute("ROLLBACK TO op")
        raise
    finally:
        conn.execute("RELEASE op")


def independent_rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    """Read through a second connection of our own: it sees committed data only."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


async def _nothing(env: Envelope) -> Message | None:
    return None


async def router_peer(
    nursery: trio.Nursery,
    store: StoreHarness,
    identity: Identity,
    handler: Callable[[Envelope], Awaitable[Message | None]],
) -> Bus:
    """A scripted peer of the router (focus, an app): a bus as `identity` whose requests
    `handler` answers, connected to the harness's router bus both ways."""
    bus = Bus(identity, handler)
    await nursery.start(bus.run)
    to_peer, to_router = channel_pair()
    store.router.connect(bus.me, 0, Channel(to_peer))
    bus.connect(store.router.me, 0, Channel(to_router))
    return bus


async def start_store(
    nursery: trio.Nursery, data_dir: Path, config: dict[str, Any] | None = None
) -> StoreHarness:
    """Start a store and a router bus connected to it, as children of `nursery`."""
    actor: StoreActor | None = None

    def dispatch(env: Envelope) -> Outcome:  # as actor_main does: sync handlers answer inline
        assert actor is not None
        return actor.dispatch(env)

    store_bus = Bus(Identity(ActorKind.STORE, "store"), dispatch)
    actor = StoreActor(ActorContext(store_bus.me, 0, data_dir, config or {}, store_bus))
    store_bus.audit_locally = actor.write_audit  # as actor_main does
    await nursery.start(store_bus.run)
    peers: dict[ActorKind, Bus] = {}
    for kind in (ActorKind.ROUTER, ActorKind.FOCUS, ActorKind.TRANSPORT, ActorKind.GATEWAY):
        peer = peers[kind] = Bus(Identity(kind, kind.value), _nothing)
        await nursery.start(peer.run)
        to_store, to_peer = channel_pair()
        peer.connect(store_bus.me, 0, Channel(to_store))
        store_bus.connect(peer.me, 0, Channel(to_peer))
    with trio.fail_after(WAIT):
        await nursery.start(actor.run)
    return StoreHarness(peers[ActorKind.ROUTER], actor, data_dir, peers)
