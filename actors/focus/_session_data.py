"""Instances' session data (seed 004 §4.4): its one write path, and who is told of a write.

Theory of operation
-------------------
A session is named after its instance (`(app_scope, instance_id)`); the store keeps its data
and revision, this object only the locks and the subscribers. Every read-then-register and
every write of one session runs under that session's lock, so what a subscriber is told
arrives strictly in revision order, and a write lands either in a new subscriber's snapshot or
in the next event it is told, never between the two.

There is one write path (`write`), whoever writes: the app (`focus.sdk.session_data.replace`)
or its open Surface (`focus.ui.surface.session_data`, through `_surface_service`). After a
write that changed the data, every subscriber hears the new revision: the app's channels
(`miniapp.session_data.updated`) and the hostbridges watching the instance's open Surface
(`hostbridge.session_data.updated`). A subscriber that cannot be told is dropped.

An instance that ends takes its subscribers and its lock with it (`forget`); its data stays
for the record, but nobody reads or writes it any more.
"""

from __future__ import annotations

from typing import Any

import trio

from lineup.actors.kernel import Envelope
from lineup.actors.store.messages import (
    SessionDataGetReply,
    SessionDataGetRequest,
    SessionDataReplaceReply,
    SessionDataReplaceRequest,
)
from lineup.hostbridge.messages import SessionDataUpdatedEvent
from lineup.sdk import protocol as sdk

from ._access import Access, SessionKey
from ._port import NOTIFY_TIMEOUT, Port
from ._surfaces import SurfaceBook

__all__ = ["SessionData", "SessionKey"]


class SessionData:
    """The session data of focus's instances (see the module's docstring); `access` says
    whose session a request may touch (`Access.session_of`)."""

    def __init__(self, port: Port, access: Access, surfaces: SurfaceBook) -> None:
        self.bus = port.bus
        self._port = port
        self._surfaces = surfaces
        self._session_of = access.session_of
        self._locks: dict[SessionKey, trio.Lock] = {}
        self._subscribers: dict[SessionKey, set[str]] = {}  # the apps' channels
        self._watchers: dict[SessionKey, set[str]] = {}  # the hostbridges of an open Surface

    def lock(self, key: SessionKey) -> trio.Lock:
        return self._locks.setdefault(key, trio.Lock())

    # ------------------------------------------------------------------ the app's requests

    async def get(self, msg: sdk.SessionDataGetRequest, env: Envelope) -> sdk.SessionDataSnapshot:
        reply = await self.read(self._session_of(env, msg.instance_id))
        return sdk.SessionDataSnapshot(
            instance_id=msg.instance_id, data=reply.data, revision=reply.revision
        )

    async def subscribe(
        self, msg: sdk.SessionDataSubscribeRequest, env: Envelope
    ) -> sdk.SessionDataSnapshot:
        key = self._session_of(env, msg.instance_id)
        # Registered under the session's lock: a write either lands in this snapshot or
        # arrives as the next event, never lost between the two.
        async with self.lock(key):
            self._session_of(env, msg.instance_id)  # it may have ended while this waited
            reply = await self.read(key)
            self._subscribers.setdefault(key, set()).add(env.sender.name)
        return sdk.SessionDataSnapshot(
            instance_id=msg.instance_id, data=reply.data, revision=reply.revision
        )

    async def replace(
        self, msg: sdk.SessionDataReplaceRequest, env: Envelope
    ) -> sdk.CommandReceipt:
        key = self._session_of(env, msg.instance_id)
        async with self.lock(key):
            self._session_of(env, msg.instance_id)  # it may have ended while this waited
            reply = await self.write(key, msg.data, msg.expected_revision)
        return sdk.CommandReceipt(id=msg.instance_id, seq=reply.revision, changed=reply.changed)

    # ------------------------------------------------------------------ the shared path

    async def read(self, key: SessionKey) -> SessionDataGetReply:
        return await self._port.store(
            SessionDataGetRequest(app_scope=key[0], app_session_id=key[1]), SessionDataGetReply
        )

    async def write(
        self, key: SessionKey, data: dict[str, Any], expected_revision: int
    ) -> SessionDataReplaceReply:
        """Write a session's data (the caller holds its lock) and tell every subscriber of a
        newer revision: the apps (`miniapp.session_data.updated`) and the hostbridges of its
        open Surface (`hostbridge.session_data.updated`), whichever writer wrote. Raises
        `stale_revision` after a newer write."""
        scope, instance_id = key
        reply = await self._port.store(
            SessionDataReplaceRequest(
                app_scope=scope,
                app_session_id=instance_id,
                data=data,
                expected_revision=expected_revision,
            ),
            SessionDataReplaceReply,
        )
        if not reply.changed:
            return reply
        event = sdk.SessionDataEvent(instance_id=instance_id, data=data, revision=reply.revision)
        for subscriber in sorted(self._subscribers.get(key, ())):
            # In order, under the lock: revisions arrive strictly increasing.
            if await self.bus.tell(subscriber, event, timeout=NOTIFY_TIMEOUT):
                self._subscribers.get(key, set()).discard(subscriber)
        surface = self._surfaces.of(instance_id)
        if surface is not None:
            updated = SessionDataUpdatedEvent(
                instance_id=instance_id,
                surface_id=surface.surface_id,
                data=data,
                revision=reply.revision,
            )
            for watcher in sorted(self._watchers.get(key, ())):
                if await self.bus.tell(watcher, updated, timeout=NOTIFY_TIMEOUT):
                    self._watchers.get(key, set()).discard(watcher)
        return reply

    def watch(self, key: SessionKey, hostbridge: str) -> None:
        """Tell `hostbridge` of the session's writes while its Surface is open (the caller
        holds the session's lock, so a write lands in its snapshot or comes next)."""
        self._watchers.setdefault(key, set()).add(hostbridge)

    def unwatch(self, key: SessionKey) -> None:
        """The instance's Surface closed: its hostbridges are told no more."""
        self._watchers.pop(key, None)

    def forget(self, key: SessionKey) -> None:
        """The instance ended: nobody is told of its session any more."""
        self._subscribers.pop(key, None)
        self._watchers.pop(key, None)
        self._locks.pop(key, None)
